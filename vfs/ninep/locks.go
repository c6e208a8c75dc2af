package ninep

import (
	"context"
	"math"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// lockTable holds the POSIX byte-range locks 9P clients take, shared by
// every connection of a server so clients exclude each other. A lock
// belongs to an owner: the connection, the client's id (its host name)
// and the process id it sent.
//
// A conflicting Tlock without the block flag gets LockBlocked at once. One
// with it (F_SETLKW) waits in the server until the lock is free or the
// request is flushed: Linux's client would otherwise sleep its whole lock
// timeout (30 s by default) before asking again.
type lockTable struct {
	mu      sync.Mutex
	files   map[uint64][]byteLock // by inode number
	changed chan struct{}         // closed and replaced at every release
}

type lockOwner struct {
	conn   *conn
	client string
	proc   uint32
}

// byteLock covers [start, end] inclusive.
type byteLock struct {
	owner      lockOwner
	write      bool
	start, end uint64
}

func newLockTable() *lockTable {
	return &lockTable{files: map[uint64][]byteLock{}, changed: make(chan struct{})}
}

// released wakes every waiter to try again. t.mu must be held.
func (t *lockTable) released() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// wait sets a lock, waiting while another owner's lock is in the way,
// until ctx ends.
func (t *lockTable) wait(ctx context.Context, ino uint64, want byteLock) error {
	for {
		blocked, changed := t.set(ino, want, false)
		if !blocked {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func lockEnd(start, length uint64) uint64 {
	if length == 0 || start+length-1 < start {
		return math.MaxUint64
	}
	return start + length - 1
}

func (l byteLock) conflicts(o byteLock) bool {
	return l.owner != o.owner && (l.write || o.write) && l.start <= o.end && o.start <= l.end
}

// set applies a lock or unlock and reports whether another owner's lock
// was in the way, with a channel that is closed when locks are next
// released.
func (t *lockTable) set(ino uint64, want byteLock, unlock bool) (blocked bool, changed <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	locks := t.files[ino]
	if !unlock {
		for _, l := range locks {
			if l.conflicts(want) {
				return true, t.changed
			}
		}
	}
	// The owner's own locks over the range are replaced: cut them
	// around it, as fcntl(2) does when a process relocks or unlocks.
	var out []byteLock
	for _, l := range locks {
		if l.owner != want.owner || l.end < want.start || l.start > want.end {
			out = append(out, l)
			continue
		}
		if l.start < want.start {
			left := l
			left.end = want.start - 1
			out = append(out, left)
		}
		if l.end > want.end {
			right := l
			right.start = want.end + 1
			out = append(out, right)
		}
	}
	if !unlock {
		out = append(out, want)
	}
	if len(out) == 0 {
		delete(t.files, ino)
	} else {
		t.files[ino] = out
	}
	t.released() // a relock to read or a split may free a waiter too
	return false, nil
}

// test returns the first lock of another owner that would block want.
func (t *lockTable) test(ino uint64, want byteLock) (byteLock, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.files[ino] {
		if l.conflicts(want) {
			return l, true
		}
	}
	return byteLock{}, false
}

// releaseConn drops every lock a connection's clients held.
func (t *lockTable) releaseConn(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ino, locks := range t.files {
		kept := locks[:0]
		for _, l := range locks {
			if l.owner.conn != c {
				kept = append(kept, l)
			}
		}
		if len(kept) == 0 {
			delete(t.files, ino)
		} else {
			t.files[ino] = kept
		}
	}
	t.released()
}

func (c *conn) lock(ctx context.Context, m *Tlock) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if m.Type > LockUnlock {
			return nil, vfs.Error("lock", "", syscall.EINVAL)
		}
		a, err := f.attrOf(ctx)
		if err != nil {
			return nil, err
		}
		want := byteLock{owner: lockOwner{c, m.ClientID, m.ProcID}, write: m.Type == LockWrite,
			start: m.Start, end: lockEnd(m.Start, m.Length)}
		if m.Type != LockUnlock && m.Flags&LockFlagBlock != 0 {
			if err := c.srv.locks.wait(ctx, a.Ino, want); err != nil {
				return nil, err // flushed: the client gave up waiting
			}
			return &Rlock{Status: LockSuccess}, nil
		}
		if blocked, _ := c.srv.locks.set(a.Ino, want, m.Type == LockUnlock); blocked {
			return &Rlock{Status: LockBlocked}, nil
		}
		return &Rlock{Status: LockSuccess}, nil
	})
}

func (c *conn) getlock(ctx context.Context, m *Tgetlock) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		a, err := f.attrOf(ctx)
		if err != nil {
			return nil, err
		}
		want := byteLock{owner: lockOwner{c, m.ClientID, m.ProcID}, write: m.Type == LockWrite,
			start: m.Start, end: lockEnd(m.Start, m.Length)}
		r := &Rgetlock{lockDesc{Type: LockUnlock, Start: m.Start, Length: m.Length, ProcID: m.ProcID, ClientID: m.ClientID}}
		if l, ok := c.srv.locks.test(a.Ino, want); ok {
			r.Type, r.Start, r.ProcID, r.ClientID = LockRead, l.start, l.owner.proc, l.owner.client
			if l.write {
				r.Type = LockWrite
			}
			r.Length = 0
			if l.end != math.MaxUint64 {
				r.Length = l.end - l.start + 1
			}
		}
		return r, nil
	})
}
