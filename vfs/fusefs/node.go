//go:build linux

package fusefs

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/vfs"
)

// node is the FUSE inode of one vfs.Node. go-fuse keeps one inode per
// inode number, so hard links and repeated walks share it and the kernel
// sees one coherent file.
type node struct {
	gofs.Inode
	vn  vfs.Node
	srv *server
	// volatile is fixed when the node is first seen: a node's content is
	// generated or stored for its whole life.
	volatile bool
	w        nodeWatch
	writers  writers
	view     view
	resize   resize
	told     atomic.Int64 // the size sized last gave the kernel
}

// The abilities go-fuse looks for. Optional vfs abilities that a node
// lacks come back as ENOTSUP or ENOSYS from the methods below.
var (
	_ gofs.NodeLookuper       = (*node)(nil)
	_ gofs.NodeTmpfiler       = (*node)(nil)
	_ gofs.NodeGetattrer      = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeMknoder        = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeSymlinker      = (*node)(nil)
	_ gofs.NodeLinker         = (*node)(nil)
	_ gofs.NodeReadlinker     = (*node)(nil)
	_ gofs.NodeStatfser       = (*node)(nil)
	_ gofs.NodeFlusher        = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
	_ gofs.NodeGetxattrer     = (*node)(nil)
	_ gofs.NodeSetxattrer     = (*node)(nil)
	_ gofs.NodeListxattrer    = (*node)(nil)
	_ gofs.NodeRemovexattrer  = (*node)(nil)
	_ gofs.NodeOnForgetter    = (*node)(nil)
)

// OnForget passes on that the kernel dropped the inode.
func (n *node) OnForget() {
	n.srv.untrack(n.StableAttr().Ino, n)
	if f, ok := n.vn.(vfs.Forgetter); ok {
		f.Forget()
	}
}

// reqCtx carries the FUSE caller's identity into the vfs call, so backends
// can give new files the caller's ownership. The request's cancellation
// (the kernel's INTERRUPT) is not passed on: the kernel sends one for any
// signal, and Go's runtime signals a Go caller's threads at any moment,
// so a stat, an fsync or a page fault's read of stored content would fail
// with EINTR where a disk never does. Those calls do not truly block:
// they wait for a disk or a link, which the link's own deadlines bound.
// They end when the mount is taken down. What does block keeps the
// request's cancellation (waitCtx).
func (s *server) reqCtx(ctx context.Context) context.Context {
	return waitCtx(uninterrupted{context.WithoutCancel(ctx), s.life})
}

// uninterrupted is a request's context (its values: the caller) that
// ends with the mount's life rather than at the kernel's interrupt.
type uninterrupted struct {
	context.Context // the request's, without its cancellation
	life            context.Context
}

func (u uninterrupted) Deadline() (time.Time, bool) { return u.life.Deadline() }
func (u uninterrupted) Done() <-chan struct{}       { return u.life.Done() }
func (u uninterrupted) Err() error                  { return u.life.Err() }

// waitCtx is reqCtx for a call that truly blocks, until an event that may
// never come: a read of generated content (a session's stream, its wait
// file) or a lock wait. An interrupt ends it with EINTR.
func waitCtx(ctx context.Context) context.Context {
	if caller, ok := fuse.FromContext(ctx); ok {
		return vfs.WithCaller(ctx, vfs.Caller{Uid: caller.Uid, Gid: caller.Gid})
	}
	return ctx
}

// toErrno maps a vfs error to the errno for the kernel, logging the
// unexpected ones (EIO) so that an operator can see why.
func (s *server) toErrno(op string, err error) syscall.Errno {
	errno := vfs.Errno(err)
	if errno == syscall.EIO {
		s.log.Warn("fuse request failed", "op", op, "err", err)
	}
	return errno
}

// fillAttr copies a vfs.Attr into the kernel's form.
func fillAttr(out *fuse.Attr, a vfs.Attr) {
	out.Ino = a.Ino
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Owner = fuse.Owner{Uid: a.Uid, Gid: a.Gid}
	out.Rdev = uint32(a.Rdev)
	out.Size = uint64(max(a.Size, 0))
	out.Blocks = uint64(max(a.Blocks, 0))
	out.Blksize = a.Blksize
	out.SetTimes(&a.Atime, &a.Mtime, &a.Ctime)
}

