//go:build !linux

package fsmodel

import (
	"errors"
	"fmt"
	"runtime"
)

// OpenPath is the checker's file of the operating system, which only
// Linux has here: mmap, copy_file_range and fallocate are Linux's calls.
func OpenPath(path string) func(create bool) (File, error) {
	return func(bool) (File, error) {
		return nil, fmt.Errorf("%w: the checker's files are Linux's (this is %s)", errors.ErrUnsupported, runtime.GOOS)
	}
}
