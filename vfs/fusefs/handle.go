//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// fileHandle is an open vfs.Handle as go-fuse sees it.
type fileHandle struct {
	h        vfs.Handle
	srv      *server
	volatile bool
	opener   int // for a vfs.Flusher: the process that opened it
	user     openUser
	// Under the writeback cache (writeback.go): node is the stored file
	// open, pageWriter says whether the handle writes through the
	// kernel's pages, appends that it was opened O_APPEND (appendFlags).
	node                *node
	pageWriter, appends bool
	locked              atomic.Bool // a lock was set through it (locks.go)
	file                uint64      // the inode it locked, once locked
}

// openUser is the user an open is counted for (userOpens), if any.
type openUser struct {
	uid     uint32
	counted bool
}

var (
	_ gofs.FileReader          = (*fileHandle)(nil)
	_ gofs.FileWriter          = (*fileHandle)(nil)
	_ gofs.FileReleaser        = (*fileHandle)(nil)
	_ gofs.FileFsyncer         = (*fileHandle)(nil)
	_ gofs.FileAllocater       = (*fileHandle)(nil)
	_ gofs.FilePassthroughFder = (*fileHandle)(nil)
	_ gofs.FileLseeker         = (*fileHandle)(nil)
)

// wrapHandle picks how the kernel serves an open file: generated
// (volatile) content with direct I/O so every read reaches the daemon;
// disk-backed content through kernel passthrough when the backend has a
// host descriptor (go-fuse registers it if the kernel allows), otherwise
// through the daemon with the page cache.
func (s *server) wrapHandle(ctx context.Context, h vfs.Handle, volatile bool, user openUser) (gofs.FileHandle, uint32, syscall.Errno) {
	if dr, ok := h.(vfs.DirReader); ok {
		return &dirStream{h: h, dr: dr, srv: s, user: user}, 0, 0
	}
	fh := &fileHandle{h: h, srv: s, volatile: volatile, user: user}
	var flags uint32
	if volatile {
		flags |= fuse.FOPEN_DIRECT_IO
	}
	if _, ok := h.(vfs.Flusher); ok {
		fh.opener = callerProcess(ctx)
	} else {
		flags |= fuse.FOPEN_NOFLUSH // nothing to do at close(2): no round trip
	}
	return fh, flags, 0
}

// flush finishes the handle's work when the process that opened it closes
// it. The kernel sends FLUSH at every close(2), also when a child that
// inherited the descriptor exits (`(printf 'exec rm -rf /tmp/b'; sleep 1;
// printf 'uild\n') > ctl` closes it in sleep first): such a close must not
// finish the opener's half-written line. Any close drops the closer's
// record locks on the file (file is its inode number).
func (f *fileHandle) flush(ctx context.Context, file uint64) syscall.Errno {
	if errno := f.dropOwnerLocks(ctx, file); errno != 0 {
		return errno
	}
	fl, ok := f.h.(vfs.Flusher)
	if !ok || (f.opener != 0 && callerProcess(ctx) != f.opener) {
		return 0
	}
	return f.srv.errnoOf("flush", fl.Flush(f.srv.reqCtx(ctx)))
}

// callerProcess is the process (thread group) of the request's caller, or
// 0 when unknown. FUSE names the calling thread.
func callerProcess(ctx context.Context) int {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Pid == 0 {
		return 0
	}
	return threadGroup(int(caller.Pid))
}