// cacheTime is how long the kernel may trust what it was told about a
// node: zero for volatile (generated) content, long where the tree
// reports every change (watched, also in the directory it is reached
// through), short elsewhere.
func (s *server) cacheTime(a vfs.Attr, dirWatched bool) time.Duration {
	switch {
	case a.Volatile:
		return 0
	case a.Watched && dirWatched && s.watch.on.Load():
		return s.opts.WatchedCacheTime
	}
	return s.opts.CacheTime
}

// adopt returns the FUSE inode for a child vfs node reached by name ("":
// none), filling out.
func (n *node) adopt(ctx context.Context, name string, child vfs.Node, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	a, err := child.Attr(ctx)
	if err != nil {
		return nil, n.srv.toErrno("getattr", err)
	}
	return n.adoptAttr(ctx, name, child, a, out)
}

// adoptAttr is adopt with the child's attributes already known.
func (n *node) adoptAttr(ctx context.Context, name string, child vfs.Node, a vfs.Attr, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fillAttr(&out.Attr, a)
	out.SetEntryTimeout(n.srv.cacheTime(a, n.w.watched.Load()))
	out.SetAttrTimeout(n.srv.cacheTime(a, true))
	out.Generation = a.Gen
	stable := gofs.StableAttr{Mode: a.Type(), Ino: a.Ino, Gen: a.Gen}
	c := &node{vn: child, srv: n.srv, volatile: a.Volatile}
	c.noteAttr(a, true)
	c.view.set(stateOf(a)) // a new kernel inode takes a's size
	n.srv.track(a.Ino, c)
	if name != "" {
		n.notePresent(name)
	}
	return n.NewInode(ctx, c, stable), 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	// One step where the tree can (a 9P peer walks and stats in one
	// round trip, and READDIRPLUS's lookups of what it just listed cost
	// none).
	child, a, err := vfs.LookupAttr(ctx, n.vn, name)
	if err != nil {
		errno := vfs.Errno(err)
		// The kernel caches a miss (for Options.WatchedCacheTime, see
		// New) only in a watched directory, where the name's coming is
		// reported. Elsewhere names appear without a call through this
		// mount (a /proc session, a command record) and must be found
		// at once: a miss with a timeout set goes back as an error,
		// which the kernel does not remember.
		if errno != syscall.ENOENT || !n.w.watched.Load() || !n.srv.watch.on.Load() || !n.noteAbsent(name, false) {
			out.SetEntryTimeout(time.Nanosecond)
		}
		return nil, errno
	}
	return n.adoptAttr(ctx, name, child, a, out)
}

func (n *node) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx = n.srv.reqCtx(ctx)
	var a vfs.Attr
	var err error
	h, byHandle := handleAttrer(fh)
	if byHandle {
		a, err = h.Attr(ctx)
	} else {
		a, err = n.vn.Attr(ctx)
	}
	if err != nil {
		return n.srv.toErrno("getattr", err)
	}
	n.answerAttr(out, a, byHandle)
	return 0
}

// answerAttr fills out with a, recording what the kernel is told. Attributes
// read through an open handle say nothing of whether the node's name is
// watched; the node's own last word does.
func (n *node) answerAttr(out *fuse.AttrOut, a vfs.Attr, byHandle bool) {
	fillAttr(&out.Attr, a)
	n.noteAttr(a, !byHandle)
	out.SetTimeout(n.srv.cacheTime(a, n.w.watched.Load()))
	n.sized(a)
}

