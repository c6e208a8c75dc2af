package diskfs

import (
	"context"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// do runs fn at the node's location, holding the tree's names steady (see
// FS.names). fn must check that what it reached is the node's own file
// (sameFile) and fail with ESTALE otherwise. A name that vanished or was
// given to another file behind the tree's back (another program renamed,
// removed or replaced it) is dropped and the next name the file is known by
// is tried; with none left, the error goes to the edge. ESTALE makes the
// kernel look the name up afresh.
func (n *node) do(fn func(l loc) error) error {
	n.fs.names.RLock()
	defer n.fs.names.RUnlock()
	return n.doLocked(fn)
}

// doLocked is do for a caller that already holds FS.names.
func (n *node) doLocked(fn func(l loc) error) error {
	for {
		l, err := n.where()
		if err == nil {
			err = fn(l)
			l.done()
		} else if l.name == "" {
			return err
		}
		stale := err == syscall.ENOENT || err == syscall.ESTALE
		if !stale || l.self() || !n.dropStale(l) {
			return err
		}
	}
}

// sameFile fails with ESTALE unless st describes the node's own file.
func (n *node) sameFile(st *unix.Statx_t) error {
	if idOf(st) != n.id {
		return syscall.ESTALE
	}
	return nil
}

// withFd runs fn on a descriptor of the node's own file: an open handle's,
// else an O_PATH descriptor checked to be that file: operations that have no *at form, or that must not act
// on whatever a name points to now, go through it.
func (n *node) withFd(fn func(fd int) error) error {
	if ok, err := n.withOpenFd(fn); ok {
		return err
	}
	return n.do(func(l loc) error { return n.onFd(l, fn) })
}

func (n *node) onFd(l loc, fn func(fd int) error) error {
	if l.self() {
		return fn(l.fd)
	}
	fd, err := unix.Openat(l.fd, l.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Statx_t
	if err := fstatx(fd, &st); err != nil {
		return err
	}
	if err := n.sameFile(&st); err != nil {
		return err
	}
	return fn(fd)
}

// dropStale forgets the name l and reports whether another name is left.
func (n *node) dropStale(l loc) bool {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	before := len(n.links)
	n.links = deleteLink(n.links, link{dir: l.owner, name: l.name})
	return len(n.links) > 0 && len(n.links) < before
}

func (n *node) Attr(context.Context) (vfs.Attr, error) {
	var st unix.Statx_t
	err := n.do(func(l loc) error {
		if err := l.stat(&st); err != nil {
			return err
		}
		return n.sameFile(&st)
	})
	if err != nil {
		return vfs.Attr{}, vfs.Error("stat", "", errno(err))
	}
	a := toAttr(&st)
	a.Watched = n.nameWatched()
	return a, nil
}

// nameWatched says whether changes to the node's entry and attributes,
// and a directory's entries, are reported: the directory holding its
// name is watched, and so is a directory itself.
func (n *node) nameWatched() bool {
	if n.fs.watch.Load() == nil {
		return false
	}
	if n.isDir {
		n.fd.c.mu.Lock()
		up := n.parent.dir
		n.fd.c.mu.Unlock()
		return n.watched.Load() && (up == nil || up.watched.Load())
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	return len(n.links) > 0 && n.links[0].dir.watched.Load()
}

func toAttr(st *unix.Statx_t) vfs.Attr {
	ts := func(t unix.StatxTimestamp) time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }
	return vfs.Attr{
		Ino: st.Ino, Gen: born(st), Mode: uint32(st.Mode), Nlink: st.Nlink,
		Uid: st.Uid, Gid: st.Gid, Rdev: unix.Mkdev(st.Rdev_major, st.Rdev_minor),
		Size: int64(st.Size), Blocks: int64(st.Blocks), Blksize: st.Blksize,
		Atime: ts(st.Atime), Mtime: ts(st.Mtime), Ctime: ts(st.Ctime),
	}
}

func (n *node) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if err := n.withFd(func(fd int) error { return setAttrFd(fd, s) }); err != nil {
		return vfs.Attr{}, vfs.Error("setattr", "", errno(err))
	}
	// An open file answers even if its last name went in between.
	var st unix.Statx_t
	if ok, err := n.withOpenFd(func(fd int) error { return fstatx(fd, &st) }); ok && err == nil {
		a := toAttr(&st)
		a.Watched = n.nameWatched()
		return a, nil
	}
	return n.Attr(ctx)
}

// setAttrFd applies s to the file that fd (O_PATH or open) refers to:
// chown, then chmod (so a chown clearing set-ID bits cannot undo a mode set
// in the same call), then size, then times. Only /proc/self/fd paths of fd
// are used, so no name is resolved and no symlink followed.
func setAttrFd(fd int, s vfs.SetAttr) error {
	if s.Valid&(vfs.SetUid|vfs.SetGid) != 0 {
		uid, gid := s.Owner()
		if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetMode) {
		if err := unix.Chmod(fdPath(fd), s.Mode&0o7777); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetSize) {
		if err := truncateFd(fd, s.Size); err != nil {
			return err
		}
	}
	if ts, ok := utimes(s); ok {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, fdPath(fd), ts, 0); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetClearSetID) {
		return clearSetID(fd)
	}
	return nil
}

