package vfs

import (
	"context"
	"sync"
	"syscall"
)

// memLocks holds the locks of files with no host file behind them (see
// LockHandle), for the whole daemon, so FUSE and 9P clients exclude each
// other.
var memLocks = newLockTable()

// lockTable keeps byte-range locks in memory, by file, following fcntl(2):
// other owners' overlapping locks conflict unless both read; an owner's own
// locks are replaced over the range it relocks or unlocks. flock locks live
// in a table of their own (they never conflict with record locks), each a
// whole-file lock of its owner.
//
// A waiter (LockWait) sleeps on a channel closed at every change, so it
// holds no lock of the table while it waits.
type lockTable struct {
	mu      sync.Mutex
	files   map[lockKey][]heldLock
	held    map[any]int   // how many locks each account holds (LockAccount.Who)
	changed chan struct{} // closed and replaced at every change
}

type lockKey struct {
	file  uint64
	flock bool
}

// heldLock is a lock and who holds it: the owner, the open it was taken
// through (LockRequest.Open, which LockClose drops), and the account that
// pays for it (nil: none), within its limit, so no client can fill the
// daemon's memory with locks nor, at its limit, deny anyone else one.
type heldLock struct {
	Lock
	owner LockOwner
	via   any
	payer any
}

func newLockTable() *lockTable {
	return &lockTable{files: map[lockKey][]heldLock{}, held: map[any]int{}, changed: make(chan struct{})}
}

func (t *lockTable) do(ctx context.Context, file uint64, r LockRequest) (Lock, error) {
	if err := CheckLock(r); err != nil {
		return Lock{}, err
	}
	k := lockKey{file, r.Flock}
	if r.Flock {
		r.Start, r.End = 0, LockEOF
	}
	want := heldLock{Lock: r.Lock, owner: r.Owner, via: r.Open}
	if r.Account.Limit > 0 {
		want.payer = r.Account.Who
	}
	switch r.Cmd {
	case LockTest:
		if l, ok := t.test(k, want); ok {
			return l, nil
		}
		return Lock{Type: LockUnlock, Start: r.Start, End: r.End}, nil
	case LockFlush:
		t.drop(func(k lockKey, l heldLock) bool { return k.file == file && !k.flock && l.owner == r.Owner })
		return Lock{}, nil
	case LockClose:
		t.drop(func(_ lockKey, l heldLock) bool { return r.Open != nil && l.via == r.Open })
		return Lock{}, nil
	}
	for {
		changed, err := t.set(k, want, r.Account)
		if err != syscall.EAGAIN || r.Cmd != LockWait {
			if err != 0 {
				return Lock{}, Error("lock", "", err)
			}
			return Lock{}, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Lock{}, Error("lock", "", syscall.EINTR)
		}
	}
}

// changedLocked wakes every waiter to try again. t.mu must be held.
func (t *lockTable) changedLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// set applies a lock or unlock. It fails with EAGAIN, and a channel that
// is closed at the next change, when another owner's lock is in the way,
// and with ENOLCK when the account holds as many as it may.
func (t *lockTable) set(k lockKey, want heldLock, acct LockAccount) (changed <-chan struct{}, err syscall.Errno) {
	t.mu.Lock()
	defer t.mu.Unlock()
	locks := t.files[k]
	if want.Type != LockUnlock {
		for _, l := range locks {
			if l.owner != want.owner && l.conflicts(want.Lock) {
				return t.changed, syscall.EAGAIN
			}
		}
	}
	out := cut(locks, want)
	if grown := paidBy(out, want.payer) - paidBy(locks, want.payer); grown > 0 && acct.AtLimit(t.held[want.payer]+grown-1) {
		return nil, syscall.ENOLCK // a new lock, or a split of one
	}
	t.store(k, out)
	t.changedLocked() // a relock to read or a split may free a waiter too
	return nil, 0
}

// cut is locks with want applied: the owner's own locks over its range
// are replaced, cut around it, as fcntl(2) does when a process relocks
// or unlocks.
func cut(locks []heldLock, want heldLock) []heldLock {
	var out []heldLock
	for _, l := range locks {
		if l.owner != want.owner || l.End < want.Start || l.Start > want.End {
			out = append(out, l)
			continue
		}
		if l.Start < want.Start {
			left := l
			left.End = want.Start - 1
			out = append(out, left)
		}
		if l.End > want.End {
			right := l
			right.Start = want.End + 1
			out = append(out, right)
		}
	}
	if want.Type != LockUnlock {
		out = append(out, want)
	}
	return out
}

// paidBy counts the locks that payer pays for (none for nil).
func paidBy(locks []heldLock, payer any) int {
	n := 0
	for _, l := range locks {
		if payer != nil && l.payer == payer {
			n++
		}
	}
	return n
}

// store keeps a file's locks, forgetting the file when none are left.
// t.mu must be held.
func (t *lockTable) store(k lockKey, locks []heldLock) {
	for _, l := range t.files[k] {
		if l.payer != nil {
			if t.held[l.payer]--; t.held[l.payer] == 0 {
				delete(t.held, l.payer)
			}
		}
	}
	for _, l := range locks {
		if l.payer != nil {
			t.held[l.payer]++
		}
	}
	if len(locks) == 0 {
		delete(t.files, k)
	} else {
		t.files[k] = locks
	}
}

// test returns the first lock of another owner that would block want.
func (t *lockTable) test(k lockKey, want heldLock) (Lock, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.files[k] {
		if l.owner != want.owner && l.conflicts(want.Lock) {
			return l.Lock, true
		}
	}
	return Lock{}, false
}

// drop removes every lock that gone says must go.
func (t *lockTable) drop(gone func(lockKey, heldLock) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, locks := range t.files {
		var kept []heldLock // a new slice: store counts the old one
		for _, l := range locks {
			if !gone(k, l) {
				kept = append(kept, l)
			}
		}
		t.store(k, kept)
	}
	t.changedLocked()
}