func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	ctx = n.srv.reqCtx(ctx)
	s := toSetAttr(in)
	if own, errno := n.ownResize(ctx, s.Valid&vfs.SetSize != 0, out); own {
		return errno
	}
	var a vfs.Attr
	var err error
	h, byHandle := handleAttrer(fh)
	stat := n.vn.Attr
	if byHandle {
		stat = h.Attr
	}
	sized := func(before int64) int64 {
		if s.Valid&vfs.SetSize != 0 {
			return s.Size
		}
		return before
	}
	n.ownChange(ctx, stat, sized, func() {
		if byHandle {
			a, err = h.SetAttr(ctx, s)
		} else {
			a, err = n.vn.SetAttr(ctx, s)
		}
	})
	if err != nil {
		return n.srv.toErrno("setattr", err)
	}
	if s.Valid&vfs.SetSize != 0 {
		n.view.resized(a.Size) // the kernel takes a truncate's size from the reply
	}
	n.answerAttr(out, a, byHandle)
	return 0
}

// toSetAttr converts the kernel's setattr request.
func toSetAttr(in *fuse.SetAttrIn) vfs.SetAttr {
	var s vfs.SetAttr
	if mode, ok := in.GetMode(); ok {
		s.Valid |= vfs.SetMode
		s.Mode = mode & 0o7777
	}
	if uid, ok := in.GetUID(); ok {
		s.Valid |= vfs.SetUid
		s.Uid = uid
	}
	if gid, ok := in.GetGID(); ok {
		s.Valid |= vfs.SetGid
		s.Gid = gid
	}
	if size, ok := in.GetSize(); ok {
		s.Valid |= vfs.SetSize
		s.Size = int64(size)
	}
	if in.Valid&fuse.FATTR_KILL_SUIDGID != 0 {
		s.Valid |= vfs.SetClearSetID
	}
	if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
		s.Valid |= vfs.SetAtimeNow
	} else if t, ok := in.GetATime(); ok {
		s.Valid |= vfs.SetAtime
		s.Atime = t
	}
	if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
		s.Valid |= vfs.SetMtimeNow
	} else if t, ok := in.GetMTime(); ok {
		s.Valid |= vfs.SetMtime
		s.Mtime = t
	}
	return s
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	user, errno := n.srv.takeOpen(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	var h vfs.Handle
	err := n.srv.withOpenFlags(flags, n.volatile, func(flags int) (err error) {
		h, err = n.vn.Open(ctx, flags)
		return err
	})
	if err != nil {
		n.srv.release(user)
		return nil, 0, n.srv.toErrno("open", err)
	}
	fh, fuseFlags, errno := n.srv.wrapHandle(ctx, h, n.volatile, user)
	fuseFlags |= n.srv.appendFlags(fh, flags, n.volatile)
	// A watched file's pages stay true while it does not change
	// outside, which the open checks (pageguard.go).
	viewFlags, stale := n.opened(ctx, fh, flags)
	if stale != 0 {
		fh.(*fileHandle).Release(ctx) // the kernel gets no handle to release
		return nil, 0, stale
	}
	fuseFlags |= viewFlags
	n.hold(fh, flags&syscall.O_ACCMODE != syscall.O_RDONLY)
	fuseFlags = n.srv.lockers.flushFor(n.StableAttr().Ino, flags, n.volatile, fuseFlags)
	if errno == 0 && (flags&syscall.O_TRUNC != 0 || flags&syscall.O_ACCMODE != syscall.O_RDONLY) {
		if errno = fh.(*fileHandle).clearSetID(ctx); errno != 0 {
			fh.(*fileHandle).Release(ctx) // the kernel gets no handle to release
			return nil, 0, errno
		}
	}
	return fh, fuseFlags, errno
}

