package vfs

import (
	"context"
	"errors"
	"math"
	"syscall"
	"testing"
	"time"
)

// memHandle stands for an open handle with no host file behind it.
type memHandle struct{ Handle }

// withOpen is r made through the open h.
func withOpen(r LockRequest, h Handle) LockRequest {
	r.Open = h
	return r
}

// The memory lock table follows fcntl(2): other owners' overlapping locks
// conflict unless both are read locks; an owner's own locks are replaced
// over the range it relocks or unlocks, splitting where needed.
func TestLockTable(t *testing.T) {
	a, b := LockOwner{Edge: "conn a", Client: "host", ID: 1}, LockOwner{Edge: "conn b", Client: "host", ID: 1}
	a2 := LockOwner{Edge: "conn a", Client: "host", ID: 2} // another process on the same connection
	ha, hb := &memHandle{}, &memHandle{}
	lk := func(o LockOwner, typ LockType, start, length uint64) LockRequest {
		return LockRequest{Cmd: LockSet, Owner: o, Lock: Lock{Type: typ, Start: start, End: LockEnd(start, length)}}
	}
	steps := []struct {
		what string
		h    Handle
		r    LockRequest
		want syscall.Errno
	}{
		{"A write-locks 0-99", ha, lk(a, LockWrite, 0, 100), 0},
		{"B cannot read 50-59", hb, lk(b, LockRead, 50, 10), syscall.EAGAIN},
		{"A2 cannot write to EOF from 99", ha, lk(a2, LockWrite, 99, 0), syscall.EAGAIN},
		{"B may write 100-199", hb, lk(b, LockWrite, 100, 100), 0},
		{"A relocks 0-99 for reading", ha, lk(a, LockRead, 0, 100), 0},
		{"A2 may read 10-19 now", ha, lk(a2, LockRead, 10, 10), 0},
		{"A unlocks 40-59, splitting its lock", ha, lk(a, LockUnlock, 40, 20), 0},
		{"B may write 40-59", hb, lk(b, LockWrite, 40, 20), 0},
		{"B cannot write 60-60", hb, lk(b, LockWrite, 60, 1), syscall.EAGAIN},
		{"A2 unlocks everything", ha, lk(a2, LockUnlock, 0, 0), 0},
		{"B's flock", hb, LockRequest{Cmd: LockSet, Flock: true, Owner: b, Lock: Lock{Type: LockWrite}}, 0},
		{"A's flock waits for B's, not for record locks", ha, LockRequest{Cmd: LockSet, Flock: true, Owner: a, Lock: Lock{Type: LockRead}}, syscall.EAGAIN},
	}
	tab := newLockTable()
	ctx := context.Background()
	for _, s := range steps {
		if _, err := tab.do(ctx, 7, withOpen(s.r, s.h)); Errno(err) != s.want {
			t.Fatalf("%s: got %v, want %v", s.what, err, s.want)
		}
	}
	// A holds read locks on 0-39 and 60-99; B writes 40-59 and 100-199.
	test := func(o LockOwner, typ LockType, start, length uint64) Lock {
		r := lk(o, typ, start, length)
		r.Cmd = LockTest
		got, err := tab.do(ctx, 7, withOpen(r, ha))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		got, want Lock
	}{
		{test(a2, LockWrite, 0, 1), Lock{Type: LockRead, Start: 0, End: 39}},
		{test(a2, LockRead, 45, 1), Lock{Type: LockWrite, Start: 40, End: 59}},
		{test(a2, LockRead, 0, 40), Lock{Type: LockUnlock, Start: 0, End: 39}},
		{test(a2, LockWrite, 200, 0), Lock{Type: LockUnlock, Start: 200, End: LockEOF}},
	} {
		if tc.got != tc.want {
			t.Errorf("got %+v, want %+v", tc.got, tc.want)
		}
	}
	tab.do(ctx, 7, withOpen(LockRequest{Cmd: LockFlush, Owner: b}, hb))
	if got := test(a2, LockWrite, 40, 20); got.Type != LockUnlock {
		t.Errorf("B's record locks survived its close: %+v", got)
	}
	if _, err := tab.do(ctx, 7, withOpen(LockRequest{Cmd: LockSet, Flock: true, Owner: a, Lock: Lock{Type: LockRead}}, ha)); Errno(err) != syscall.EAGAIN {
		t.Errorf("B's flock went with its record locks: %v", err)
	}
	tab.do(ctx, 7, withOpen(LockRequest{Cmd: LockClose}, hb))
	tab.do(ctx, 7, withOpen(LockRequest{Cmd: LockClose}, ha))
	if len(tab.files) != 0 {
		t.Errorf("locks left after every handle closed: %+v", tab.files)
	}
	if LockEnd(math.MaxUint64-1, 10) != LockEOF {
		t.Error("a range past the largest offset does not run to EOF")
	}
}

