//go:build linux

package fusefs

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/gsvfs/gsvfs/vfs"
)

// ownWrites tells the watch's reports of the mount's own writes to a
// file from changes made outside, under the writeback cache. The watch
// cannot tell them apart, and dropping the kernel's pages at each report
// of the mount's own writes costs dearly there: the kernel writes every
// dirty page of the file back one by one first, and a file just written
// is read back from the daemon rather than from the cache.
//
// Each write through the mount runs between two stats of the file
// (change). If the state before it is the one the mount's last change
// left, nothing came between; if not, a change from outside came, and is
// pending until the watch reports a state at least as new as that
// write's, whose drop covers it. With none pending, a report of a state
// no newer than the mount's last change is of the mount's own changes
// (or of older ones a drop already covered). A file's change time only
// grows, and each change after a stat gets a new one (Linux 6.13 and
// later; earlier kernels keep coarse times, and a change from outside of
// the same size within a tick of the mount's last write may be taken
// for the mount's own). A change made outside in the instant between a
// write's first stat and the write itself goes unnoticed too;
// gsvfs-mount(1) says so.
type ownWrites struct {
	mu   sync.Mutex
	seq  uint64
	last ownState // after the mount's last change; seq 0: none yet
	// foreign is the change that found one from outside before it (0:
	// none pending), and foreignAt the change time it left.
	foreign   uint64
	foreignAt time.Time
}

// ownState is a file's state after a change through the mount, the
// seq'th.
type ownState struct {
	key ownKey
	seq uint64
}

// ownKey is what a write changes of a file's attributes: its blocks are
// left out, since the disk allocates them later (at writeback) without a
// change of its own to report.
type ownKey struct {
	ino          uint64
	size         int64
	mtime, ctime time.Time
}

func ownKeyOf(a vfs.Attr) ownKey {
	return ownKey{ino: a.Ino, size: a.Size, mtime: a.Mtime, ctime: a.Ctime}
}

// change runs do, a change to the file through the mount, between two
// stats of it (stat), one change at a time. Without the writeback cache,
// or when a stat fails, it only runs do.
func (n *node) change(ctx context.Context, stat func(context.Context) (vfs.Attr, error), do func()) {
	if !n.srv.writeback || n.volatile {
		do()
		return
	}
	o := &n.own
	o.mu.Lock()
	defer o.mu.Unlock()
	before, err := stat(ctx)
	if err != nil {
		do()
		return
	}
	o.seq++
	if o.foreign == 0 && (o.last.seq == 0 || o.last.key != ownKeyOf(before)) {
		o.foreign = o.seq
	}
	do()
	if after, err := stat(ctx); err == nil {
		o.last = ownState{ownKeyOf(after), o.seq}
		if o.foreign == o.seq {
			o.foreignAt = after.Ctime
		}
	}
}

// mine says whether a report of the file in state a is of the mount's
// own writes, which leave the kernel's cache true. A report it denies
// leads to a drop; one of a state at least as new as the change that
// found a change from outside settles that change.
func (n *node) mine(a vfs.Attr) bool {
	if !n.srv.writeback {
		return false
	}
	o := &n.own
	o.mu.Lock()
	defer o.mu.Unlock()
	k, last := ownKeyOf(a), o.last.key
	switch {
	case o.last.seq == 0 || k.ino != last.ino:
		return false
	case o.foreign != 0:
		if !o.foreignAt.IsZero() && !k.ctime.Before(o.foreignAt) {
			o.foreign, o.foreignAt = 0, time.Time{}
		}
		return false
	}
	return k.ctime.Before(last.ctime) || k == last
}

// fresh records the state of a file the mount just opened with O_TRUNC
// or made (O_EXCL) through fh as the mount's own: the kernel holds none
// of its old content, so no report of an earlier change can leave it
// stale.
func (n *node) fresh(ctx context.Context, fh gofs.FileHandle, flags uint32) {
	f, ok := fh.(*fileHandle)
	if !ok || f.writerOf != n || flags&(syscall.O_TRUNC|syscall.O_EXCL) == 0 {
		return
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return
	}
	o := &n.own
	o.mu.Lock()
	defer o.mu.Unlock()
	if a, err := ha.Attr(ctx); err == nil {
		o.seq++
		o.last = ownState{ownKeyOf(a), o.seq}
		o.foreign, o.foreignAt = 0, time.Time{}
	}
}
