package diskfs

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// Hidden is the set of host directories that the trees made with it never
// show: a daemon's state directory and the private part of it, which
// hold its key and the tokens it issued. A directory is known by its
// device and inode number, not by a path, so no bind of a parent, second
// bind, symlink or rename reaches it under another name (see Add).
// The zero value hides nothing.
type Hidden struct {
	dirs []hiddenDir
}

// hiddenDir is one hidden directory, held open so that its identity and
// its files can be checked for as long as the daemon runs.
type hiddenDir struct {
	fd       int // O_PATH
	dev, ino uint64
	// sealed says no tree may be served from inside it either.
	sealed bool
}

// Add hides the directory dir, which must exist. In every tree made with
// h, dir is left out of listings, a lookup of it fails with ENOENT, a
// directory holding it cannot be renamed (EACCES: the daemon would lose
// its state), and a file of dir that has a second name (a hard link) is
// not there under that name either: not listed, not found (ENOENT), so
// that listing and lookup agree and the name shows nothing of the file.
// A tree cannot be rooted at dir, nor, when sealed, anywhere inside it.
func (h *Hidden) Add(dir string, sealed bool) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return vfs.Error("open", dir, errno(err))
	}
	var st unix.Statx_t
	if err := fstatx(fd, &st); err != nil {
		unix.Close(fd)
		return vfs.Error("stat", dir, errno(err))
	}
	id := idOf(&st)
	h.dirs = append(h.dirs, hiddenDir{fd: fd, dev: id.dev, ino: id.ino, sealed: sealed})
	return nil
}

// dirID reports whether (dev, ino) is a hidden directory's.
func (h *Hidden) dirID(dev, ino uint64) bool {
	for _, d := range h.list() {
		if d.dev == dev && d.ino == ino {
			return true
		}
	}
	return false
}

// list returns the hidden directories; nil-safe.
func (h *Hidden) list() []hiddenDir {
	if h == nil {
		return nil
	}
	return h.dirs
}

// hides reports whether st, an entry reached through a tree, is hidden:
// a hidden directory, or a second name of a file in one. Files with one
// name are not looked at: only a hard link can make a hidden file appear
// elsewhere.
func (h *Hidden) hides(st *unix.Statx_t) bool {
	id := idOf(st)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return h.dirID(id.dev, id.ino)
	}
	if st.Nlink < 2 {
		return false
	}
	for _, d := range h.list() {
		if d.holdsFile(id) {
			return true
		}
	}
	return false
}

// holdsFile reports whether the directory has an entry that is the file
// id. Only its own entries are looked at, not its subdirectories': each
// of those is either hidden itself (Add; the private part is flat) or a
// tree the daemon serves on purpose (the state directory's home and
// workspaces), whose files may well have other names.
func (d hiddenDir) holdsFile(id fileID) bool {
	found := false
	d.each(func(fd int, e vfs.DirEntry) bool {
		var st unix.Statx_t
		found = e.Ino == id.ino && statx(fd, e.Name, &st) == nil && idOf(&st).dev == id.dev
		return !found
	})
	return found
}

// each calls f with the directory's entries, while f returns true.
func (d hiddenDir) each(f func(fd int, e vfs.DirEntry) bool) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for _, e := range parseDirents(buf[:n]) {
			if !f(fd, e) {
				return
			}
		}
	}
}

// checkRoot refuses to serve a tree rooted at a hidden directory, or
// inside a sealed one.
func (h *Hidden) checkRoot(dir string, fd int) error {
	up := ancestors(fd)
	if len(up) == 0 {
		return vfs.Error("open", dir, syscall.EIO)
	}
	for _, d := range h.list() {
		for i, id := range up {
			if d.is(id) && (i == 0 || d.sealed) {
				return &fs.PathError{Op: "open", Path: dir, Err: ErrHidden}
			}
		}
	}
	return nil
}

// holdsHidden reports whether a hidden directory lies at or beneath the
// directory fd: such a tree is never handed to the kernel, which would
// serve the hidden directory too.
func (h *Hidden) holdsHidden(fd int) bool {
	var st unix.Statx_t
	if fstatx(fd, &st) != nil {
		return true
	}
	return h.aboveHidden(idOf(&st))
}

// aboveHidden reports whether the directory id is a hidden directory or
// one of their ancestors.
func (h *Hidden) aboveHidden(id fileID) bool {
	for _, d := range h.list() {
		for _, a := range ancestors(d.fd) {
			if a.dev == id.dev && a.ino == id.ino {
				return true
			}
		}
	}
	return false
}

