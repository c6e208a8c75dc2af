package ninep

import (
	"context"
	"errors"
	"math"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// Tlock and Tgetlock act on the open fid's handle (vfs.LockHandle): on a
// stored file they are the kernel's locks on the backing file, so they
// exclude host processes, FUSE callers and other 9P clients alike. A lock
// belongs to an owner: the connection, the client's id (its host name) and
// the process id it sent. The locks taken through a fid go when it is
// clunked, so every lock of a connection goes with it. The connection pays
// for its locks (vfs.LockAccount), within a quarter of its open limit.
//
// A conflicting Tlock without the block flag gets LockBlocked at once. One
// with it (F_SETLKW) waits in the server until the lock is free or the
// request is flushed: Linux's client would otherwise sleep its whole lock
// timeout (30 s by default) before asking again.

func (c *conn) lock(ctx context.Context, m *Tlock) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		cmd := vfs.LockSet
		if m.Type != LockUnlock && m.Flags&LockFlagBlock != 0 {
			cmd = vfs.LockWait
		}
		_, err := f.lock(ctx, c.lockRequest(cmd, m.Type, m.Start, m.Length, m.ProcID, m.ClientID))
		switch {
		case err == nil:
			return &Rlock{Status: LockSuccess}, nil
		case errors.Is(err, syscall.EAGAIN):
			return &Rlock{Status: LockBlocked}, nil
		}
		return nil, err // flushed (EINTR): the client gave up waiting
	})
}

func (c *conn) getlock(ctx context.Context, m *Tgetlock) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		l, err := f.lock(ctx, c.lockRequest(vfs.LockTest, m.Type, m.Start, m.Length, m.ProcID, m.ClientID))
		if err != nil {
			return nil, err
		}
		r := &Rgetlock{lockDesc{Type: LockUnlock, Start: m.Start, Length: m.Length, ProcID: m.ProcID, ClientID: m.ClientID}}
		if l.Type != vfs.LockUnlock {
			r.lockDesc = lockDesc{Type: lockTypeToWire(l.Type), Start: l.Start, Length: wireLength(l), ProcID: uint32(max(l.Pid, 0))}
		}
		return r, nil
	})
}

// lockRequest is a Tlock's or Tgetlock's request. A type out of range
// fails in vfs.CheckLock.
func (c *conn) lockRequest(cmd vfs.LockCmd, typ wireLockType, start, length uint64, proc uint32, client string) vfs.LockRequest {
	return vfs.LockRequest{Cmd: cmd, Owner: vfs.LockOwner{Edge: c, Client: client, ID: uint64(proc)},
		Account: vfs.LockAccount{Who: c, Limit: vfs.LockLimit(c.srv.opts.MaxOpen)},
		Flock:   strings.HasPrefix(client, flockClient), // a gsvfs client's flock (clocks.go)
		Lock:    vfs.Lock{Type: lockTypeOf(typ), Start: start, End: vfs.LockEnd(start, length), Pid: int32(proc)}}
}

// lockTypeOf reads a lock type of the wire; one out of range is no
// vfs.LockType either, and fails in vfs.CheckLock.
func lockTypeOf(typ wireLockType) vfs.LockType {
	switch typ {
	case LockRead:
		return vfs.LockRead
	case LockWrite:
		return vfs.LockWrite
	case LockUnlock:
		return vfs.LockUnlock
	}
	return math.MaxUint8
}

// lockTypeToWire is t as the wire numbers it.
func lockTypeToWire(t vfs.LockType) wireLockType {
	switch t {
	case vfs.LockRead:
		return LockRead
	case vfs.LockWrite:
		return LockWrite
	}
	return LockUnlock
}

// wireLength is l's length as the wire says it: 0 runs to the end.
func wireLength(l vfs.Lock) uint64 {
	if l.End == vfs.LockEOF {
		return 0
	}
	return l.End - l.Start + 1
}

// lock carries out r on the fid's open handle (EBADF when it has none).
func (f *fid) lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	f.mu.Lock()
	h := f.handle
	if h != nil && r.Cmd != vfs.LockTest {
		f.locked = true
	}
	f.mu.Unlock()
	if h == nil {
		return vfs.Lock{}, vfs.Error("lock", "", syscall.EBADF)
	}
	a, err := f.attrOf(ctx)
	if err != nil {
		return vfs.Lock{}, err
	}
	r.Open = f
	return vfs.LockHandle(ctx, h, a.Ino, r)
}

// unlockHandle drops the locks taken through the fid's handle h before it
// closes.
func (f *fid) unlockHandle(h vfs.Handle, locked bool) {
	if locked {
		vfs.LockHandle(context.Background(), h, 0, vfs.LockRequest{Cmd: vfs.LockClose, Open: f})
	}
}