// clearSetID drops the set-ID bits a write by an unprivileged caller
// drops (see vfs.SetClearSetID). The daemon, as root, is exempt from the
// kernel doing it on its own writes, so it does it for its callers.
func clearSetID(fd int) error {
	var st unix.Statx_t
	if err := fstatx(fd, &st); err != nil {
		return err
	}
	mode := uint32(st.Mode) & 0o7777
	drop := uint32(unix.S_ISUID)
	if mode&0o010 != 0 {
		drop |= unix.S_ISGID
	}
	if mode&drop == 0 || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil
	}
	return unix.Chmod(fdPath(fd), mode&^drop)
}

// truncateFd truncates through a writable descriptor of the same file,
// since fd may be O_PATH.
func truncateFd(fd int, size int64) error {
	w, err := unix.Open(fdPath(fd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(w)
	return unix.Ftruncate(w, size)
}

// utimes converts the time fields of s to utimensat's form.
func utimes(s vfs.SetAttr) ([]unix.Timespec, bool) {
	pick := func(set, now vfs.SetMask, t time.Time) unix.Timespec {
		switch {
		case s.Has(now):
			return unix.Timespec{Nsec: unix.UTIME_NOW}
		case s.Has(set):
			return unix.NsecToTimespec(t.UnixNano())
		}
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	if s.Valid&(vfs.SetAtime|vfs.SetMtime|vfs.SetAtimeNow|vfs.SetMtimeNow) == 0 {
		return nil, false
	}
	return []unix.Timespec{
		pick(vfs.SetAtime, vfs.SetAtimeNow, s.Atime),
		pick(vfs.SetMtime, vfs.SetMtimeNow, s.Mtime),
	}, true
}

// dirOp checks that n is a directory and name a valid child name.
func (n *node) dirOp(op, name string) error {
	if !n.isDir {
		return vfs.Error(op, name, syscall.ENOTDIR)
	}
	return vfs.CheckName(op, name)
}

func (n *node) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	if err := n.dirOp("lookup", name); err != nil {
		return nil, err
	}
	child, err := n.child(name)
	if err != nil {
		return nil, vfs.Error("lookup", name, errno(err))
	}
	return child, nil
}

// child returns the node of the entry name, which must exist.
func (n *node) child(name string) (*node, error) {
	n.fs.names.RLock()
	defer n.fs.names.RUnlock()
	dirfd, err := n.hold()
	if err != nil {
		return nil, err
	}
	defer n.unhold()
	var st unix.Statx_t
	if err := statx(dirfd, name, &st); err != nil {
		return nil, err
	}
	if err := n.fs.hide.lookedUp(&st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return n.fs.adopt(idOf(&st), false, -1, link{dir: n, name: name}), nil
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := fstatx(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	d := n.fs.adopt(idOf(&st), true, fd, link{dir: n, name: name})
	n.fs.watchDir(d)
	return d, nil
}

func (n *node) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	flags = openFlags(flags)
	if n.isDir {
		if flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0 {
			return nil, vfs.Error("open", "", syscall.EISDIR)
		}
		var fd int
		err := n.inDir(func(self int) (err error) {
			fd, err = unix.Open(fdPath(self), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return nil, vfs.Error("open", "", errno(err))
		}
		return &dirHandle{fd: fd, hide: n.fs.hide}, nil
	}
	var fd int
	err := n.do(func(l loc) (err error) {
		if fd, err = l.open(flags, 0); err != nil {
			return n.replacedBySymlink(l, err)
		}
		var st unix.Statx_t
		if err = fstatx(fd, &st); err == nil {
			err = n.sameFile(&st)
		}
		if err != nil {
			unix.Close(fd)
		}
		return err
	})
	if err != nil {
		return nil, vfs.Error("open", "", errno(err))
	}
	return n.opened(fd), nil
}

// replacedBySymlink turns the ELOOP of an open by name into ESTALE when
// the symlink there is not the node itself: another program put it in
// the file's place, so the kernel must look the name up afresh rather
// than fail. The open of a symlink node stays ELOOP.
func (n *node) replacedBySymlink(l loc, err error) error {
	if err != unix.ELOOP {
		return err
	}
	var st unix.Statx_t
	if l.stat(&st) == nil && n.sameFile(&st) != nil {
		return unix.ESTALE
	}
	return err
}

func (n *node) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if err := n.dirOp("create", name); err != nil {
		return nil, nil, err
	}
	n.fs.names.RLock()
	defer n.fs.names.RUnlock()
	dirfd, err := n.hold()
	if err != nil {
		return nil, nil, vfs.Error("create", name, errno(err))
	}
	defer n.unhold()
	fd, created, err := createAt(dirfd, name, openFlags(flags)|flags&unix.O_EXCL, mode&0o7777)
	if err != nil {
		return nil, nil, vfs.Error("create", name, errno(err))
	}
	var st unix.Statx_t
	if created {
		err = n.giveToCaller(ctx, dirfd, func(uid, gid int, member bool) error {
			return chownKeepingSetID(fd, uid, gid, mode, member)
		})
	}
	if err == nil {
		err = fstatx(fd, &st)
	}
	if err != nil {
		unix.Close(fd)
		return nil, nil, vfs.Error("create", name, errno(err))
	}
	child := n.fs.adopt(idOf(&st), false, -1, link{dir: n, name: name})
	return child, child.opened(fd), nil
}

// CreateTemp makes a file with no name in the directory (O_TMPFILE), given
// to its caller like any created file. The node keeps a descriptor of it
// (its only way to the file), through which Link gives it a name.
func (n *node) CreateTemp(ctx context.Context, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if !n.isDir {
		return nil, nil, vfs.Error("tmpfile", "", syscall.ENOTDIR)
	}
	dirfd, err := n.hold()
	if err != nil {
		return nil, nil, vfs.Error("tmpfile", "", errno(err))
	}
	defer n.unhold()
	fd, err := unix.Openat(dirfd, ".", openFlags(flags)|unix.O_TMPFILE|unix.O_CLOEXEC, mode&0o7777)
	if err != nil {
		return nil, nil, vfs.Error("tmpfile", "", errno(err))
	}
	err = n.giveToCaller(ctx, dirfd, func(uid, gid int, member bool) error {
		return chownKeepingSetID(fd, uid, gid, mode, member)
	})
	var st unix.Statx_t
	if err == nil {
		err = fstatx(fd, &st)
	}
	keep := -1
	if err == nil {
		keep, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	}
	if err != nil {
		unix.Close(fd)
		return nil, nil, vfs.Error("tmpfile", "", errno(err))
	}
	child := n.fs.adoptUnnamed(idOf(&st), keep)
	return child, child.opened(fd), nil
}

// clientFlags are the open(2) flags a client may pass through. The rest
// either change what is opened (O_PATH, O_TMPFILE, O_DIRECTORY), are the
// daemon's own business (O_CLOEXEC, O_NOFOLLOW) or would make the daemon's
// descriptor a controlling terminal.
const clientFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_TRUNC | unix.O_NONBLOCK |
	unix.O_SYNC | unix.O_DSYNC | unix.O_DIRECT | unix.O_NOATIME | unix.O_LARGEFILE

// openFlags keeps the client's flags that open(2) may see, adding O_NOCTTY.
func openFlags(flags int) int {
	return flags&clientFlags | unix.O_NOCTTY
}

// createAt opens name in the directory dirfd as open(2) with O_CREAT
// does, never following a final symlink, and reports whether the call
// made the file: only a file the caller made may be given to the caller.
// An existing file opened with O_CREAT keeps its owner.
func createAt(dirfd int, name string, flags int, mode uint32) (fd int, created bool, err error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	for {
		fd, err = unix.Openat(dirfd, name, flags|unix.O_CREAT|unix.O_EXCL, mode)
		if err != unix.EEXIST || flags&unix.O_EXCL != 0 {
			return fd, err == nil, err
		}
		fd, err = unix.Openat(dirfd, name, flags&^unix.O_CREAT, 0)
		if err == unix.ENOENT {
			continue // removed in between: make it after all
		}
		if err != nil {
			return -1, false, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			// open(2) with O_CREAT refuses a directory, even read-only.
			unix.Close(fd)
			if err == nil {
				err = unix.EISDIR
			}
			return -1, false, err
		}
		return fd, false, nil
	}
}

// The daemon's identity, read once: each os.Geteuid is a system call, and
// every create asks.
var (
	daemonUid = uint32(os.Geteuid())
	daemonGid = uint32(os.Getegid())
)

// giveToCaller makes a file just created by the daemon belong to the
// caller, as if the caller had made it: the caller's uid, and the caller's
// gid unless the directory is set-group-ID (then the kernel already gave
// the directory's group, as ext4 does; gid is -1). member says whether the
// caller is in the file's group, as far as the request tells (its primary
// group). It does nothing when the daemon is not root or the caller is the
// daemon's own identity. dirfd is the directory's held descriptor.
func (n *node) giveToCaller(ctx context.Context, dirfd int, chown func(uid, gid int, member bool) error) error {
	c, ok := vfs.CallerFrom(ctx)
	if !ok || daemonUid != 0 {
		return nil
	}
	if c.Uid == daemonUid && c.Gid == daemonGid {
		return nil
	}
	gid, member := int(c.Gid), true
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err == nil && st.Mode&unix.S_ISGID != 0 {
		gid, member = -1, st.Gid == c.Gid
	}
	return chown(int(c.Uid), gid, member)
}

// chownKeepingSetID gives a regular file just created with mode to its
// caller. A chown by root clears the set-ID bits that the caller's own
// open(O_CREAT, 04755) keeps on ext4, so they are set again: set-user-ID
// always (the caller owns the file), set-group-ID when the caller is in
// the file's group (Linux drops it otherwise, in a set-group-ID
// directory).
func chownKeepingSetID(fd, uid, gid int, mode uint32, member bool) error {
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return err
	}
	setID := mode & (unix.S_ISUID | unix.S_ISGID)
	if !member && mode&unix.S_IXGRP != 0 {
		setID &^= unix.S_ISGID
	}
	if setID == 0 {
		return nil
	}
	return unix.Fchmod(fd, mode&0o777|setID)
}

// make runs mk, which makes the entry name in this directory's held
// descriptor, and returns the new entry's node after giving it to the
// caller.
func (n *node) make(ctx context.Context, op, name string, mk func(dirfd int) error) (vfs.Node, error) {
	if err := n.dirOp(op, name); err != nil {
		return nil, err
	}
	err := n.inDir(func(dirfd int) error {
		if err := mk(dirfd); err != nil {
			return err
		}
		return n.giveToCaller(ctx, dirfd, func(uid, gid int, _ bool) error {
			return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		})
	})
	var child *node
	if err == nil {
		child, err = n.child(name)
	}
	if err != nil {
		return nil, vfs.Error(op, name, errno(err))
	}
	return child, nil
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	return n.make(ctx, "mkdir", name, func(dirfd int) error {
		return unix.Mkdirat(dirfd, name, mode&0o7777)
	})
}

func (n *node) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	return n.make(ctx, "symlink", name, func(dirfd int) error {
		return unix.Symlinkat(target, dirfd, name)
	})
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	return n.make(ctx, "mknod", name, func(dirfd int) error {
		return unix.Mknodat(dirfd, name, mode, int(rdev))
	})
}

func (n *node) Readlink(context.Context) (string, error) {
	var target string
	err := n.withFd(func(fd int) error {
		buf := make([]byte, unix.PathMax)
		k, err := unix.Readlinkat(fd, "", buf)
		if err == unix.ENOENT {
			// readlinkat(fd, "") of a descriptor that is no symlink:
			// not a symlink, as readlink(2) says of a path.
			err = unix.EINVAL
		}
		target = string(buf[:max(k, 0)])
		return err
	})
	if err != nil {
		return "", vfs.Error("readlink", "", errno(err))
	}
	return target, nil
}

func (n *node) StatFS(context.Context) (vfs.StatFS, error) {
	var st unix.Statfs_t
	if err := n.fs.root.inDir(func(fd int) error { return unix.Fstatfs(fd, &st) }); err != nil {
		return vfs.StatFS{}, vfs.Error("statfs", "", errno(err))
	}
	return vfs.StatFS{
		Bsize: uint32(st.Bsize), Frsize: uint32(st.Frsize),
		Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree, NameLen: uint32(st.Namelen),
	}, nil
}

// HostDir reports where the tree's root is on the host now: the path its
// descriptor leads to, which follows the directory if it was renamed.
func (n *node) HostDir() (string, bool) {
	if n != n.fs.root {
		return "", false
	}
	var dir string
	err := n.do(func(l loc) error {
		var err error
		dir, err = os.Readlink(fdPath(l.fd))
		return err
	})
	// A removed root reads "DIR (deleted)": nothing to hand over. A
	// tree holding a hidden directory is never handed to the kernel,
	// which would show it.
	return dir, err == nil && !strings.HasSuffix(dir, " (deleted)") && !n.fs.holdsHidden
}

// OpenHostDir opens the tree's root again from its own descriptor (see
// vfs.HostDirer), under the same rules as HostDir.
func (n *node) OpenHostDir() (*os.File, error) {
	if _, ok := n.HostDir(); !ok {
		return nil, vfs.Error("open", ".", syscall.EINVAL)
	}
	var f *os.File
	err := n.do(func(l loc) error {
		fd, err := unix.Openat(l.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			f = os.NewFile(uintptr(fd), fdPath(fd))
		}
		return err
	})
	if err != nil {
		return nil, vfs.Error("open", ".", errno(err))
	}
	return f, nil
}

// HostPath reports where a directory of the tree is on the host now, so
// that the namespace can decide what a path is on disk whatever its name
// in the tree (refusals). Only directories know it.
func (n *node) HostPath() (string, bool) {
	if !n.isDir {
		return "", false
	}
	var dir string
	err := n.inDir(func(fd int) (err error) {
		dir, err = os.Readlink(fdPath(fd))
		return err
	})
	return dir, err == nil && !strings.HasSuffix(dir, " (deleted)")
}
