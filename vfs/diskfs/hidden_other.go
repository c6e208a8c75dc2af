//go:build !linux

package diskfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// Hidden is the set of host directories that the trees made with it never
// show (see the Linux version). Off Linux a directory is known by
// os.SameFile, its device and inode number.
type Hidden struct {
	dirs   []fs.FileInfo
	sealed []bool
}

// Add hides the directory dir, which must exist; sealed forbids trees
// inside it.
func (h *Hidden) Add(dir string, sealed bool) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return vfs.Error("stat", dir, vfs.Errno(err))
	}
	h.dirs, h.sealed = append(h.dirs, fi), append(h.sealed, sealed)
	return nil
}

// hidesInfo reports whether fi is a hidden directory.
func (h *Hidden) hidesInfo(fi fs.FileInfo) bool {
	if h == nil || !fi.IsDir() {
		return false
	}
	for _, d := range h.dirs {
		if os.SameFile(d, fi) {
			return true
		}
	}
	return false
}

// checkDir refuses a tree rooted at a hidden directory or inside a
// sealed one, walking up dir's path.
func (h *Hidden) checkDir(dir string) error {
	if h == nil {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return vfs.Error("open", dir, syscall.EINVAL)
	}
	for p, first := abs, true; ; p, first = filepath.Dir(p), false {
		if fi, err := os.Stat(p); err == nil {
			for i, d := range h.dirs {
				if os.SameFile(d, fi) && (first || h.sealed[i]) {
					return &fs.PathError{Op: "open", Path: dir, Err: ErrHidden}
				}
			}
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