// handleAttrer returns the open handle's own stat/truncate ability, used
// when the kernel names the handle (fstat, ftruncate).
func handleAttrer(fh gofs.FileHandle) (vfs.HandleAttrer, bool) {
	f, ok := fh.(*fileHandle)
	if !ok {
		return nil, false
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	return ha, ok
}

func (f *fileHandle) PassthroughFd() (int, bool) {
	if f.volatile || f.srv.opts.NoPassthrough {
		return 0, false
	}
	if hf, ok := f.h.(vfs.HostFile); ok {
		return hf.HostFd()
	}
	return 0, false
}

// ioCtx is the context of a read or write through f: generated content
// may block until an event (a session's stream, its stdin's pipe), which
// an interrupt ends; stored content's never does (reqCtx).
func (f *fileHandle) ioCtx(ctx context.Context) context.Context {
	if f.volatile {
		return waitCtx(ctx)
	}
	return f.srv.reqCtx(ctx)
}

// Read fills dest from off with one read of the handle. A read that
// comes short is the file's end (vfs.Handle), and the kernel takes it
// for the end of a cached file too, so nothing is asked past it: asking
// again where the read stopped would chase a file that grows as it is
// read (tail -f of a file being appended to on a device: each further
// read, a round trip later, finds the next line, and the reader waits
// until dest fills). Volatile content returns what one read gives alike.
func (f *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := f.h.ReadAt(f.ioCtx(ctx), dest, off)
	if err != nil && !errors.Is(err, io.EOF) && n == 0 {
		return nil, f.srv.toErrno("read", err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (f *fileHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.clearSetID(ctx); errno != 0 {
		return 0, errno
	}
	ctx = f.ioCtx(ctx)
	var n int
	var err error
	write := func() { n, err = f.h.WriteAt(vfs.WithFlushAtClose(ctx), data, off) }
	if ha, ok := f.h.(vfs.HandleAttrer); ok && f.node != nil {
		f.node.ownChange(ctx, ha.Attr, f.writeSize(off, len(data)), write)
	} else {
		write()
	}
	if err != nil && n == 0 {
		return 0, f.srv.toErrno("write", err)
	}
	return uint32(n), 0
}

// writeSize is the size a write of n bytes at off leaves a file of size
// before, as the kernel will hold it: an appending handle's write lands at
// the disk's end whatever off, and the kernel takes off+n for the file's
// end (it sent off from the size it held), so a disk append beside the
// write, or one the kernel had not been told of, shows as a size other
// than that.
func (f *fileHandle) writeSize(off int64, n int) func(int64) int64 {
	return func(before int64) int64 {
		if f.appends {
			return off + int64(n)
		}
		return max(before, off+int64(n))
	}
}

// allocSize is writeSize for fallocate(2): FALLOC_FL_KEEP_SIZE (and
// with it every punch or zeroing that keeps the size) leaves it.
func allocSize(off, size uint64, mode uint32) func(int64) int64 {
	return func(before int64) int64 {
		if mode&unix.FALLOC_FL_KEEP_SIZE != 0 {
			return before
		}
		return max(before, int64(off+size))
	}
}

// clearSetID drops the file's set-ID bits before an unprivileged caller
// changes its content, as Linux does. The mount takes this duty over from
// the kernel (FUSE_HANDLE_KILLPRIV_V2), which spares a GETXATTR round trip
// on every write. Writes served by passthrough never reach the daemon and
// run with its privileges, so the bits go when an unprivileged caller
// opens the file for writing: a little earlier than Linux drops them (at
// the first write). Writes that do reach the daemon check again. (A file
// made set-ID while already open for writing keeps its bits on a later
// passthrough write; gsvfs(7) says so.) Root stands for a caller with
// CAP_FSETID.
func (f *fileHandle) clearSetID(ctx context.Context) syscall.Errno {
	caller, ok := fuse.FromContext(ctx)
	if f.volatile || !ok || caller.Uid == 0 {
		return 0
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return 0
	}
	_, err := ha.SetAttr(f.srv.reqCtx(ctx), vfs.SetAttr{Valid: vfs.SetClearSetID})
	return f.srv.errnoOf("clear set-id bits", err)
}

// seekData is SEEK_DATA as the kernel's FUSE requests number it.
const seekData = 3

// Lseek answers SEEK_DATA and SEEK_HOLE (the kernel handles the other
// whences itself). A disk-backed file asks its host file, so holes are
// seen and cp or tar skip them; anything else is all data up to its size.
// It never answers ENOSYS, which the kernel would remember for the whole
// mount.
func (f *fileHandle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	if hf, ok := f.h.(vfs.HostFile); ok {
		if fd, ok := hf.HostFd(); ok {
			at, err := syscall.Seek(fd, int64(off), int(whence))
			if err != nil {
				return 0, vfs.Errno(err)
			}
			return uint64(at), 0
		}
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return 0, syscall.EINVAL
	}
	a, err := ha.Attr(f.srv.reqCtx(ctx))
	if err != nil {
		return 0, f.srv.toErrno("lseek", err)
	}
	size := uint64(max(a.Size, 0))
	switch {
	case off >= size:
		return 0, syscall.ENXIO
	case whence == seekData:
		return off, 0
	default:
		return size, 0
	}
}

func (f *fileHandle) Release(context.Context) syscall.Errno {
	f.unhold()
	f.releaseLocks()
	f.srv.release(f.user)
	return f.srv.errnoOf("close", f.h.Close())
}

// takeOpen counts an open for the caller before it is made (open, create,
// opendir), failing with EMFILE for a user at the limit.
func (s *server) takeOpen(ctx context.Context) (openUser, syscall.Errno) {
	uid, counted, errno := s.opens.take(ctx)
	return openUser{uid, counted}, errno
}

// release gives back an open counted for its user.
func (s *server) release(u openUser) {
	if u.counted {
		s.opens.drop(u.uid)
	}
}

func (f *fileHandle) Fsync(ctx context.Context, _ uint32) syscall.Errno {
	return f.srv.errnoOf("fsync", vfs.Sync(f.srv.reqCtx(ctx), f.h))
}

func (f *fileHandle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	a, ok := f.h.(vfs.Allocater)
	if !ok {
		return syscall.EOPNOTSUPP
	}
	ctx = f.srv.reqCtx(ctx)
	var err error
	allocate := func() { err = a.Allocate(ctx, int64(off), int64(size), mode) }
	if ha, ok := f.h.(vfs.HandleAttrer); ok && f.node != nil {
		f.node.ownChange(ctx, ha.Attr, allocSize(off, size, mode), allocate)
	} else {
		allocate()
	}
	return f.srv.errnoOf("fallocate", err)
}

// dirStream lists an open directory for the kernel, one entry at a time.
// vfs listings leave out "." and ".."; the kernel expects them, so they
// come first at offsets 1 and 2, and backend offsets are shifted past them
// (vfs.ShiftDirOffset). Every offset the kernel holds therefore maps back
// to a backend offset, and seeking (telldir/seekdir, small getdents
// buffers) resumes exactly.
//
// The backend's last batch is kept whole: a kernel buffer that fills up
// mid-batch seeks back to the entry that did not fit, which is found in
// the batch rather than asked of the backend again (for a remote tree, a
// round trip per page of listing).
type dirStream struct {
	h     vfs.Handle
	dr    vfs.DirReader
	srv   *server
	pos   uint64 // the kernel offset of the next entry
	start uint64 // the kernel offset batch was read at
	batch []vfs.DirEntry
	i     int // the next entry of batch to hand out
	// atEnd: the backend's last read, at pos, found the end. The
	// kernel asks once more there before it tells its caller; that ask
	// is answered from this.
	atEnd bool
	user  openUser
}

var (
	_ gofs.FileReaddirenter = (*dirStream)(nil)
	_ gofs.FileSeekdirer    = (*dirStream)(nil)
	_ gofs.FileReleasedirer = (*dirStream)(nil)
	_ gofs.FileFsyncdirer   = (*dirStream)(nil)
)

func (d *dirStream) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if d.i == len(d.batch) {
		if d.atEnd {
			d.atEnd = false
			return nil, 0
		}
		entries, err := vfs.ReadDirDots(d.srv.reqCtx(ctx), d.dr, d.pos)
		if err != nil {
			return nil, d.srv.toErrno("readdir", err)
		}
		if len(entries) == 0 {
			d.atEnd = true
			return nil, 0
		}
		d.batch, d.i, d.start = entries, 0, d.pos
	}
	e := d.batch[d.i]
	d.i++
	d.pos = e.Next
	return &fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: e.Type, Off: d.pos}, 0
}

// Seekdir goes to the kernel offset off: within the batch held if it
// starts there or one of its entries ends there, else by reading anew.
// Offset 0 always reads anew: rewinddir shows what is there now.
func (d *dirStream) Seekdir(_ context.Context, off uint64) syscall.Errno {
	if off == d.pos {
		return 0
	}
	d.pos, d.atEnd = off, false
	switch j := slices.IndexFunc(d.batch, func(e vfs.DirEntry) bool { return e.Next == off }); {
	case off == 0:
		d.batch, d.i = nil, 0
	case len(d.batch) > 0 && off == d.start:
		d.i = 0
	case j >= 0:
		d.i = j + 1
	default:
		d.batch, d.i = nil, 0
	}
	return 0
}

func (d *dirStream) Releasedir(context.Context, uint32) {
	d.srv.release(d.user)
	if err := d.h.Close(); err != nil {
		d.srv.toErrno("closedir", err)
	}
}

func (d *dirStream) Fsyncdir(ctx context.Context, _ uint32) syscall.Errno {
	return d.srv.errnoOf("fsyncdir", vfs.Sync(d.srv.reqCtx(ctx), d.h))
}
