//go:build linux

package fusefs

import (
	"context"
	"math"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/gsvfs/gsvfs/vfs"
)

// Under the writeback cache the kernel keeps what a process wrote through
// the mount as dirty pages and sends them later: at writeback, close(2),
// fsync(2), or when it drops the file's pages. A page holds more than the
// bytes written into it: the rest is what the file held when the kernel
// read the page in. Sent after the file changed on the disk, it would put
// back what the disk's writer overwrote. The page guard keeps the rule of
// one disk, the last writer wins:
//
//   - base is the file's state on the disk that the kernel's pages agree
//     with: left by the mount's own last change, or read when the kernel
//     was last made to drop the file's pages.
//   - Each change through the mount runs between two stats of the file. A
//     state before it other than base means the file changed outside
//     since (stale): pages written back then were dirtied over what the
//     disk no longer holds, and are dropped unwritten. The kernel is made
//     to drop its pages at once (settle), and base moves to the new state.
//   - A report of the watch is of the mount's own changes when it names
//     a state no newer than base (by change time); any other is a change
//     from outside, settled the same way. So the kernel keeps the pages of a file the mount
//     wrote (4 KiB writes stay gathered, a file just written reads back
//     from the cache), and loses them when someone else writes.
//   - An open settles a change the watch has not reported yet, so a file
//     opened after another process changed it on the disk reads the
//     change (close-to-open), whatever the watch's delay.
//
// A file's data state is its inode, size and modification time; each
// change after a stat gets a new time (Linux 6.13 and later). On older
// kernels a change from outside of the same size within a clock tick of
// the mount's own may go unseen, and a page dirtied after a change from
// outside but sent before the watch reports it is dropped: gsvfs-mount(1)
// says both. The guard runs only on files whose changes the watch
// reports: without reports a stale base would never move.
type pageGuard struct {
	mu    sync.Mutex
	base  fileState
	known bool // base is set
	stale bool // changed outside since base; the kernel's pages not yet dropped
}

// fileState is what a change of content moves in a file's attributes;
// the change time orders states.
type fileState struct {
	ino   uint64
	size  int64
	mtime time.Time
	ctime time.Time
}

func stateOf(a vfs.Attr) fileState {
	return fileState{ino: a.Ino, size: a.Size, mtime: a.Mtime, ctime: a.Ctime}
}

// sameData says whether s and o hold the same content: a change of mode
// or owner alone leaves the kernel's pages true.
func (s fileState) sameData(o fileState) bool {
	return s.ino == o.ino && s.size == o.size && s.mtime.Equal(o.mtime)
}

// guarded says whether the page guard runs for n: stored files under the
// writeback cache whose changes the watch reports.
func (n *node) guarded() bool {
	return n.srv.writeback && !n.volatile && n.w.watched.Load() && n.srv.watch.on.Load()
}

// ownChange runs do, a change to the file through the mount, between two
// stats of it (stat). A write of the kernel's dirty pages (pages) that
// finds the file changed outside is dropped: do does not run and it
// reports true. A change that finds one from outside settles it after do,
// so the kernel reads the disk's content and size again.
func (n *node) ownChange(ctx context.Context, stat func(context.Context) (vfs.Attr, error), pages bool, do func()) (dropped bool) {
	if !n.guarded() {
		do()
		return false
	}
	g := &n.guard
	g.mu.Lock()
	before, err := stat(ctx)
	if err != nil {
		g.known = false
		g.mu.Unlock()
		do()
		return false
	}
	if g.known && !g.base.sameData(stateOf(before)) {
		g.stale = true
	}
	if g.stale && pages {
		g.mu.Unlock()
		n.srv.watch.droppedPages.Add(1)
		return true
	}
	do()
	after, err := stat(ctx)
	if err == nil && !g.stale {
		g.base, g.known = stateOf(after), true
	}
	stale := g.stale && err == nil
	g.mu.Unlock()
	if stale {
		n.settle(after)
	}
	return false
}