// A blocking lock waits for the holder's release, and gives up with EINTR
// when its context ends.
func TestLockWait(t *testing.T) {
	ha, hb := &memHandle{}, &memHandle{}
	holder := LockRequest{Cmd: LockWait, Owner: LockOwner{ID: 1}, Lock: Lock{Type: LockWrite, End: LockEOF}}
	waiter := LockRequest{Cmd: LockWait, Owner: LockOwner{ID: 2}, Lock: Lock{Type: LockWrite, End: LockEOF}}
	tab := newLockTable()
	tab.do(context.Background(), 1, withOpen(holder, ha))

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := tab.do(ctx, 1, withOpen(waiter, hb)); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("the waiter got the lock while it was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	tab.do(context.Background(), 1, withOpen(LockRequest{Cmd: LockClose}, ha)) // the holder's handle closes
	if err := <-got; err != nil {
		t.Fatalf("waiter after the release: %v", err)
	}

	go func() { _, err := tab.do(ctx, 1, withOpen(holder, ha)); got <- err }() // now the first owner waits
	cancel()
	if err := <-got; !errors.Is(err, syscall.EINTR) {
		t.Errorf("interrupted waiter: got %v, want EINTR", err)
	}
}

// Each account (one user of a FUSE mount, one 9P connection) holds at
// most its limit of memory locks, splits included; another account of the
// same edge, and an account with no limit (root's), are not affected, and
// closing gives the room back.
func TestLockTableBound(t *testing.T) {
	tab := newLockTable()
	ctx := context.Background()
	rogue, fair := &memHandle{}, &memHandle{}
	const limit = 5
	lock := func(h Handle, uid int, limit int, file uint64, typ LockType, start, end uint64) error {
		_, err := tab.do(ctx, file, withOpen(LockRequest{Cmd: LockSet, Owner: LockOwner{Edge: "mount", ID: uint64(uid)},
			Account: LockAccount{Who: uid, Limit: limit}, Lock: Lock{Type: typ, Start: start, End: end}}, h))
		return err
	}
	for i := range limit {
		if err := lock(rogue, 1000, limit, uint64(i), LockRead, 0, LockEOF); err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
	}
	if err := lock(rogue, 1000, limit, limit, LockRead, 0, LockEOF); !errors.Is(err, syscall.ENOLCK) {
		t.Errorf("a lock past the limit: %v, want ENOLCK", err)
	}
	if err := lock(rogue, 1000, limit, 0, LockUnlock, 10, 10); !errors.Is(err, syscall.ENOLCK) {
		t.Errorf("an unlock splitting a lock past the limit: %v, want ENOLCK", err)
	}
	if err := lock(fair, 1001, limit, 1, LockRead, 0, LockEOF); err != nil {
		t.Errorf("another user's lock on the same edge: %v", err)
	}
	if err := lock(fair, 0, 0, 2, LockRead, 0, LockEOF); err != nil {
		t.Errorf("root's lock: %v", err)
	}
	tab.do(ctx, 0, withOpen(LockRequest{Cmd: LockClose}, rogue))
	if err := lock(rogue, 1000, limit, 0, LockRead, 0, LockEOF); err != nil {
		t.Errorf("a lock after the others closed: %v", err)
	}
	tab.do(ctx, 0, withOpen(LockRequest{Cmd: LockClose}, rogue))
	tab.do(ctx, 0, withOpen(LockRequest{Cmd: LockClose}, fair))
	if len(tab.held) != 0 || len(tab.files) != 0 {
		t.Errorf("counts left after every handle closed: %v", tab.held)
	}
}
