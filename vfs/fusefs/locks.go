//go:build linux

package fusefs

import (
	"context"
	"math"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/vfs"
)

// The kernel forwards POSIX, OFD and flock locks to the mount
// (MountOptions.EnableLocks) instead of keeping them in its own table for
// the mount alone, so they reach the tree (vfs.LockHandle): on a stored
// file, the kernel's locks on the backing file, which host processes see.
//
// Each lock names its owner: for POSIX locks the caller's file table (its
// process), for OFD and flock locks the open file. RELEASE, when an open
// file goes, drops the locks taken through it (OFD, flock, and POSIX locks
// whose last handle it was: a process's death), but the kernel sends it
// after close(2) has returned. FLUSH comes within close(2), with the
// closer's owner, and drops that process's record locks on the file
// wherever it took them (POSIX close semantics). FLUSH costs a close a
// round trip, so only opens that may need it ask for it (flushFor): opens
// of stored files for writing, and any open of a file that a handle of
// the mount holds locks on at the time. Read locks taken through a
// descriptor opened for reading only while nothing was locked go a moment
// after its last close.

var (
	_ gofs.NodeGetlker  = (*node)(nil)
	_ gofs.NodeSetlker  = (*node)(nil)
	_ gofs.NodeSetlkwer = (*node)(nil)
)

func (n *node) Getlk(ctx context.Context, fh gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	got, errno := n.lock(ctx, fh, vfs.LockTest, owner, lk, flags)
	if errno != 0 {
		return errno
	}
	*out = toFileLock(got)
	return 0
}

func (n *node) Setlk(ctx context.Context, fh gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	_, errno := n.lock(ctx, fh, vfs.LockSet, owner, lk, flags)
	return errno
}

// Setlkw waits for the lock until it is free or the caller is
// interrupted by a signal (FUSE INTERRUPT: EINTR).
func (n *node) Setlkw(ctx context.Context, fh gofs.FileHandle, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	_, errno := n.lock(ctx, fh, vfs.LockWait, owner, lk, flags)
	return errno
}

func (n *node) lock(ctx context.Context, fh gofs.FileHandle, cmd vfs.LockCmd, owner uint64, lk *fuse.FileLock, flags uint32) (vfs.Lock, syscall.Errno) {
	f, ok := fh.(*fileHandle)
	if !ok {
		return vfs.Lock{}, syscall.EBADF
	}
	r := vfs.LockRequest{Cmd: cmd, Flock: flags&fuse.LK_FLOCK != 0,
		Owner: f.srv.lockOwner(owner), Lock: fromFileLock(lk), Open: f, Account: f.srv.lockAccount(ctx)}
	if cmd != vfs.LockTest && !f.locked.Swap(true) {
		f.file = n.StableAttr().Ino
		f.srv.lockers.add(f.file, 1)
	}
	if cmd != vfs.LockTest && r.Type == vfs.LockUnlock && !f.volatile {
		n.beforeUnlock()
	}
	got, err := vfs.LockHandle(waitCtx(ctx), f.h, n.StableAttr().Ino, r) // F_SETLKW waits
	if err != nil {
		return vfs.Lock{}, f.srv.errnoOf("lock", err)
	}
	if cmd != vfs.LockTest && r.Type != vfs.LockUnlock && !f.volatile {
		n.afterLock(f.srv.reqCtx(ctx), f)
	}
	return got, 0
}

// afterLock makes what others wrote while the lock was free read now,
// not pages the kernel cached before (as NFS drops its cache when it
// takes a lock). Where the daemon keeps the kernel's view of the file
// (pageguard.go) it knows whether anyone did, and a lock of a file only
// the mount wrote drops nothing. (An unlock
// still does while the file has writers: see beforeUnlock.) Passthrough
// files cache nothing here.
func (n *node) afterLock(ctx context.Context, f *fileHandle) {
	if n.checkOutside(ctx, f) {
		return
	}
	n.NotifyContent(0, 0)
}

// beforeUnlock puts what the lock's holder wrote on the disk before the
// lock goes, for a process that takes it there next: under the writeback
// cache the kernel may hold it as dirty pages while a handle of the mount
// writes the file. Dropping the pages writes them back first; no FUSE
// notice writes back without dropping, and the daemon cannot tell which
// pages are dirty, so every unlock of a file with writers pays one read
// of what it reads again (a read-only transaction's too: which process
// holds which write lock is not known per inode here).
func (n *node) beforeUnlock() {
	if !n.srv.writeback || n.volatile {
		return
	}
	n.writers.mu.Lock()
	dirty := n.writers.n > 0
	n.writers.mu.Unlock()
	if dirty {
		n.NotifyContent(0, 0)
	}
}

