//go:build linux

package fusefs

// The kernel's view of a stored file: its pages and size, cached across
// opens. It must agree with the disk whenever a process opens the file,
// whoever changed it, and it must never cost a byte a process wrote.
//
// Invariants (each checked by the test named):
//
//  1. A file opened after a change made on the disk reads the change,
//     whether or not the watch has reported it yet (close-to-open): the
//     open compares the file's state, stated through the new handle, with
//     the state the kernel's view was made from (base), and where they
//     differ drops the kernel's pages and attributes and moves its size.
//     (TestViewCheck; TestCloseToOpen, TestUserMountCloseToOpen and
//     TestCloseToOpenServer in cmd/gsvfs.) Under the writeback cache a
//     file that shrank is cut to the disk's size in the kernel, through
//     every handle, also those opened before (mend in writeback.go;
//     TestCloseToOpen/no-passthrough, TestUserMountCloseToOpen with a
//     reader holding the file; TestIntegrityFsx/user/actor).
//  2. No write the kernel sends is dropped: a write-back that finds the
//     file changed outside since base is written, as every write is, and
//     the kernel's view is brought to the disk after it; so does one
//     beside which the disk's file changed (its size after is not the
//     write's alone). (TestViewOwnChange, TestOwnChangeRunsEveryWrite,
//     TestRunOwnSeesChangeBeside; TestUserMountCoherence/
//     WritesBesideADiskChange, AppendTwoProcesses.)
//  3. Under the writeback cache a file changed outside while the kernel
//     holds it is shared: every later open of it is served with direct
//     I/O, so its writes reach the disk as they return and its reads see
//     the disk, until the kernel forgets the file. The writeback cache
//     stays for files the mount alone changes. (TestViewShared;
//     TestUserMountCoherence/DiskChangeWhileHeldForWriting.)
//  4. The mount's own changes leave the kernel's view as it is, and no
//     other change does: at a report of the watch the file is stated
//     again under the view's lock, where no change of the mount's is
//     under way, and one whose data is base's is the mount's own, unless
//     the view is behind. (TestViewOwnReport, TestReportedStatesAgain,
//     TestRunOwnSeesChangeBeside; TestWritebackOwnWritesAndOutside;
//     TestIntegrityFsx's actor variants.)
//  5. A file opened with passthrough shows the disk's attributes to its
//     opener: an open that finds them other than the kernel was last told
//     drops the kernel's. (TestIntegrityFsx/passthrough/actor in cmd/gsvfs.)
//
// A file's data state is its inode, size and modification time; each
// change after a stat gets a new time (Linux 6.13 and later). On older
// kernels a change from outside of the same size within a clock tick of
// the mount's own may go unseen until the next: gsvfs-mount(1) says so.

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/vfs"
)

