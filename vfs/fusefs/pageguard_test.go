//go:build linux

package fusefs

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/vfs"
)

// The rules of the kernel's view of a file (pageguard.go), on the view
// alone; the mounts of cmd/gsvfs check them against the kernel.

var (
	t0 = time.Unix(1000, 0)
	t1 = time.Unix(1001, 0)
	t2 = time.Unix(1002, 0)
)

// st is a file's state: inode 7 unless said, size, modified and changed at tm.
func st(size int64, tm time.Time) fileState {
	return fileState{ino: 7, size: size, mtime: tm, ctime: tm}
}

// TestViewCheck: an open finds a change from outside by the data state
// (invariant 1), makes the file shared under the writeback cache
// (invariant 3), and tells where the kernel may hold a larger size than
// the disk's.
func TestViewCheck(t *testing.T) {
	for _, c := range []struct {
		name                      string
		base, now                 fileState
		ksize                     int64
		writeback                 bool
		changed, long, wantShared bool
	}{
		{"unchanged", st(100, t0), st(100, t0), 100, true, false, false, false},
		{"mode or owner only", st(100, t0), fileState{ino: 7, size: 100, mtime: t0, ctime: t1}, 100, true, false, false, false},
		{"rewritten in place", st(100, t0), st(100, t1), 100, true, true, false, true},
		{"grown", st(100, t0), st(5000, t1), 100, true, true, false, true},
		{"shrunk", st(10000, t0), st(3, t1), 10000, true, true, true, true},
		{"shrunk, no writeback cache", st(10000, t0), st(3, t1), 10000, false, true, false, false},
		{"replaced", st(100, t0), fileState{ino: 8, size: 100, mtime: t0, ctime: t0}, 100, true, true, false, true},
		{"the kernel still larger from the mount's own writes", st(3, t0), st(3, t0), 8192, true, false, true, false},
	} {
		v := &view{base: c.base, known: true, ksize: c.ksize}
		changed, long, was := v.check(c.now, c.writeback)
		if changed != c.changed || long != c.long || v.shared != c.wantShared {
			t.Errorf("%s: changed %v long %v shared %v, want %v %v %v", c.name, changed, long, v.shared, c.changed, c.long, c.wantShared)
		}
		if was != c.base || v.base != c.now || !v.known || v.behind != changed {
			t.Errorf("%s: was %v base %v known %v behind %v, want was the old base, base now, behind until settled if changed", c.name, was, v.base, v.known, v.behind)
		}
	}
	behind := &view{base: st(100, t1), known: true, behind: true, ksize: 100}
	if changed, _, was := behind.check(st(100, t1), true); !changed || was.size != -1 {
		t.Errorf("a view behind (a settle under way): changed %v, was size %d; want changed, and the size the kernel holds unknown (-1)", changed, was.size)
	}
	v := &view{}
	if changed, _, _ := v.check(st(1, t0), true); !changed || v.shared {
		t.Errorf("a view that knows nothing: changed %v shared %v, want changed (drop to be sure), not shared", changed, v.shared)
	}
}

// TestViewOwnChange: a change of the mount's own moves base to the state
// after it; one that finds the file changed outside first says so, so the
// kernel is brought to the disk after the write, which runs all the same
// (invariant 2), and the file becomes shared (invariant 3).
func TestViewOwnChange(t *testing.T) {
	for _, c := range []struct {
		name                  string
		before                fileState
		writeback             bool
		outside, behind, want bool
	}{
		{"the mount alone", st(100, t0), true, false, false, false},
		{"after a change outside", st(50, t1), true, true, true, true},
		{"after a change outside, no writeback cache", st(50, t1), false, true, true, false},
	} {
		v := &view{base: st(100, t0), known: true, ksize: 100}
		after := st(8192, t2)
		outside := v.own(c.before, after, true, c.writeback)
		if outside != c.outside || v.behind != c.behind || v.shared != c.want {
			t.Errorf("%s: outside %v behind %v shared %v, want %v %v %v", c.name, outside, v.behind, v.shared, c.outside, c.behind, c.want)
		}
		if v.base != after || v.ksize != 8192 {
			t.Errorf("%s: base %v ksize %d, want the state after (%v) and its size", c.name, v.base, v.ksize, after)
		}
	}
	v := &view{base: st(100, t0), known: true}
	v.own(st(100, t0), fileState{}, false, true)
	if v.known {
		t.Errorf("after a change whose result could not be stated, the view still knows base %v", v.base)
	}
}

