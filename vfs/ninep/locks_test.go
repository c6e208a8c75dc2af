package ninep

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// The lock table follows fcntl(2): other owners' overlapping locks
// conflict unless both are read locks; an owner's own locks are replaced
// over the range it relocks or unlocks, splitting where needed.
func TestLockTable(t *testing.T) {
	a, b := &conn{}, &conn{}
	ownerA := lockOwner{a, "host", 1}
	ownerA2 := lockOwner{a, "host", 2} // another process on the same connection
	ownerB := lockOwner{b, "host", 1}  // same pid, another connection
	lk := func(o lockOwner, write bool, start, length uint64) byteLock {
		return byteLock{owner: o, write: write, start: start, end: lockEnd(start, length)}
	}
	steps := []struct {
		what        string
		lock        byteLock
		unlock      bool
		wantBlocked bool
	}{
		{"A write-locks 0-99", lk(ownerA, true, 0, 100), false, false},
		{"B cannot read 50-59", lk(ownerB, false, 50, 10), false, true},
		{"A2 cannot write to EOF from 99", lk(ownerA2, true, 99, 0), false, true},
		{"B may write 100-199", lk(ownerB, true, 100, 100), false, false},
		{"A relocks 0-99 for reading", lk(ownerA, false, 0, 100), false, false},
		{"A2 may read 10-19 now", lk(ownerA2, false, 10, 10), false, false},
		{"A unlocks 40-59, splitting its lock", lk(ownerA, false, 40, 20), true, false},
		{"B may write 40-59", lk(ownerB, true, 40, 20), false, false},
		{"B cannot write 60-60", lk(ownerB, true, 60, 1), false, true},
		{"A2 unlocks everything", lk(ownerA2, false, 0, 0), true, false},
	}
	tab := newLockTable()
	for _, s := range steps {
		if got, _ := tab.set(7, s.lock, s.unlock); got != s.wantBlocked {
			t.Fatalf("%s: blocked %v, want %v", s.what, got, s.wantBlocked)
		}
	}
	// A holds read locks on 0-39 and 60-99; B writes 40-59 and 100-199.
	for _, tc := range []struct {
		probe byteLock
		want  *byteLock
	}{
		{lk(ownerA2, true, 0, 1), &byteLock{owner: ownerA, start: 0, end: 39}},
		{lk(ownerA2, false, 45, 1), &byteLock{owner: ownerB, write: true, start: 40, end: 59}},
		{lk(ownerA2, false, 0, 40), nil},
		{lk(ownerA2, true, 200, 0), nil},
	} {
		got, ok := tab.test(7, tc.probe)
		switch {
		case tc.want == nil && ok:
			t.Errorf("test %d+%d: got conflict %+v, want none", tc.probe.start, tc.probe.end, got)
		case tc.want != nil && (!ok || got != *tc.want):
			t.Errorf("test %d-%d: got %+v (conflict %v), want %+v", tc.probe.start, tc.probe.end, got, ok, *tc.want)
		}
	}
	tab.releaseConn(b)
	if _, ok := tab.test(7, lk(ownerA2, true, 40, 20)); ok {
		t.Error("B's locks survived its connection")
	}
	tab.releaseConn(a)
	if len(tab.files) != 0 {
		t.Errorf("locks left after every connection ended: %+v", tab.files)
	}
	if lockEnd(math.MaxUint64-1, 10) != math.MaxUint64 {
		t.Error("a range past the largest offset does not run to EOF")
	}
}

// A blocking lock waits for the holder's release, and gives up when its
// request is flushed.
func TestLockWait(t *testing.T) {
	a, b := &conn{}, &conn{}
	holder := byteLock{owner: lockOwner{a, "h", 1}, write: true, end: math.MaxUint64}
	waiter := byteLock{owner: lockOwner{b, "h", 2}, write: true, end: math.MaxUint64}
	tab := newLockTable()
	tab.set(1, holder, false)

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- tab.wait(ctx, 1, waiter) }()
	select {
	case err := <-got:
		t.Fatalf("the waiter got the lock while it was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	tab.set(1, holder, true) // release
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter after the release: %v", err)
		}
	case <-time.After(hangBound):
		t.Fatal("the waiter was not woken by the release")
	}

	go func() { got <- tab.wait(ctx, 1, holder) }() // now the first owner waits
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("flushed waiter: got %v, want context.Canceled", err)
		}
	case <-time.After(hangBound):
		t.Fatal("a flushed waiter kept waiting")
	}
}
