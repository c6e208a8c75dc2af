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
// show (see the Linux version, whose rules these are). Off Linux a
// directory is known by os.SameFile, its device and inode number, and
// its path is kept to find its files and its parents by.
type Hidden struct {
	dirs []hiddenDir
}

type hiddenDir struct {
	fi     fs.FileInfo
	path   string // absolute
	sealed bool
}

// Add hides the directory dir, which must exist; sealed forbids trees
// inside it.
func (h *Hidden) Add(dir string, sealed bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return vfs.Error("stat", dir, syscall.EINVAL)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return vfs.Error("stat", dir, vfs.Errno(err))
	}
	h.dirs = append(h.dirs, hiddenDir{fi: fi, path: abs, sealed: sealed})
	return nil
}

// list returns the hidden directories; nil-safe.
func (h *Hidden) list() []hiddenDir {
	if h == nil {
		return nil
	}
	return h.dirs
}

// hidesInfo reports whether fi, as os.Lstat found it, is hidden: a
// hidden directory, or a second name (a hard link) of a file of one.
func (h *Hidden) hidesInfo(fi fs.FileInfo) bool {
	for _, d := range h.list() {
		if fi.IsDir() && os.SameFile(d.fi, fi) || !fi.IsDir() && links(fi) > 1 && d.holdsFile(fi) {
			return true
		}
	}
	return false
}

// holdsFile reports whether the directory has an entry that is fi (its
// own entries only, as on Linux).
func (d hiddenDir) holdsFile(fi fs.FileInfo) bool {
	ents, _ := os.ReadDir(d.path)
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if got, err := e.Info(); err == nil && os.SameFile(got, fi) {
			return true
		}
	}
	return false
}

// links is fi's count of names.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// guardInfo fails for a hidden directory (ENOENT, as a lookup does) and
// for a directory holding one (EACCES), fi being what os.Lstat found at
// name, for the calls that act on a name without a lookup first (rename,
// remove).
func (h *Hidden) guardInfo(op, name string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return nil
	}
	for _, d := range h.list() {
		if os.SameFile(d.fi, fi) {
			return vfs.Error(op, name, syscall.ENOENT)
		}
	}
	for _, d := range h.list() {
		for p := filepath.Dir(d.path); ; p = filepath.Dir(p) {
			if up, err := os.Stat(p); err == nil && os.SameFile(up, fi) {
				return vfs.Error(op, name, syscall.EACCES)
			}
			if filepath.Dir(p) == p {
				break
			}
		}
	}
	return nil
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
			for _, d := range h.dirs {
				if os.SameFile(d.fi, fi) && (first || d.sealed) {
					return &fs.PathError{Op: "open", Path: dir, Err: ErrHidden}
				}
			}
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}
