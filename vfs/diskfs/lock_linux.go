package diskfs

import (
	"context"
	"math"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// Locks through the edges are the kernel's locks on the backing file, so
// they exclude host processes (and sessions) as much as each other.
//
// Record locks: the edges bring many owners (a FUSE caller's process, a 9P
// client's proc_id) to one daemon process, whose own POSIX locks would
// all be one owner's. So each owner gets an open file description of its
// own on the file (a reopen of the handle through /proc/self/fd), and its
// locks are OFD locks there. OFD locks and POSIX locks conflict in the
// kernel, so a host process's fcntl locks and an owner's exclude each
// other, and owners exclude each other; an owner's own locks merge and
// split as fcntl's do. The description closes, dropping its locks, when
// the owner unlocks the whole file, closes a descriptor of the file
// (vfs.LockFlush: POSIX close semantics) or when every handle it locked
// through has closed (vfs.LockClose: OFD locks, death of the last user).
//
// flock: flock(2) on the handle's own descriptor, which is one per open,
// as flock's locks are.
//
// A blocking request retries a non-blocking one, backing off, until it
// succeeds or its context ends: a blocked fcntl or flock cannot be woken
// in a Go program (the runtime's signal handlers restart the call), and a
// thread left blocked for a client that gave up would hold its lock when
// it came.

// maxOwnerFiles bounds the descriptions held for lock owners across the
// daemon, and maxEdgeFiles those of one edge's owners (one 9P connection,
// one FUSE mount), so no client can make the daemon run out of
// descriptors, nor take them all; past them a new owner's lock fails with
// ENOLCK.
const (
	maxOwnerFiles = 4096
	maxEdgeFiles  = 1024
)

// hostLocks is every lock owner's description, by file. It is the
// daemon's, not a tree's: two trees that reach one host file share owners.
var hostLocks = &ownerFiles{files: map[fileID]map[vfs.LockOwner]*ownerFile{}, edges: map[any]int{}}

type ownerFiles struct {
	mu    sync.Mutex // held across each fcntl on an owner's description, never across a wait
	files map[fileID]map[vfs.LockOwner]*ownerFile
	count int         // descriptions held
	edges map[any]int // descriptions held, by the owner's edge
}

// ownerFile is one owner's description of a file, holding its locks.
type ownerFile struct {
	fd  int
	pid int32                    // the process behind the latest lock
	via map[*fileHandle]struct{} // the handles it locked through
}

// Lock carries out r on the kernel's locks of the handle's file.
func (h *fileHandle) Lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	if err := vfs.CheckLock(r); err != nil {
		return vfs.Lock{}, err
	}
	switch {
	case r.Cmd == vfs.LockClose:
		h.dropLocks()
		return vfs.Lock{}, nil
	case r.Cmd == vfs.LockFlush:
		hostLocks.drop(h.n.id, r.Owner)
		return vfs.Lock{}, nil
	case r.Flock:
		return vfs.Lock{}, h.flock(ctx, r)
	case r.Cmd == vfs.LockTest:
		return hostLocks.test(h, r)
	}
	if err := h.mayLock(r.Type); err != nil {
		return vfs.Lock{}, err
	}
	h.locked.Store(true)
	return vfs.Lock{}, retryLock(ctx, r.Cmd == vfs.LockWait, func() error { return hostLocks.set(h, r) })
}

// dropLocks lets go what was taken through the handle alone: its flock,
// and each owner's description that no other open handle locked through.
// The kernel may hold the handle's descriptor past its close (a
// passthrough backing file), so a flock is undone, not left to the close.
func (h *fileHandle) dropLocks() {
	if h.flocked.Swap(false) {
		unix.Flock(h.fd, unix.LOCK_UN)
	}
	if h.locked.Swap(false) {
		hostLocks.closeHandle(h)
	}
}

// mayLock fails with EBADF where fcntl(2) would: a read lock needs a
// handle open for reading, a write lock one open for writing.
func (h *fileHandle) mayLock(t vfs.LockType) error {
	fl, err := unix.FcntlInt(uintptr(h.fd), unix.F_GETFL, 0)
	if err != nil {
		return vfs.Error("lock", "", errno(err))
	}
	acc := fl & unix.O_ACCMODE
	if t == vfs.LockRead && acc == unix.O_WRONLY || t == vfs.LockWrite && acc == unix.O_RDONLY {
		return vfs.Error("lock", "", syscall.EBADF)
	}
	return nil
}

func (h *fileHandle) flock(ctx context.Context, r vfs.LockRequest) error {
	if r.Cmd == vfs.LockTest {
		return vfs.Error("lock", "", syscall.EINVAL) // flock(2) has no test
	}
	how := map[vfs.LockType]int{vfs.LockUnlock: unix.LOCK_UN, vfs.LockRead: unix.LOCK_SH, vfs.LockWrite: unix.LOCK_EX}[r.Type]
	if r.Type != vfs.LockUnlock {
		h.flocked.Store(true)
	}
	return retryLock(ctx, r.Cmd == vfs.LockWait, func() error {
		return unix.Flock(h.fd, how|unix.LOCK_NB)
	})
}