// settle makes the kernel drop its pages of a file that changed outside
// and take its size, now a: a larger one at once (grown), a smaller one
// once nobody holds the file (shrank; an unknown size counts as larger).
// Pages the kernel writes back meanwhile were dirtied before the change
// and are dropped (ownChange).
func (n *node) settle(a vfs.Attr) {
	g := &n.guard
	g.mu.Lock()
	g.stale = true
	was := int64(math.MaxInt64) // unknown: maybe larger
	if g.known {
		was = g.base.size
	}
	g.mu.Unlock()
	n.NotifyContent(0, 0)
	n.shrank(a, was)
	n.grown(a, true) // a no-op for a file that shrank
	g.mu.Lock()
	g.base, g.known, g.stale = stateOf(a), true, false
	g.mu.Unlock()
}

// own says whether a report of the file in state a is of the mount's own
// changes, which leave the kernel's pages true.
func (n *node) own(a vfs.Attr) bool {
	if !n.guarded() {
		return false
	}
	g := &n.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known || g.stale {
		return false
	}
	// Not the whole state: the watch's stat may fall inside one of the
	// mount's writes, which moves the size page by page after the
	// change time.
	return a.Ino == g.base.ino && !a.Ctime.After(g.base.ctime)
}

// opened checks, as fh opens, that the file did not change outside since
// the kernel's pages of it were true, and settles a change the watch has
// not reported yet. A file the mount truncates as it opens (O_TRUNC) or
// just made starts a new base: nothing of its old content is left in the
// kernel, and the kernel holds the file's writers off its pages then, so
// no drop could be waited for. So does the first open for writing; a
// file the mount only reads is kept by the watch alone.
func (n *node) opened(ctx context.Context, fh gofs.FileHandle, flags uint32) {
	f, ok := fh.(*fileHandle)
	if !ok || !n.guarded() {
		return
	}
	n.guard.mu.Lock()
	fresh := flags&(syscall.O_TRUNC|syscall.O_EXCL) != 0 ||
		!n.guard.known && flags&syscall.O_ACCMODE != syscall.O_RDONLY
	n.guard.mu.Unlock()
	if fresh {
		n.rebase(ctx, f)
	} else {
		n.checkOutside(ctx, f)
	}
	if flags&syscall.O_DIRECT != 0 && flags&syscall.O_TRUNC == 0 {
		// The kernel writes back only the dirty pages an O_DIRECT
		// request overlaps; on one disk the others are there too.
		n.NotifyContent(0, 0)
	}
}

// rebase makes the file's state now, read through f, the guard's base.
// The stat is taken under the guard's lock, as ownChange's are, so that
// no write-back lands between it and its use.
func (n *node) rebase(ctx context.Context, f *fileHandle) {
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return
	}
	g := &n.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	a, err := ha.Attr(ctx)
	g.base, g.known, g.stale = stateOf(a), err == nil, false
}

// checkOutside settles a change from outside that the file open in f
// had since the kernel's pages of it were true, and says whether the
// guard could tell (it knows the file's state and could stat it).
func (n *node) checkOutside(ctx context.Context, f *fileHandle) bool {
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return false
	}
	// The stat and the comparison under one hold of the lock, as in
	// ownChange: a write-back landing between them would move base past
	// the stat and look like a change from outside.
	g := &n.guard
	g.mu.Lock()
	if !g.known {
		g.mu.Unlock()
		return false
	}
	a, err := ha.Attr(ctx)
	if err != nil {
		g.mu.Unlock()
		return false
	}
	changed := g.stale || !g.base.sameData(stateOf(a))
	g.mu.Unlock()
	if changed {
		n.settle(a)
	}
	return true
}

// forget makes the guard start again from the next change or open, for
// when the kernel was made to drop everything (changes were lost).
func (n *node) forget() {
	n.guard.mu.Lock()
	n.guard.known, n.guard.stale = false, false
	n.guard.mu.Unlock()
}
