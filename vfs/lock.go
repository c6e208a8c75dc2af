package vfs

import (
	"context"
	"math"
	"syscall"
)

// Locker is a handle whose locks are the host kernel's locks on a real
// file, so that a lock taken through an edge excludes host processes (a
// /proc session working in the state directory, SQLite run on the disk
// path) as well as every other client, and the other way round. Handles
// without it get LockHandle's default: locks kept in the daemon's memory,
// which exclude the daemon's clients from each other and nothing else.
//
// Lock carries out one request. Record locks (fcntl: POSIX and OFD) belong
// to the request's Owner, wherever the owner opened the file; a flock(2)
// lock belongs to the open handle itself.
type Locker interface {
	Lock(ctx context.Context, r LockRequest) (Lock, error)
}

// LockType is what a lock allows others.
type LockType uint8

// The types of a lock. A read lock shares, a write lock excludes.
const (
	LockUnlock LockType = iota
	LockRead
	LockWrite
)

// LockEOF as a lock's End means "to the end of the file, however far it
// grows", as a zero length does for fcntl(2).
const LockEOF = math.MaxUint64

// Lock is a byte range, locked or to be locked.
type Lock struct {
	Type       LockType
	Start, End uint64 // inclusive
	// Pid is the process behind the lock, as its edge names it (the FUSE
	// caller's pid, a 9P client's proc_id), or -1 when the holder is no
	// process (an OFD lock of the host, or unknown).
	Pid int32
}

// LockOwner names the holder of record locks. Edges make it unique: Edge
// is a comparable value of their own (a 9P connection, a FUSE mount),
// Client and ID what the protocol says (the kernel's lock owner through
// FUSE; a 9P client's name and proc_id).
type LockOwner struct {
	Edge   any
	Client string
	ID     uint64
}

// LockCmd says what a LockRequest does.
type LockCmd uint8

// The commands of a LockRequest.
const (
	// LockTest reports a lock of another owner that would block the
	// request's lock, or a Lock of type LockUnlock (F_GETLK).
	LockTest LockCmd = iota
	// LockSet sets or removes the lock, failing with EAGAIN while another
	// owner's lock is in the way (F_SETLK).
	LockSet
	// LockWait sets the lock, waiting while another owner's is in the
	// way, until ctx ends (EINTR) (F_SETLKW).
	LockWait
	// LockFlush says the owner closed a descriptor of the file: its
	// record locks on the file go, as close(2) drops a process's POSIX
	// locks.
	LockFlush
	// LockClose says the handle is about to close: the locks taken
	// through it alone go (OFD locks, flock).
	LockClose
)

// LockRequest is one lock operation on an open handle.
type LockRequest struct {
	Cmd   LockCmd
	Flock bool // a whole-file flock(2) lock of this open, not a record lock
	Owner LockOwner
	Lock
	// Open names the open file the request comes through, for LockHandle's
	// memory locks (LockClose drops those taken through it): a comparable
	// value unique to the open, such as the edge's own handle. A Locker
	// knows its open and ignores it.
	Open any
	// Account pays for what the request makes the daemon hold.
	Account LockAccount
}

// LockAccount is who pays for the locks a request makes the daemon hold
// (memory locks, or a lock owner's opening of a host file, which costs a
// descriptor), so that a client at its limit denies no other client a
// lock: each edge charges its clients apart, a 9P connection on its own,
// each user of a FUSE mount on its own, never the whole edge as one.
type LockAccount struct {
	// Who names the client: a comparable value unique to it.
	Who any
	// Limit is how many Who may hold at once (past it a lock fails with
	// ENOLCK); zero is no limit, for root and the daemon's own user
	// through FUSE, whose opens are not bounded either.
	Limit int
}

// LockLimit is the Limit of a client who may hold opens files open: a
// quarter of that, so that locks add little to what opens may cost the
// daemon (a lock owner's opening of a host file takes a descriptor, as
// an open does).
func LockLimit(opens int64) int {
	return int(max(opens/4, 1))
}

// AtLimit reports whether a, holding held, may hold no more.
func (a LockAccount) AtLimit(held int) bool { return a.Limit > 0 && held >= a.Limit }

// LockHandle carries out r on h: through h's own Locker, or else in the
// daemon's memory, where file names the file (its inode number as the
// edge sees it) so that every handle of it shares the locks. Memory locks
// follow fcntl(2) and flock(2) between the daemon's clients, and go when
// their owner's descriptor or their handle closes; nothing outside the
// daemon sees them.
func LockHandle(ctx context.Context, h Handle, file uint64, r LockRequest) (Lock, error) {
	if l, ok := h.(Locker); ok {
		return l.Lock(ctx, r)
	}
	return memLocks.do(ctx, file, r)
}

// CheckLock refuses a malformed request with EINVAL before it reaches a
// backend.
func CheckLock(r LockRequest) error {
	if r.Type > LockWrite || r.Cmd > LockClose || r.End < r.Start {
		return Error("lock", "", syscall.EINVAL)
	}
	return nil
}

// LockEnd turns fcntl's start and length (0: to the end of the file) into
// an inclusive end.
func LockEnd(start, length uint64) uint64 {
	if length == 0 || start+length-1 < start {
		return LockEOF
	}
	return start + length - 1
}

// conflicts reports whether two locks of different owners are in each
// other's way.
func (l Lock) conflicts(o Lock) bool {
	return (l.Type == LockWrite || o.Type == LockWrite) && l.Start <= o.End && o.Start <= l.End
}

// Covers reports whether l spans the whole file: unlocking it leaves the
// owner nothing.
func (l Lock) Covers() bool { return l.Start == 0 && l.End == LockEOF }

// Fcntl is t as fcntl(2)'s l_type on this system (also FUSE's numbering
// on Linux).
func (t LockType) Fcntl() int16 {
	switch t {
	case LockRead:
		return syscall.F_RDLCK
	case LockWrite:
		return syscall.F_WRLCK
	}
	return syscall.F_UNLCK
}

// LockTypeOf reads fcntl(2)'s l_type; anything unknown unlocks.
func LockTypeOf(typ int16) LockType {
	switch typ {
	case syscall.F_RDLCK:
		return LockRead
	case syscall.F_WRLCK:
		return LockWrite
	}
	return LockUnlock
}