// TestViewOwnReport: a file found in base's data state is as the mount's
// own changes left it (invariant 4); other data, another inode, or any
// state while the view is behind is a change from outside.
func TestViewOwnReport(t *testing.T) {
	for _, c := range []struct {
		name          string
		base          fileState
		known, behind bool
		report        fileState
		want          bool
	}{
		{"base itself", st(100, t1), true, false, st(100, t1), true},
		{"mode or owner only", st(100, t1), true, false, fileState{ino: 7, size: 100, mtime: t1, ctime: t2}, true},
		{"inside a write: base's change time, another size", st(8192, t1), true, false, st(4096, t1), false},
		{"older", st(8192, t1), true, false, st(4096, t0), false},
		{"newer", st(100, t1), true, false, st(100, t2), false},
		{"another inode", st(100, t1), true, false, fileState{ino: 8, size: 100, mtime: t1, ctime: t1}, false},
		{"behind", st(100, t1), true, true, st(100, t1), false},
		{"unknown", fileState{}, false, false, st(100, t1), false},
	} {
		v := &view{base: c.base, known: c.known, behind: c.behind}
		if got := v.ownReport(c.report); got != c.want {
			t.Errorf("%s: ownReport %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReportedStatesAgain: a report of the watch is judged by the file's
// state under the view's lock, not by the watch's stat (invariant 4).
// The stat of a report may fall inside a write from outside, with the
// write's change time and part of its size: taken for base, it made the
// report of the write's end look like the mount's own, and a held
// descriptor kept the part's size (seen by the model checker's actor on
// the writeback paths). One older than an open's check is no change.
func TestReportedStatesAgain(t *testing.T) {
	attr := func(s fileState) vfs.Attr {
		return vfs.Attr{Ino: s.ino, Size: s.size, Mtime: s.mtime, Ctime: s.ctime, Mode: syscall.S_IFREG}
	}
	inside, end := st(0x10000, t1), st(0x1ce86, t1) // a write's middle and end: one change time
	for _, c := range []struct {
		name        string
		base        fileState
		report, now fileState
		statErr     error
		changed     bool
		want        fileState // base after
	}{
		{"the end of a write whose middle was reported", inside, end, end, nil, true, end},
		{"a report older than an open's check", end, inside, end, nil, false, end},
		{"the mount's own change", end, end, end, nil, false, end},
		{"renamed over since: the report's inode", end, st(50, t2), fileState{ino: 8, size: 1, mtime: t2, ctime: t2}, nil, true, st(50, t2)},
		{"no stat: the report's state", inside, end, fileState{}, syscall.EIO, true, end},
	} {
		v := &view{}
		v.set(c.base)
		stat := func(context.Context) (vfs.Attr, error) { return attr(c.now), c.statErr }
		got, was, changed := v.report(attr(c.report), stat, true)
		if changed != c.changed || v.base != c.want {
			t.Errorf("%s: changed %v, base %v; want %v, %v", c.name, changed, v.base, c.changed, c.want)
		}
		if changed && (stateOf(got) != c.want || was != c.base || !v.behind || !v.shared) {
			t.Errorf("%s: settles to %v from %v (behind %v shared %v), want %v from %v, behind and shared", c.name, stateOf(got), was, v.behind, v.shared, c.want, c.base)
		}
	}
}

// TestViewShared: under the writeback cache a file that changed outside
// while the kernel held it is served with direct I/O from then on
// (invariant 3).
func TestViewShared(t *testing.T) {
	for _, writeback := range []bool{true, false} {
		srv := &server{writeback: writeback}
		n := &node{srv: srv}
		n.view.set(st(100, t0))
		if got := n.direct(); got != 0 {
			t.Errorf("writeback %v: a file only the mount changed is served with flags %#x, want 0", writeback, got)
		}
		n.view.mu.Lock()
		n.view.check(st(100, t1), writeback)
		n.view.mu.Unlock()
		got := n.direct()
		if want := map[bool]uint32{true: fuse.FOPEN_DIRECT_IO, false: 0}[writeback]; got != want {
			t.Errorf("writeback %v: after a change outside, served with flags %#x, want %#x", writeback, got, want)
		}
	}
}

// TestPageWritersCounted: the flusher runs while a handle may dirty the
// kernel's pages: writable handles served through the pages count, from
// open to release; read-only and appending ones do not.
func TestPageWritersCounted(t *testing.T) {
	srv := &server{writeback: true}
	n := &node{srv: srv}
	var fs []*fileHandle
	for _, c := range []struct {
		writes, appends bool
		want            int64
	}{
		{false, false, 0},
		{true, true, 0},
		{true, false, 1},
		{true, false, 2},
	} {
		f := &fileHandle{srv: srv, appends: c.appends}
		n.hold(f, c.writes)
		fs = append(fs, f)
		if got := srv.pageWriters.Load(); got != c.want {
			t.Errorf("after holding a handle (writes %v, appends %v): %d page writers, want %d", c.writes, c.appends, got, c.want)
		}
	}
	for _, f := range fs {
		f.unhold()
	}
	if got := srv.pageWriters.Load(); got != 0 || n.writers.open != 0 || n.writers.n != 0 {
		t.Errorf("after every release: %d page writers, %d open, %d writing, want none", got, n.writers.open, n.writers.n)
	}
}

// TestOwnChangeRunsEveryWrite: a write-back that finds the file changed
// outside is written all the same (invariant 2), and counted.
func TestOwnChangeRunsEveryWrite(t *testing.T) {
	srv := &server{writeback: true}
	n := &node{srv: srv}
	n.view.set(st(100, t0))
	states := []vfs.Attr{
		{Ino: 7, Size: 50, Mtime: t1, Ctime: t1, Mode: syscall.S_IFREG}, // changed outside
		{Ino: 7, Size: 4096, Mtime: t2, Ctime: t2, Mode: syscall.S_IFREG},
	}
	i := 0
	stat := func(context.Context) (vfs.Attr, error) { a := states[min(i, 1)]; i++; return a, nil }
	ran := false
	after, was, outside := n.runOwn(context.Background(), stat, func(int64) int64 { return 4096 }, func() { ran = true })
	if !ran || !outside {
		t.Fatalf("a write-back after a change outside: ran %v, outside %v; want both", ran, outside)
	}
	if after.Size != 4096 || was != st(100, t0) || !n.view.behind {
		t.Errorf("after %v, was %v, behind %v: want the state after the write, the old base, and the view behind", after, was, n.view.behind)
	}
	if got := srv.watch.outsideWrites.Load(); got != 1 {
		t.Errorf("write-backs counted as finding a change outside: %d, want 1", got)
	}
}

// TestOpenFlagsUnderWriteback: the kernel fills partial pages by reading,
// so a write-only open is made read-write, with the caller's own flags to
// fall back on; appends and generated files keep theirs (writeback
// invariants 1 and 2).
func TestOpenFlagsUnderWriteback(t *testing.T) {
	for _, c := range []struct {
		name             string
		writeback, vol   bool
		flags            int
		wantOpen, wantRe int
	}{
		{"write-only", true, false, syscall.O_WRONLY, syscall.O_RDWR, syscall.O_WRONLY},
		{"read-only", true, false, syscall.O_RDONLY, syscall.O_RDONLY, -1},
		{"append", true, false, syscall.O_WRONLY | syscall.O_APPEND, syscall.O_WRONLY | syscall.O_APPEND, -1},
		{"generated", true, true, syscall.O_WRONLY, syscall.O_WRONLY, -1},
		{"no writeback cache", false, false, syscall.O_WRONLY, syscall.O_WRONLY, -1},
	} {
		s := &server{writeback: c.writeback}
		open, retry := s.openFlags(uint32(c.flags), c.vol)
		if open != c.wantOpen || retry != c.wantRe {
			t.Errorf("%s: open %#x retry %#x, want %#x %#x", c.name, open, retry, c.wantOpen, c.wantRe)
		}
	}
}

// TestRunOwnSeesChangeBeside: a change of the disk's that lands during a
// write through the mount shows in the size after it (an append from the
// disk), though its change time is older than the write's, and so does an
// append the kernel sent from an end it held short: the kernel's view is
// then brought to the disk (invariant 2), and the watch's report of it is
// not taken for the mount's own (invariant 4).
func TestRunOwnSeesChangeBeside(t *testing.T) {
	for _, c := range []struct {
		name    string
		off     int64 // where the kernel sent the append: the end it held
		after   int64
		outside bool
	}{
		{"the write alone", 100, 100 + 10, false},
		{"an append from the disk beside it", 100, 100 + 10 + 7, true},
		{"the kernel's end behind the disk's", 90, 100 + 10, true},
	} {
		srv := &server{writeback: true}
		n := &node{srv: srv}
		n.view.set(st(100, t0))
		states := []vfs.Attr{
			{Ino: 7, Size: 100, Mtime: t0, Ctime: t0, Mode: syscall.S_IFREG},
			{Ino: 7, Size: c.after, Mtime: t2, Ctime: t2, Mode: syscall.S_IFREG},
		}
		i := 0
		stat := func(context.Context) (vfs.Attr, error) { a := states[min(i, 1)]; i++; return a, nil }
		f := &fileHandle{appends: true}
		_, _, outside := n.runOwn(context.Background(), stat, f.writeSize(c.off, 10), func() {})
		if outside != c.outside {
			t.Errorf("%s: outside %v, want %v", c.name, outside, c.outside)
		}
		report := stateOf(states[1]) // the file as the watch's report finds it
		if own := n.view.ownReport(report); own == c.outside {
			t.Errorf("%s: the report of state %v taken for the mount's own: %v, want %v", c.name, report, own, !c.outside)
		}
	}
}