// lockOwner is the tree's name for a lock owner of this mount.
func (s *server) lockOwner(id uint64) vfs.LockOwner {
	return vfs.LockOwner{Edge: s, ID: id}
}

// lockAccount is who pays for the caller's locks: each ordinary user of
// the mount on its own, so that one at its limit denies no other user a
// lock, within a share of the files it may hold open. Root and the
// daemon's own user pay nothing, as their opens are not bounded either.
func (s *server) lockAccount(ctx context.Context) vfs.LockAccount {
	uid, ok := boundedUser(ctx)
	if !ok {
		return vfs.LockAccount{}
	}
	return vfs.LockAccount{Who: userOf{s, uid}, Limit: vfs.LockLimit(s.opts.MaxOpenPerUser)}
}

// userOf names one user of one mount.
type userOf struct {
	srv *server
	uid uint32
}

// dropOwnerLocks drops the record locks of the process that closed a
// descriptor of the file (FLUSH).
func (f *fileHandle) dropOwnerLocks(ctx context.Context, file uint64) syscall.Errno {
	owner, ok := f.srv.flushOwners.owner(ctx)
	if !ok || !f.srv.lockers.held(file) {
		return 0
	}
	_, err := vfs.LockHandle(f.srv.reqCtx(ctx), f.h, file, vfs.LockRequest{Cmd: vfs.LockFlush, Owner: f.srv.lockOwner(owner)})
	return f.srv.errnoOf("unlock at close", err)
}

// releaseLocks drops what was locked through the handle alone (OFD locks,
// flock) before it closes.
func (f *fileHandle) releaseLocks() {
	if f.locked.Load() {
		vfs.LockHandle(context.Background(), f.h, f.file, vfs.LockRequest{Cmd: vfs.LockClose, Open: f})
		f.srv.lockers.add(f.file, -1)
	}
}

// lockCounts counts, by inode, the open handles that have taken locks.
type lockCounts struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (c *lockCounts) add(file uint64, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uint64]int{}
	}
	if c.n[file] += d; c.n[file] <= 0 {
		delete(c.n, file)
	}
}

// held reports whether a handle of the mount holds locks on file.
func (c *lockCounts) held(file uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[file] > 0
}

// flushFor asks for FLUSH (clears FOPEN_NOFLUSH from fuseFlags) on an
// open of file with openFlags where a close may have locks to drop: while
// handles hold locks on the file, and for an open of a stored file for
// writing, which may take write locks and whose close must let them go
// at once (open, lock, close is the common way of taking one).
func (c *lockCounts) flushFor(file uint64, openFlags uint32, volatile bool, fuseFlags uint32) uint32 {
	if !volatile && openFlags&syscall.O_ACCMODE != syscall.O_RDONLY || c.held(file) {
		fuseFlags &^= fuse.FOPEN_NOFLUSH
	}
	return fuseFlags
}

// fromFileLock reads the kernel's lock; its end OFFSET_MAX means the end
// of the file.
func fromFileLock(lk *fuse.FileLock) vfs.Lock {
	l := vfs.Lock{Type: vfs.LockTypeOf(int16(lk.Typ)), Start: lk.Start, End: lk.End, Pid: int32(lk.Pid)}
	if lk.End >= math.MaxInt64 {
		l.End = vfs.LockEOF
	}
	return l
}

// toFileLock is l as the kernel takes it: ends past OFFSET_MAX are refused
// there, and a pid of no process is 0.
func toFileLock(l vfs.Lock) fuse.FileLock {
	lk := fuse.FileLock{Start: l.Start, End: min(l.End, math.MaxInt64), Typ: uint32(l.Type.Fcntl())}
	if l.Pid > 0 {
		lk.Pid = uint32(l.Pid)
	}
	return lk
}

// flushOwners carries FLUSH's lock owner from the raw request to the
// node's Flush, which go-fuse's node API does not pass it to. It is keyed
// by the request's cancel channel, which reaches Flush as its context's
// Done and belongs to one request at a time.
type flushOwners struct{ m sync.Map }

func (o *flushOwners) owner(ctx context.Context) (uint64, bool) {
	v, ok := o.m.Load(ctx.Done())
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}

// flushOwnerFS is the raw side of flushOwners.
type flushOwnerFS struct {
	fuse.RawFileSystem
	owners *flushOwners
}

func (fs flushOwnerFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	fs.owners.m.Store(cancel, in.LockOwner)
	defer fs.owners.m.Delete(cancel)
	return fs.RawFileSystem.Flush(cancel, in)
}
