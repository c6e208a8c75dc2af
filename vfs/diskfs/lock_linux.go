package diskfs

import (
	"context"
	"math"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/bounds"
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
// A blocking request retries a non-blocking one until it succeeds or its
// context ends: a blocked fcntl or flock cannot be woken in a Go program
// (the runtime's signal handlers restart the call), and a thread left
// blocked for a client that gave up would hold its lock when it came. A
// waiter tries again at once when the daemon lets go of a lock on the
// file (lockFile.changed), and otherwise every so often, backing off up to
// hostPoll, for a lock that a host process holds. No deadlock is seen:
// OFD locks report none, so two owners waiting on each other wait until a
// signal ends one wait (gsvfs(7)).
//
// Each file's locks are taken under a mutex of the file's own, so waiters
// and lockers of one file never slow those of another.

// hostPoll is the longest a waiter sleeps before it looks again for a
// lock that no unlock of the daemon's own frees: one held by a host
// process.
var hostPoll = 200 * time.Millisecond

// firstPoll is the first such sleep.
var firstPoll = time.Millisecond

// hostLocks is every lock owner's description, by file. It is the
// daemon's, not a tree's: two trees that reach one host file share owners.
// Its descriptions cost descriptors, so the accounts with a limit hold at
// most a quarter of the daemon's descriptor limit together (bounds.OpenLimit),
// and each at most its own limit (vfs.LockAccount): past either a new
// owner's lock fails with ENOLCK.
var hostLocks = &ownerFiles{files: map[fileID]*lockFile{}, held: map[any]int{},
	max: sync.OnceValue(func() int { return int(bounds.OpenLimit()) })}

type ownerFiles struct {
	// max is how many descriptions the accounts with a limit may hold
	// together, read at the first lock: the daemon raises its descriptor
	// limit as it starts.
	max func() int

	mu    sync.Mutex // guards what follows; held across no system call
	files map[fileID]*lockFile
	count int         // descriptions held
	paid  int         // descriptions held for accounts with a limit
	held  map[any]int // descriptions held, by account (LockAccount.Who)
}

// lockFile is the lock state of one host file, kept while its owners hold
// descriptions or requests use it.
type lockFile struct {
	id    fileID
	users int // requests using it; guarded by ownerFiles.mu

	mu      sync.Mutex // held across each fcntl on the file's descriptions, never across a wait
	owners  map[vfs.LockOwner]*ownerFile
	changed chan struct{} // closed and replaced whenever the daemon lets go of a lock here
	waiting int           // requests waiting for a lock here (for tests)
}

// ownerFile is one owner's description of a file, holding its locks.
type ownerFile struct {
	fd    int
	pid   int32                    // the process behind the latest lock
	via   map[*fileHandle]struct{} // the handles it locked through
	payer any                      // the account that pays for it, or nil
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
		hostLocks.use(h.n.id, false, func(lf *lockFile) error { return lf.drop(r.Owner) })
		return vfs.Lock{}, nil
	case r.Flock:
		return vfs.Lock{}, h.flock(ctx, r)
	case r.Cmd == vfs.LockTest:
		var got vfs.Lock
		err := hostLocks.use(h.n.id, true, func(lf *lockFile) (err error) {
			got, err = lf.test(h, r)
			return err
		})
		return got, err
	}
	if err := h.mayLock(r.Type); err != nil {
		return vfs.Lock{}, err
	}
	h.locked.Store(true)
	return vfs.Lock{}, hostLocks.use(h.n.id, true, func(lf *lockFile) error {
		return lf.retry(ctx, r.Cmd == vfs.LockWait, func() error { return lf.set(h, r) })
	})
}

// dropLocks lets go what was taken through the handle alone: its flock,
// and each owner's description that no other open handle locked through.
// The kernel may hold the handle's descriptor past its close (a
// passthrough backing file), so a flock is undone, not left to the close.
func (h *fileHandle) dropLocks() {
	flocked, locked := h.flocked.Swap(false), h.locked.Swap(false)
	if !flocked && !locked {
		return
	}
	if flocked {
		unix.Flock(h.fd, unix.LOCK_UN)
	}
	hostLocks.use(h.n.id, false, func(lf *lockFile) error { // none: no waiters, no owners
		if flocked {
			lf.wake()
		}
		if locked {
			lf.closeHandle(h)
		}
		return nil
	})
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
	return hostLocks.use(h.n.id, true, func(lf *lockFile) error {
		return lf.retry(ctx, r.Cmd == vfs.LockWait, func() error {
			err := unix.Flock(h.fd, how|unix.LOCK_NB)
			if err == nil && r.Type != vfs.LockWrite {
				lf.wake() // an unlock, or a downgrade to shared
			}
			return err
		})
	})
}