// view is what the daemon knows of the kernel's view of one file.
type view struct {
	mu    sync.Mutex
	base  fileState // the disk's state the kernel's view agrees with
	known bool      // base is set
	// behind: a write-back found a change from outside that the kernel
	// has not been brought to yet; reports of the watch are not the
	// mount's own until it is.
	behind bool
	// shared: changed outside while the kernel held it (writeback only).
	shared bool
	// ksize is the largest size the kernel may hold for the file: under
	// the writeback cache it takes none smaller from the daemon.
	ksize int64
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

// set makes s the state the kernel's view agrees with, as when the kernel
// learns of the file, or the mount changed it (O_TRUNC, creation).
func (v *view) set(s fileState) {
	v.mu.Lock()
	v.base, v.known, v.behind, v.ksize = s, true, false, s.size
	v.mu.Unlock()
}

// grew records that the kernel may now hold size for the file.
func (v *view) grew(size int64) {
	v.mu.Lock()
	v.ksize = max(v.ksize, size)
	v.mu.Unlock()
}

// resized records that the kernel holds size for the file (it took it
// from the daemon's reply to a truncate).
func (v *view) resized(size int64) {
	v.mu.Lock()
	v.ksize = size
	v.mu.Unlock()
}

// holdsMore says whether the kernel may hold a larger size than size
// for the file.
func (v *view) holdsMore(size int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ksize > size
}

// check records the file's state now, at an open, and says whether the
// kernel's view must be brought to it (changed outside since base), the
// state it was made from (was), and, under the writeback cache, whether
// the kernel may hold a larger size than now's (long), which only a new
// inode in the kernel mends.
func (v *view) check(now fileState, writeback bool) (changed, long bool, was fileState) {
	changed = !v.known || v.behind || !v.base.sameData(now)
	was = v.base
	if v.behind {
		// A settle is under way: the kernel may be anywhere between base
		// before and base now, so this open brings it to now itself
		// rather than return before that settle is done.
		was.size = -1
	}
	if changed && writeback && v.known {
		v.shared = true
	}
	long = writeback && now.size < v.ksize
	// A change keeps the view behind until the kernel is brought to
	// it (settle): an open meanwhile must not trust the kernel's view.
	v.base, v.known, v.behind = now, true, changed
	return changed, long, was
}

// own records a change the mount made between the states before and
// after (after unknown: ok false), and says whether the file had changed
// outside since base: the kernel's view is then behind the disk.
func (v *view) own(before, after fileState, ok, writeback bool) (outside bool) {
	outside = v.known && !v.base.sameData(before)
	if outside {
		v.behind = true
		v.shared = v.shared || writeback
	}
	v.base, v.known = after, ok
	v.ksize = max(v.ksize, after.size)
	return outside
}

// ownReport says whether the file, found in state s under the view's
// lock, is as the mount's own changes left it: each of them sets base
// under the lock from a stat after it, so any other state is a change
// from outside. (Not a state the watch stated: that may fall inside a
// write, the disk's or the mount's, which moves the size page by page
// after the change time, or be older than base.)
func (v *view) ownReport(s fileState) bool {
	return v.known && !v.behind && v.base.sameData(s)
}

// viewed says whether the daemon keeps the kernel's view of n: stored
// files whose data the kernel caches (not passthrough, which caches
// nothing here; not generated content, served with direct I/O).
func (n *node) viewed(fh gofs.FileHandle) (vfs.HandleAttrer, bool) {
	f, ok := fh.(*fileHandle)
	if !ok || n.volatile {
		return nil, false
	}
	if _, pass := f.PassthroughFd(); pass && !n.srv.writeback {
		return nil, false
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	return ha, ok
}

// passedThrough keeps close-to-open for a file opened with passthrough:
// its pages are the backing file's, true by themselves, but the kernel
// holds its attributes for as long as a watched file's, and the watch's
// report of a change on the disk may come after this open. A size or
// time other than the kernel was last told drops them, so the opener's
// fstat asks again (invariant 5).
func (n *node) passedThrough(ctx context.Context, fh gofs.FileHandle) {
	f, ok := fh.(*fileHandle)
	if !ok || n.volatile {
		return
	}
	ha, ok := f.h.(vfs.HandleAttrer)
	if !ok {
		return
	}
	a, err := ha.Attr(ctx)
	if err != nil {
		return
	}
	n.w.mu.Lock()
	told := n.w.last
	n.w.mu.Unlock()
	if now := keyOf(a); !told.valid || now.size != told.size || !now.mtime.Equal(told.mtime) || !now.ctime.Equal(told.ctime) {
		n.NotifyContent(-1, 0) // attributes alone: the pages are the disk's
	}
}

// opened brings the kernel's view of the file to the disk's as fh opens
// (invariant 1) and returns the open's flags for it: FOPEN_KEEP_CACHE
// where the view held and changes are reported, FOPEN_DIRECT_IO for a
// shared file under the writeback cache (invariant 3). A file the open
// truncates or makes starts a new view: nothing of its old content is
// left in the kernel (and under the writeback cache the kernel holds the
// file's write-backs off during an O_TRUNC open, so no drop could wait).
//
// Under the writeback cache the kernel keeps a larger size for a file
// that shrank until it is truncated: the daemon truncates it through its
// own mount to the disk's size (bringTo, mend). Where it cannot, the
// open takes the file's name from the kernel and fails with ESTALE: the
// kernel looks the name up again, forgets the inode the failed open
// held, and opens a new one of the disk's size. Where a handle still
// holds the old inode, the retry gets it again, served with direct I/O
// (reads see the disk; the size shows once the last handle is closed,
// shrank).
func (n *node) opened(ctx context.Context, fh gofs.FileHandle, flags uint32) (uint32, syscall.Errno) {
	keep := uint32(0)
	if !n.volatile && n.w.watched.Load() && n.srv.watch.on.Load() {
		keep = fuse.FOPEN_KEEP_CACHE // kept true by the watch between opens
	}
	ha, ok := n.viewed(fh)
	if !ok {
		n.passedThrough(ctx, fh)
		return keep, 0
	}
	// The stat and its comparison under one hold of the lock, as in
	// ownChange: a write-back landing between them would move base
	// past the stat and look like a change from outside.
	n.view.mu.Lock()
	a, err := ha.Attr(ctx)
	if err != nil {
		n.view.known = false
		n.view.mu.Unlock()
		return 0, 0
	}
	if flags&(syscall.O_TRUNC|syscall.O_EXCL) != 0 {
		n.view.base, n.view.known, n.view.behind, n.view.ksize = stateOf(a), true, false, a.Size
		n.view.mu.Unlock()
		return keep | n.direct(), 0
	}
	changed, long, was := n.view.check(stateOf(a), n.srv.writeback)
	n.view.mu.Unlock()
	if changed {
		n.settle(a, was)
		keep = 0 // the kernel drops the file's pages as the open ends, too
	}
	if long && n.view.holdsMore(a.Size) && !n.mended(a.Size) {
		n.view.resized(a.Size) // as the retry's new inode has it
		n.shrank()
		n.forgetName()
		return 0, syscall.ESTALE
	}
	if flags&syscall.O_DIRECT != 0 {
		// The kernel writes back only the dirty pages an O_DIRECT
		// request overlaps; on one disk the others are there too.
		n.NotifyContent(0, 0)
	}
	return keep | n.direct(), 0
}

// direct serves an open with direct I/O where its file is shared
// (invariant 3).
func (n *node) direct() uint32 {
	if !n.srv.writeback {
		return 0
	}
	n.view.mu.Lock()
	shared := n.view.shared
	n.view.mu.Unlock()
	if !shared {
		return 0
	}
	return fuse.FOPEN_DIRECT_IO
}

// ownChange runs do, a change to the file through the mount, between two
// stats of it (stat); sized is the size the change leaves from the size
// before it when nobody else changes the file meanwhile. Every change
// runs (invariant 2); one that finds the file changed outside since base,
// or changed beside it, brings the kernel's view to the disk after it,
// from another goroutine: the kernel may be waiting for this very
// write-back before it can drop a page.
func (n *node) ownChange(ctx context.Context, stat func(context.Context) (vfs.Attr, error), sized func(int64) int64, do func()) {
	if !n.srv.writeback || n.volatile {
		// Written through: the kernel's pages took the change as it
		// went, and the next open checks the file anew.
		do()
		return
	}
	if after, was, outside := n.runOwn(ctx, stat, sized, do); outside {
		go n.catchUp(after, was)
	}
}

// runOwn is ownChange's part under the view's lock: it runs do between
// the two stats and says whether the file changed outside before or
// during it (the state after, and base before). An append from the disk
// that lands during a write through the mount shows in the size after
// it, which its change time alone would file under the mount's own.
func (n *node) runOwn(ctx context.Context, stat func(context.Context) (vfs.Attr, error), sized func(int64) int64, do func()) (after vfs.Attr, was fileState, outside bool) {
	v := &n.view
	v.mu.Lock()
	defer v.mu.Unlock()
	before, err := stat(ctx)
	if err != nil {
		v.known = false
		do()
		return after, was, false
	}
	was = v.base
	do()
	after, err = stat(ctx)
	outside = v.own(stateOf(before), stateOf(after), err == nil, n.srv.writeback) && err == nil
	if err == nil && after.Size != sized(before.Size) {
		v.behind, v.shared, outside = true, true, true
	}
	if outside {
		n.srv.watch.outsideWrites.Add(1)
	}
	return after, was, outside
}

// catchUp brings the kernel's view to a, the state a write-back left
// after a change from outside, unless the view moved on meanwhile.
func (n *node) catchUp(a vfs.Attr, was fileState) {
	v := &n.view
	v.mu.Lock()
	current := v.behind && v.known && v.base.sameData(stateOf(a))
	v.mu.Unlock()
	if current {
		n.settle(a, was)
	}
}

// settle brings the kernel's view to a, base already, with the view
// behind until it is done: an open meanwhile brings the view itself
// rather than trust it. A view that moved on meanwhile stays behind for
// the next open to settle.
func (n *node) settle(a vfs.Attr, was fileState) {
	n.bringTo(a, was)
	v := &n.view
	v.mu.Lock()
	if v.known && v.base.sameData(stateOf(a)) {
		v.behind = false
	}
	v.mu.Unlock()
}

// reported takes a report of the watch that the file's data changed, to
// a: the file is stated again under the view's lock, and a state the
// mount's own changes explain leaves the kernel's view (invariant 4); any
// other brings the view to the disk and, under the writeback cache, makes
// the file shared. It says whether it dropped anything.
//
// The watch's own stat cannot decide: taken during a write from outside
// it has the write's change time and part of its size, and the report
// of the write's end then looks like nothing new; taken before an open
// checked the file, it is older than base.
func (n *node) reported(a vfs.Attr) bool {
	a, was, changed := n.view.report(a, n.vn.Attr, n.srv.writeback)
	if changed {
		n.settle(a, was)
	}
	return changed
}

// report is reported's part under the view's lock: it states the file
// again (stat), takes the state for base unless the mount's own changes
// explain it, and says whether it did, with the state it found and the
// base before it.
func (v *view) report(a vfs.Attr, stat func(context.Context) (vfs.Attr, error), writeback bool) (now vfs.Attr, was fileState, changed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if fresh, err := stat(context.Background()); err == nil && fresh.Ino == a.Ino {
		a = fresh // else renamed over since: the report's is this inode's last
	}
	if v.ownReport(stateOf(a)) {
		return a, was, false
	}
	was, known, behind := v.base, v.known, v.behind
	v.base, v.known, v.behind = stateOf(a), true, true
	v.shared = v.shared || writeback
	if !known || behind {
		was.size = -1 // unknown, or a settle under way: the kernel's size may be any
	}
	return a, was, true
}

// bringTo makes the kernel drop its pages of the file (writing the dirty
// ones back first) and its attributes, and take its size a.Size. Without
// the writeback cache the kernel takes sizes from the daemon. Under it
// the kernel keeps its own, save a truncate's answer: the daemon
// truncates the file through its own mount to the disk's size, larger or
// smaller, and answers with the disk's attributes (mend). Where that
// cannot be, a larger size is pushed in (grown) and a smaller one taken
// once the kernel forgets the file (shrank; an open that finds it tries
// mend again, opened).
//
// The push writes the disk's last byte into the kernel's page: over what
// a process may have written there since the drop (the watch's report is
// brought in the background, and a process that saw the change may be
// writing again), so it is the last resort. A truncate's answer moves
// the size alone, and the kernel writes dirty pages back, not over.
func (n *node) bringTo(a vfs.Attr, was fileState) {
	n.NotifyContent(0, 0)
	if !n.srv.writeback {
		return
	}
	current := func() bool { return n.view.settling(stateOf(a)) }
	known := was.size >= 0
	if known && a.Size == was.size {
		return // the pages were all that changed
	}
	done, stale := n.mend(a.Size, current)
	switch {
	case done || stale: // the kernel holds the disk's size (mend's answer), or another settle brought it on
	case known && a.Size < was.size: // no push could lower the kernel's size
		n.shrank()
	case !current(): // brought on meanwhile: no push over what a process wrote since
	case known: // grew
		n.grown(a, true)
	default: // shorter or longer, unknown: the larger size holds
		n.shrank()
		n.grown(a, true)
	}
}

// mended is mend without a guard, for an open: its process waits for it.
func (n *node) mended(size int64) bool {
	done, _ := n.mend(size, nil)
	return done
}

// settling says whether the view is still to be brought to state s: a
// settle for any other state, or one after the view was brought on, has
// nothing left to do.
func (v *view) settling(s fileState) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.known && v.behind && v.base.sameData(s)
}

// forget makes the view start again from the next open, for when the
// kernel was made to drop everything (changes were lost).
func (n *node) forget() {
	n.view.mu.Lock()
	n.view.known, n.view.behind = false, false
	n.view.mu.Unlock()
}

// checkOutside brings the kernel's view of the file open in f to the
// disk's if the file changed outside since base, and says whether it
// could tell.
func (n *node) checkOutside(ctx context.Context, f *fileHandle) bool {
	ha, ok := n.viewed(f)
	if !ok {
		return false
	}
	n.view.mu.Lock()
	if !n.view.known {
		n.view.mu.Unlock()
		return false
	}
	a, err := ha.Attr(ctx)
	if err != nil {
		n.view.mu.Unlock()
		return false
	}
	changed, long, was := n.view.check(stateOf(a), n.srv.writeback)
	n.view.mu.Unlock()
	if changed {
		n.settle(a, was)
	}
	if long {
		n.shrank()
	}
	return true
}