func (n *node) OpendirHandle(ctx context.Context, _ uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	user, errno := n.srv.takeOpen(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	h, err := n.vn.Open(ctx, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		n.srv.release(user)
		return nil, 0, n.srv.toErrno("opendir", err)
	}
	if _, ok := h.(vfs.DirReader); !ok {
		h.Close()
		n.srv.release(user)
		return nil, 0, syscall.ENOTDIR
	}
	fh, flags, errno := n.srv.wrapHandle(ctx, h, false, user)
	if errno == 0 && n.w.watched.Load() && n.srv.watch.on.Load() {
		// The kernel keeps a watched directory's listing: the mount's
		// own changes to it drop the listing in the kernel, others'
		// through the watch (attrChanged).
		flags |= fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
	}
	return fh, flags, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	user, errno := n.srv.takeOpen(ctx)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	var child vfs.Node
	var h vfs.Handle
	err := n.srv.withOpenFlags(flags, false, func(flags int) (err error) {
		child, h, err = n.vn.Create(ctx, name, flags, n.newMode(ctx, mode))
		return err
	})
	if err != nil {
		n.srv.release(user)
		return nil, nil, 0, n.srv.toErrno("create", err)
	}
	inode, fh, fuseFlags, errno := n.openChild(ctx, user, name, child, h, flags, out)
	if errno == 0 {
		made := inode.Operations().(*node)
		fuseFlags = n.srv.lockers.flushFor(inode.StableAttr().Ino, flags, made.volatile, fuseFlags)
	}
	return inode, fh, fuseFlags, errno
}

// openChild hands a file just made and opened (create, tmpfile) to the
// kernel; if that fails, the handle closes and the user's open is given
// back. The kernel holds nothing of it yet.
func (n *node) openChild(ctx context.Context, user openUser, name string, child vfs.Node, h vfs.Handle, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	inode, errno := n.adopt(ctx, name, child, out)
	if errno != 0 {
		h.Close()
		n.srv.release(user)
		return nil, nil, 0, errno
	}
	made := inode.Operations().(*node)
	fh, fuseFlags, errno := n.srv.wrapHandle(ctx, h, made.volatile, user)
	fuseFlags |= n.srv.appendFlags(fh, flags, made.volatile)
	viewFlags, _ := made.opened(ctx, fh, flags|syscall.O_EXCL) // a new view: no ESTALE
	fuseFlags |= viewFlags
	made.hold(fh, true) // made to be written, whatever the flags
	return inode, fh, fuseFlags, errno
}

// Tmpfile is open(2) with O_TMPFILE: a file with no name in this
// directory, where the tree can make one.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	tc, ok := n.vn.(vfs.TempCreator)
	if !ok {
		return nil, nil, 0, syscall.EOPNOTSUPP
	}
	ctx = n.srv.reqCtx(ctx)
	user, errno := n.srv.takeOpen(ctx)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	child, h, err := tc.CreateTemp(ctx, int(flags), n.newMode(ctx, mode))
	if err != nil {
		n.srv.release(user)
		return nil, nil, 0, n.srv.toErrno("tmpfile", err)
	}
	return n.openChild(ctx, user, "", child, h, flags, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	child, err := n.vn.Mkdir(ctx, name, n.newMode(ctx, mode))
	if err != nil {
		return nil, n.srv.toErrno("mkdir", err)
	}
	return n.adopt(ctx, name, child, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	child, err := vfs.Mknod(ctx, n.vn, name, n.newMode(ctx, mode), uint64(rdev))
	if err != nil {
		return nil, n.srv.toErrno("mknod", err)
	}
	return n.adopt(ctx, name, child, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	child, err := vfs.Symlink(ctx, n.vn, name, target)
	if err != nil {
		return nil, n.srv.toErrno("symlink", err)
	}
	return n.adopt(ctx, name, child, out)
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ctx = n.srv.reqCtx(ctx)
	t, isOurs := target.(*node)
	if !isOurs {
		return nil, syscall.EPERM
	}
	child, err := vfs.Link(ctx, n.vn, t.vn, name)
	if err != nil {
		return nil, n.srv.toErrno("link", err)
	}
	return n.adopt(ctx, name, child, out)
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	rl, ok := n.vn.(vfs.Readlinker)
	if !ok {
		return nil, syscall.EINVAL
	}
	target, err := rl.Readlink(n.srv.reqCtx(ctx))
	if err != nil {
		return nil, n.srv.toErrno("readlink", err)
	}
	return []byte(target), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.removed(name, n.srv.errnoOf("unlink", n.vn.Remove(n.srv.reqCtx(ctx), name, false)))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.removed(name, n.srv.errnoOf("rmdir", n.vn.Remove(n.srv.reqCtx(ctx), name, true)))
}

// removed records a name the mount took away (errno 0) and passes errno on.
func (n *node) removed(name string, errno syscall.Errno) syscall.Errno {
	if errno == 0 {
		n.noteAbsent(name, true)
	}
	return errno
}

// Rename is rename(2), and renameat2(2) with RENAME_NOREPLACE or
// RENAME_EXCHANGE where the tree supports them (EINVAL elsewhere, which
// tools such as mv take as "use plain rename").
func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	var err error
	if flags == 0 {
		err = n.vn.Rename(n.srv.reqCtx(ctx), name, to.vn, newName)
	} else if fr, ok := n.vn.(vfs.FlagRenamer); ok {
		err = fr.RenameFlags(n.srv.reqCtx(ctx), name, to.vn, newName, flags)
	} else {
		return syscall.EINVAL
	}
	if err != nil {
		return n.srv.toErrno("rename", err)
	}
	to.notePresent(newName)
	if flags&renameExchange != 0 {
		n.notePresent(name)
	} else {
		n.noteAbsent(name, true)
	}
	return 0
}

// renameExchange is renameat2(2)'s RENAME_EXCHANGE: both names stay.
const renameExchange = 0x2

func (s *server) errnoOf(op string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return s.toErrno(op, err)
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	st, err := vfs.StatFSOf(n.srv.reqCtx(ctx), n.vn)
	if err != nil {
		return n.srv.toErrno("statfs", err)
	}
	*out = fuse.StatfsOut{
		Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree,
		Bsize: st.Bsize, NameLen: st.NameLen, Frsize: st.Frsize,
	}
	return 0
}

// Flush reaches handles that finish something at close(2) (vfs.Flusher)
// and those of files locked through the mount, whose close drops the
// closer's locks: every other open tells the kernel not to send it
// (FOPEN_NOFLUSH, wrapHandle, lockCounts).
// It never answers ENOSYS, which the kernel would remember for the whole
// mount.
func (n *node) Flush(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	f, ok := fh.(*fileHandle)
	if !ok {
		return 0
	}
	return f.flush(ctx, n.StableAttr().Ino)
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	x, ok := n.vn.(vfs.Xattrer)
	if !ok {
		return 0, missingXattr(attr)
	}
	val, err := x.GetXattr(n.srv.reqCtx(ctx), attr)
	if errno := vfs.Errno(err); errno == syscall.ENODATA {
		return 0, missingXattr(attr)
	} else if err != nil {
		return 0, errno
	}
	if len(dest) < len(val) {
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

// selinuxLabel is the xattr `ls -l` asks of every file it lists. A host
// that runs SELinux answers it in the kernel and never asks the mount; on
// any other host the kernel passes each ask on, and FUSE keeps no xattrs,
// so a warm `ls -lR` of 1,000 files cost 1,000 round trips to the daemon
// (45-60 µs each on a small machine), five times the time of the rest of
// the listing.
const selinuxLabel = "security.selinux"

// missingXattr is the error for an xattr a file does not have. For an
// SELinux label it is EOPNOTSUPP, as from a filesystem without labels
// (NFS without labeled export, sshfs): ls and the other coreutils then
// stop asking for the rest of the mount. A label a file does have (set by
// root on the disk) is still read as it is.
func missingXattr(name string) syscall.Errno {
	if name == selinuxLabel {
		return syscall.EOPNOTSUPP
	}
	return syscall.ENODATA
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	x, ok := n.vn.(vfs.Xattrer)
	if !ok {
		return syscall.ENOTSUP
	}
	return vfs.Errno(x.SetXattr(n.srv.reqCtx(ctx), attr, data, int(flags)))
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	x, ok := n.vn.(vfs.Xattrer)
	if !ok {
		return 0, 0
	}
	names, err := x.ListXattr(n.srv.reqCtx(ctx))
	if err != nil {
		return 0, vfs.Errno(err)
	}
	size := 0
	for _, name := range names {
		size += len(name) + 1
	}
	if len(dest) < size {
		return uint32(size), syscall.ERANGE
	}
	at := 0
	for _, name := range names {
		at += copy(dest[at:], name)
		dest[at] = 0
		at++
	}
	return uint32(size), 0
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	x, ok := n.vn.(vfs.Xattrer)
	if !ok {
		return syscall.ENOTSUP
	}
	return vfs.Errno(x.RemoveXattr(n.srv.reqCtx(ctx), attr))
}