// use runs fn on file's lock state, made if need be (else fn is not run
// when there is none), and kept while fn runs.
func (o *ownerFiles) use(file fileID, create bool, fn func(*lockFile) error) error {
	o.mu.Lock()
	lf := o.files[file]
	if lf == nil && create {
		lf = &lockFile{id: file, owners: map[vfs.LockOwner]*ownerFile{}, changed: newChan()}
		o.files[file] = lf
	}
	if lf != nil {
		lf.users++
	}
	o.mu.Unlock()
	if lf == nil {
		return nil
	}
	defer o.done(lf)
	return fn(lf)
}

// done ends a use of lf, forgetting it when nothing holds it any more.
func (o *ownerFiles) done(lf *lockFile) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if lf.users--; lf.users == 0 && len(lf.owners) == 0 {
		delete(o.files, lf.id)
	}
}

func newChan() chan struct{} { return make(chan struct{}) }

// wake lets every waiter on the file try again.
func (lf *lockFile) wake() {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.wakeLocked()
}

// wakeLocked is wake with lf.mu held.
func (lf *lockFile) wakeLocked() {
	close(lf.changed)
	lf.changed = newChan()
}

// changes is a channel closed when the daemon next lets go of a lock on
// the file.
func (lf *lockFile) changes() <-chan struct{} {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.changed
}

// retry runs try, and again while it finds the lock taken (EAGAIN) and
// wait says to wait: at once when the daemon lets go of a lock on the
// file, else after a pause that grows up to hostPoll, until ctx ends
// (EINTR).
func (lf *lockFile) retry(ctx context.Context, wait bool, try func() error) error {
	pause := firstPoll
	for {
		changed := lf.changes() // before the try, so no wake is missed
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
		if err := lf.wait(ctx, changed, &pause); err != nil {
			return err
		}
	}
}

// wait sleeps until changed closes, the pause is over (and then doubles,
// up to hostPoll) or ctx ends (EINTR).
func (lf *lockFile) wait(ctx context.Context, changed <-chan struct{}, pause *time.Duration) error {
	lf.count(&lf.waiting, 1)
	defer lf.count(&lf.waiting, -1)
	t := time.NewTimer(*pause)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
		*pause = min(2**pause, hostPoll)
	case <-ctx.Done():
		return vfs.Error("lock", "", syscall.EINTR)
	}
	return nil
}

// count adds d to n, a count of lf's, under lf.mu.
func (lf *lockFile) count(n *int, d int) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	*n += d
}

// set applies a lock or unlock of a record lock for r's owner.
func (lf *lockFile) set(h *fileHandle, r vfs.LockRequest) error {
	lk, err := toFlock(r.Lock)
	if err != nil {
		return err
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	of := lf.owners[r.Owner]
	if r.Type == vfs.LockUnlock {
		if of == nil {
			return nil // nothing to unlock
		}
		err := unix.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &lk)
		if err == nil && r.Covers() {
			lf.forgetLocked(r.Owner) // the owner's last lock went
		}
		lf.wakeLocked()
		return err
	}
	created := of == nil
	if created {
		if err := free(h.fd, lk); err != nil {
			return err // no need to open a description to fail
		}
		if of, err = lf.openLocked(h, r.Owner, r.Account); err != nil {
			return err
		}
	}
	if err := unix.FcntlFlock(uintptr(of.fd), unix.F_OFD_SETLK, &lk); err != nil {
		if created {
			lf.forgetLocked(r.Owner) // it held nothing: no one to wake
		}
		return err
	}
	if !created {
		lf.wakeLocked() // a relock may give up part of a range, or write for read
	}
	of.via[h] = struct{}{}
	of.pid = r.Pid
	return nil
}

// free fails with EAGAIN when a lock is in the way of lk, as seen from
// fd, which holds no record locks: so a waiter that has no description
// yet looks with one call instead of three.
func free(fd int, lk unix.Flock_t) error {
	probe := lk
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &probe); err != nil {
		return err
	}
	if probe.Type != unix.F_UNLCK {
		return unix.EAGAIN
	}
	return nil
}