// retryLock runs try, and again while it finds the lock taken (EAGAIN)
// and wait says to wait, backing off up to 50 ms, until ctx ends (EINTR).
func retryLock(ctx context.Context, wait bool, try func() error) error {
	pause := time.Millisecond
	for {
		err := try()
		if err == unix.EACCES { // what fcntl may say for a lock held elsewhere
			err = unix.EAGAIN
		}
		if err == nil {
			return nil
		}
		if err != unix.EAGAIN || !wait {
			return vfs.Error("lock", "", errno(err))
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return vfs.Error("lock", "", syscall.EINTR)
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// set applies a lock or unlock of a record lock for r's owner.
func (o *ownerFiles) set(h *fileHandle, r vfs.LockRequest) error {
	lk, err := toFlock(r.Lock)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	owners := o.files[h.n.id]
	of := owners[r.Owner]
	if r.Type == vfs.LockUnlock {
		if of == nil {
			return nil // nothing to unlock
		}
		err := unix.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &lk)
		if err == nil && r.Covers() {
			o.closeLocked(h.n.id, r.Owner) // the owner's last lock went
		}
		return err
	}
	created := of == nil
	if created {
		if of, err = o.openLocked(h, r.Owner); err != nil {
			return err
		}
	}
	if err := unix.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &lk); err != nil {
		if created {
			o.closeLocked(h.n.id, r.Owner)
		}
		return err
	}
	of.via[h] = struct{}{}
	of.pid = r.Pid
	return nil
}

// openLocked gives owner a description of h's file of its own: read and
// write where the daemon may, so one description serves the owner's read
// and write locks through any of its handles (mayLock checks each
// handle's mode), else the handle's own mode. Only a regular file is
// opened again: a second open of a device or a FIFO may do something.
// o.mu is held.
func (o *ownerFiles) openLocked(h *fileHandle, owner vfs.LockOwner) (*ownerFile, error) {
	if o.count >= maxOwnerFiles || o.edges[owner.Edge] >= maxEdgeFiles {
		return nil, unix.ENOLCK
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, unix.ENOLCK
	}
	self := "/proc/self/fd/" + strconv.Itoa(h.fd)
	const how = unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	fd, err := unix.Open(self, unix.O_RDWR|how, 0)
	if err != nil {
		fl, ferr := unix.FcntlInt(uintptr(h.fd), unix.F_GETFL, 0)
		if ferr != nil {
			return nil, ferr
		}
		if fd, err = unix.Open(self, fl&unix.O_ACCMODE|how, 0); err != nil {
			return nil, err
		}
	}
	of := &ownerFile{fd: fd, via: map[*fileHandle]struct{}{}}
	if o.files[h.n.id] == nil {
		o.files[h.n.id] = map[vfs.LockOwner]*ownerFile{}
	}
	o.files[h.n.id][owner] = of
	o.count++
	o.edges[owner.Edge]++
	return of, nil
}

// closeLocked closes owner's description of file, dropping its locks.
// o.mu is held.
func (o *ownerFiles) closeLocked(file fileID, owner vfs.LockOwner) {
	of := o.files[file][owner]
	if of == nil {
		return
	}
	unix.Close(of.fd)
	o.count--
	if o.edges[owner.Edge]--; o.edges[owner.Edge] == 0 {
		delete(o.edges, owner.Edge)
	}
	delete(o.files[file], owner)
	if len(o.files[file]) == 0 {
		delete(o.files, file)
	}
}

// drop closes owner's description of file, if it has one.
func (o *ownerFiles) drop(file fileID, owner vfs.LockOwner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closeLocked(file, owner)
}

// closeHandle forgets h in every description of its file and closes those
// that no open handle locked through any more.
func (o *ownerFiles) closeHandle(h *fileHandle) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for owner, of := range o.files[h.n.id] {
		delete(of.via, h)
		if len(of.via) == 0 {
			o.closeLocked(h.n.id, owner)
		}
	}
}

// test reports a lock that would block r's: F_OFD_GETLK from the owner's
// own description (so its own locks are no conflict), or from the handle's
// descriptor, which holds no record locks.
func (o *ownerFiles) test(h *fileHandle, r vfs.LockRequest) (vfs.Lock, error) {
	lk, err := toFlock(r.Lock)
	if err != nil {
		return vfs.Lock{}, vfs.Error("lock", "", errno(err))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	owners := o.files[h.n.id]
	fd := h.fd
	if of := owners[r.Owner]; of != nil {
		fd = of.fd
	}
	probe := lk
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &probe); err != nil {
		return vfs.Lock{}, vfs.Error("lock", "", errno(err))
	}
	got := fromFlock(&probe)
	if got.Type != vfs.LockUnlock && got.Pid == -1 {
		got.Pid = holderPid(owners, r.Owner, lk)
	}
	return got, nil
}

// holderPid names the process behind an OFD lock in the way, which the
// kernel reports as -1: the one other owner whose description, asked the
// same question, sees nothing in the way holds it all. -1 when no one
// owner does (a host process's OFD lock, or several holders).
func holderPid(owners map[vfs.LockOwner]*ownerFile, asker vfs.LockOwner, lk unix.Flock_t) int32 {
	for owner, of := range owners {
		probe := lk
		if owner == asker || unix.FcntlFlock(uintptr(of.fd), unix.F_OFD_GETLK, &probe) != nil {
			continue
		}
		if probe.Type == unix.F_UNLCK {
			return of.pid
		}
	}
	return -1
}

// toFlock is the fcntl form of l, whose pid must be 0 for OFD commands.
func toFlock(l vfs.Lock) (unix.Flock_t, error) {
	if l.Start > math.MaxInt64 {
		return unix.Flock_t{}, unix.EINVAL
	}
	lk := unix.Flock_t{Whence: 0, Start: int64(l.Start)}
	if l.End != vfs.LockEOF {
		if l.End-l.Start >= math.MaxInt64 {
			return unix.Flock_t{}, unix.EINVAL
		}
		lk.Len = int64(l.End - l.Start + 1)
	}
	lk.Type = l.Type.Fcntl()
	return lk, nil
}

func fromFlock(lk *unix.Flock_t) vfs.Lock {
	return vfs.Lock{Type: vfs.LockTypeOf(lk.Type), Start: uint64(lk.Start),
		End: vfs.LockEnd(uint64(lk.Start), uint64(lk.Len)), Pid: lk.Pid}
}
