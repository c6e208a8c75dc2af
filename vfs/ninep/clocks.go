package ninep

import (
	"context"
	"fmt"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// A remote file's locks are the server's (Tlock, Tgetlock): through a
// gsvfs server, the kernel's locks on the backing file, so a mount
// attached to a daemon, or a device's files under /mnt, lock as the
// daemon's own mount does.
//
// Each owner is named to the server by a client id of its own, which
// holds the whole owner (the edge it came through and its id), with a
// proc id of 0: the server tells owners apart by both, and the caller's
// pid is not known when it unlocks (FUSE sends none). So the server
// reports no process for such a lock. 9P has no flock: a client id that
// begins with flockClient asks a gsvfs server for one on the fid's open
// file (each open here has a fid of its own, as flock's locks have their
// open file); any other server takes it for a record lock on the whole
// file, as Linux's 9P client sends flock. The server drops the locks
// taken through a fid when it is clunked, so LockClose has nothing to
// send.

var _ vfs.Locker = (*handle)(nil)

func (h *handle) Lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	if err := vfs.CheckLock(r); err != nil {
		return vfs.Lock{}, err
	}
	if r.Flock {
		r.Start, r.End = 0, vfs.LockEOF
	}
	switch r.Cmd {
	case vfs.LockClose:
		return vfs.Lock{}, nil
	case vfs.LockFlush: // the owner closed a descriptor: its locks go
		r.Cmd, r.Lock = vfs.LockSet, vfs.Lock{Type: vfs.LockUnlock, End: vfs.LockEOF}
	case vfs.LockTest:
		return h.getlock(ctx, r)
	}
	h.quietClose.Store(false) // the close releases the lock: in order
	m := &Tlock{Fid: h.fid, Type: lockTypeToWire(r.Type), Start: r.Start, Length: wireLength(r.Lock),
		ClientID: lockClientID(r)}
	if r.Cmd == vfs.LockWait {
		m.Flags = LockFlagBlock
	}
	rl, err := do[*Rlock](ctx, h.c, m)
	switch {
	case err != nil:
		return vfs.Lock{}, asErr("lock", err)
	case rl.Status == LockSuccess:
		return vfs.Lock{}, nil
	case rl.Status == LockBlocked:
		return vfs.Lock{}, vfs.Error("lock", "", syscall.EAGAIN)
	}
	return vfs.Lock{}, vfs.Error("lock", "", syscall.ENOLCK) // error or grace
}

func (h *handle) getlock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	rg, err := do[*Rgetlock](ctx, h.c, &Tgetlock{Fid: h.fid, lockDesc: lockDesc{Type: lockTypeToWire(r.Type),
		Start: r.Start, Length: wireLength(r.Lock), ClientID: lockClientID(r)}})
	if err != nil {
		return vfs.Lock{}, asErr("getlock", err)
	}
	if rg.Type != LockRead && rg.Type != LockWrite {
		return vfs.Lock{Type: vfs.LockUnlock, Start: r.Start, End: r.End}, nil
	}
	pid := int32(rg.ProcID)
	if pid <= 0 {
		pid = -1
	}
	return vfs.Lock{Type: lockTypeOf(rg.Type), Start: rg.Start, End: vfs.LockEnd(rg.Start, rg.Length), Pid: pid}, nil
}

// flockClient begins the client id of a Tlock that asks for a flock.
const flockClient = "gsvfs-flock "

// lockClientID names r's owner to the server, whole, and says whether r
// is a flock.
func lockClientID(r vfs.LockRequest) string {
	id := fmt.Sprintf("%p %x %s", r.Owner.Edge, r.Owner.ID, r.Owner.Client)
	if r.Flock {
		return flockClient + id
	}
	return "gsvfs " + id
}