// openLocked gives owner a description of h's file of its own, paid for
// by acct: read and write where the daemon may, so one description serves
// the owner's read and write locks through any of its handles (mayLock
// checks each handle's mode), else the handle's own mode. Only a regular
// file is opened again: a second open of a device or a FIFO may do
// something. lf.mu is held.
func (lf *lockFile) openLocked(h *fileHandle, owner vfs.LockOwner, acct vfs.LockAccount) (*ownerFile, error) {
	payer, err := hostLocks.charge(acct)
	if err != nil {
		return nil, err
	}
	fd, err := reopen(h.fd)
	if err != nil {
		hostLocks.refund(payer)
		return nil, err
	}
	of := &ownerFile{fd: fd, via: map[*fileHandle]struct{}{}, payer: payer}
	hostLocks.mu.Lock() // done reads owners under it
	lf.owners[owner] = of
	hostLocks.mu.Unlock()
	return of, nil
}

// reopen opens the regular file open at fd again, for a lock owner.
func reopen(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.ENOLCK
	}
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	const how = unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	nfd, err := unix.Open(self, unix.O_RDWR|how, 0)
	if err == nil {
		return nfd, nil
	}
	fl, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if ferr != nil {
		return -1, ferr
	}
	return unix.Open(self, fl&unix.O_ACCMODE|how, 0)
}

// charge counts a new description for acct, or fails with ENOLCK when the
// account or the accounts with a limit together hold as many as they may.
// It returns the account to refund, nil for one with no limit.
func (o *ownerFiles) charge(acct vfs.LockAccount) (payer any, err error) {
	most := o.max()
	o.mu.Lock()
	defer o.mu.Unlock()
	if acct.Limit > 0 {
		if acct.AtLimit(o.held[acct.Who]) || o.paid >= most {
			return nil, unix.ENOLCK
		}
		payer = acct.Who
		o.held[payer]++
		o.paid++
	}
	o.count++
	return payer, nil
}

// refund gives back what charge counted for payer.
func (o *ownerFiles) refund(payer any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count--
	if payer == nil {
		return
	}
	o.paid--
	if o.held[payer]--; o.held[payer] == 0 {
		delete(o.held, payer)
	}
}

// closeLocked closes owner's description, dropping its locks, and wakes
// the waiters. lf.mu is held.
func (lf *lockFile) closeLocked(owner vfs.LockOwner) {
	if lf.forgetLocked(owner) {
		lf.wakeLocked()
	}
}

// forgetLocked closes owner's description, if it has one. lf.mu is held.
func (lf *lockFile) forgetLocked(owner vfs.LockOwner) bool {
	of := lf.owners[owner]
	if of == nil {
		return false
	}
	unix.Close(of.fd)
	hostLocks.mu.Lock()
	delete(lf.owners, owner)
	hostLocks.mu.Unlock()
	hostLocks.refund(of.payer)
	return true
}

// drop closes owner's description, if it has one.
func (lf *lockFile) drop(owner vfs.LockOwner) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.closeLocked(owner)
	return nil
}

// closeHandle forgets h in every description of the file and closes those
// that no open handle locked through any more.
func (lf *lockFile) closeHandle(h *fileHandle) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	for owner, of := range lf.owners {
		delete(of.via, h)
		if len(of.via) == 0 {
			lf.closeLocked(owner)
		}
	}
}

// test reports a lock that would block r's: F_OFD_GETLK from the owner's
// own description (so its own locks are no conflict), or from the handle's
// descriptor, which holds no record locks.
func (lf *lockFile) test(h *fileHandle, r vfs.LockRequest) (vfs.Lock, error) {
	lk, err := toFlock(r.Lock)
	if err != nil {
		return vfs.Lock{}, vfs.Error("lock", "", errno(err))
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	fd := h.fd
	if of := lf.owners[r.Owner]; of != nil {
		fd = of.fd
	}
	probe := lk
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &probe); err != nil {
		return vfs.Lock{}, vfs.Error("lock", "", errno(err))
	}
	got := fromFlock(&probe)
	if got.Type != vfs.LockUnlock && got.Pid == -1 {
		got.Pid = holderPid(lf.owners, r.Owner, lk)
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