// is reports whether id is the hidden directory.
func (d hiddenDir) is(id fileID) bool { return id.dev == d.dev && id.ino == d.ino }

// maxDepth bounds a walk up the host's directories.
const maxDepth = 4096

// ancestors lists the directory fd and every directory above it, up to
// the root of the host (whose ".." is itself), by identity.
func ancestors(fd int) []fileID {
	var out []fileID
	cur, err := unix.Openat(fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	for range maxDepth {
		var st unix.Statx_t
		if fstatx(cur, &st) != nil {
			break
		}
		id := fileID{dev: idOf(&st).dev, ino: st.Ino}
		if len(out) > 0 && out[len(out)-1] == id {
			break
		}
		out = append(out, id)
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return out
		}
		cur = up
	}
	unix.Close(cur)
	return out
}

// guardName fails for a hidden name of dirfd (ENOENT, as a lookup does)
// and for a directory holding a hidden one (EACCES), for the calls that
// act on a name without a lookup first (rename, remove).
func (h *Hidden) guardName(op string, dirfd int, name string) error {
	if len(h.list()) == 0 {
		return nil
	}
	var st unix.Statx_t
	if statx(dirfd, name, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return h.guardID(op, name, idOf(&st))
}

// guardID is guardName for the directory id.
func (h *Hidden) guardID(op, name string, id fileID) error {
	switch {
	case h.dirID(id.dev, id.ino):
		return vfs.Error(op, name, syscall.ENOENT)
	case h.aboveHidden(id):
		return vfs.Error(op, name, syscall.EACCES)
	}
	return nil
}

// listed drops the hidden directories, and other names of the hidden
// files, from a batch of entries of the directory fd. Only entries whose
// inode number is a hidden directory's or a hidden file's cost a stat.
func (h *Hidden) listed(fd int, entries []vfs.DirEntry) []vfs.DirEntry {
	if len(h.list()) == 0 {
		return entries
	}
	files := h.fileInos()
	out := entries[:0]
	for _, e := range entries {
		if h.inoHidden(e.Ino) || files[e.Ino] {
			var st unix.Statx_t
			if statx(fd, e.Name, &st) != nil || h.hides(&st) {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// inoHidden reports whether ino is some hidden directory's inode number.
func (h *Hidden) inoHidden(ino uint64) bool {
	for _, d := range h.dirs {
		if d.ino == ino {
			return true
		}
	}
	return false
}

// fileInos are the inode numbers of the files the hidden directories
// hold (their own entries, as holdsFile looks at), read again for each
// batch of a listing since the daemon replaces its files as it writes
// them: a handful of entries.
func (h *Hidden) fileInos() map[uint64]bool {
	out := map[uint64]bool{}
	for _, d := range h.list() {
		d.each(func(_ int, e vfs.DirEntry) bool {
			if e.Type != syscall.S_IFDIR {
				out[e.Ino] = true
			}
			return true
		})
	}
	return out
}

// lookedUp fails for an entry a lookup must not return: a hidden
// directory, or a second name of a hidden file, is not there (ENOENT),
// as listings leave them out.
func (h *Hidden) lookedUp(st *unix.Statx_t) error {
	if len(h.list()) == 0 || !h.hides(st) {
		return nil
	}
	return syscall.ENOENT
}

// hidesInfo reports whether fi, as os.Lstat found it, is hidden (see
// hides), for the portable tree.
func (h *Hidden) hidesInfo(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || len(h.list()) == 0 {
		return false
	}
	return h.hides(&unix.Statx_t{Mode: uint16(st.Mode), Nlink: uint32(st.Nlink), Ino: st.Ino,
		Dev_major: unix.Major(st.Dev), Dev_minor: unix.Minor(st.Dev)})
}

// guardInfo is guardName for the portable tree, fi being what os.Lstat
// found at name.
func (h *Hidden) guardInfo(op, name string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() || len(h.list()) == 0 {
		return nil
	}
	return h.guardID(op, name, fileID{dev: st.Dev, ino: st.Ino})
}

// checkDir is checkRoot for the portable tree, which has no descriptor.
func (h *Hidden) checkDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return vfs.Error("open", dir, errno(err))
	}
	defer unix.Close(fd)
	return h.checkRoot(dir, fd)
}
