//go:build !linux

package shelld

import (
	"errors"
	"os"
	"os/exec"
)

// mayUnshareMounts: only Linux has mount namespaces; sessions see the
// host's paths, and the tree's reach them through `ctl cwd`.
func mayUnshareMounts() bool { return false }

func unshareMounts(*exec.Cmd) {}

// RunInit returns at once: no session is ever started in a namespace of
// its own here.
func RunInit() {}

// openNoSymlinks is never called here (mayUnshareMounts is false).
func openNoSymlinks(string) (*os.File, error) {
	return nil, errors.New("no mount namespaces here")
}

// detachedTree is never called here (mayUnshareMounts is false).
func detachedTree(dir *os.File) (*os.File, error) {
	dir.Close()
	return nil, errors.New("no mount namespaces here")
}
