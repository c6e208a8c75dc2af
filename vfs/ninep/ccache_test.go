package ninep

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// The client cache's rules, one by one, on the cache alone: its clock is
// the test's, and what the server says is made up.

// testCache is a cache of size entries whose server's notices flow, on
// a clock of the test's.
func testCache(size int) (*cache, *testenv.Clock) {
	c := newCache(size)
	clock := testenv.NewClock(time.Unix(1_700_000_000, 0))
	c.now = clock.Now
	c.notified = true
	return c, clock
}

func fileAttr(ino uint64, size int64, mtime int64) vfs.Attr {
	return vfs.Attr{Ino: ino, Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: size, Mtime: time.Unix(mtime, 0), Ctime: time.Unix(mtime, 0)}
}

func attrKey(ino uint64) cacheKey { return cacheKey{cAttr, ino, ""} }

// TestCacheKeepsWhatNoticesVouchFor: a watched file's entry, fetched
// while notices flow and none of it came since, stays however long;
// anything else (unwatched, notices off, a notice naming the file, or
// for what was found by name its directory, applied during the fetch)
// is held for CacheTTL only. Notices of other files leave it be: a
// storm of changes elsewhere must not make a warm walk cold.
func TestCacheKeepsWhatNoticesVouchFor(t *testing.T) {
	const file, dir = 1, 50
	tests := []struct {
		name     string
		watched  bool
		notified bool
		noticeIn []vfs.Change // applied while the reply is on its way
		kept     bool         // still held CacheTTL on
		held     bool         // the file is held as the notice says before the fetch
	}{
		{"watched, notices flowing", true, true, nil, true, false},
		{"not watched", false, true, nil, false, false},
		{"notices off", true, false, nil, false, false},
		{"a notice of another file during the fetch", true, true, []vfs.Change{{Attr: fileAttr(99, 1, 1)}}, true, false},
		{"a notice of a name in another directory", true, true, []vfs.Change{{Dir: 98, Name: "x", Attr: fileAttr(99, 1, 1)}}, true, false},
		{"a notice of the file as held during the fetch", true, true, []vfs.Change{{Attr: fileAttr(file, 10, 1)}}, false, true},
		{"a notice of a name in its directory", true, true, []vfs.Change{{Dir: dir, Name: "other"}}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, clock := testCache(100)
			c.notified = tc.notified
			if tc.held {
				c.put(attrKey(file), fileAttr(file, 10, 1), 1, true, c.since())
			}
			gen := c.since()
			if tc.noticeIn != nil {
				c.apply(tc.noticeIn)
			}
			c.putVia(attrKey(file), fileAttr(file, 10, 1), 1, tc.watched, gen, dir)
			if _, ok := c.get(attrKey(file)); !ok {
				t.Fatal("not held at once")
			}
			clock.Advance(CacheTTL)
			if _, ok := c.get(attrKey(file)); ok != tc.kept {
				t.Errorf("held CacheTTL on: %v, want %v", ok, tc.kept)
			}
		})
	}
}

// TestCacheMarksBounded: past maxMarks files marked, the marks are
// forgotten and every reply fetched before is taken as marked.
func TestCacheMarksBounded(t *testing.T) {
	c, _ := testCache(100)
	before := c.since()
	for ino := uint64(1000); ino < 1000+maxMarks+1; ino++ {
		c.dropFile(ino)
	}
	if len(c.dropped.at) > maxMarks {
		t.Errorf("%d drops remembered, bound %d", len(c.dropped.at), maxMarks)
	}
	c.put(attrKey(1), fileAttr(1, 10, 1), 1, true, before)
	if _, ok := c.get(attrKey(1)); ok {
		t.Error("a reply fetched before the marks were forgotten is held")
	}
}

// TestCacheRefusesRepliesOlderThanDrop: a reply fetched before a change
// dropped its file (this client's own, or a notice) is not held at all;
// one fetched after is.
func TestCacheRefusesRepliesOlderThanDrop(t *testing.T) {
	drops := []struct {
		name string
		drop func(c *cache)
	}{
		{"own write", func(c *cache) { c.dropChanged(1) }},
		{"notice", func(c *cache) { c.apply([]vfs.Change{{Attr: fileAttr(1, 20, 2)}}) }},
		{"lost", func(c *cache) { c.apply([]vfs.Change{{Lost: true}}) }},
	}
	for _, d := range drops {
		t.Run(d.name, func(t *testing.T) {
			c, _ := testCache(100)
			before := c.since()
			d.drop(c)
			c.put(attrKey(1), fileAttr(1, 10, 1), 1, true, before)
			if _, ok := c.get(attrKey(1)); ok {
				t.Error("a reply fetched before the drop is held")
			}
			c.put(attrKey(1), fileAttr(1, 20, 2), 1, true, c.since())
			if _, ok := c.get(attrKey(1)); !ok {
				t.Error("a reply fetched after the drop is not held")
			}
		})
	}
}

// TestCacheApplyDropsWhatChanged: a notice drops what it makes stale and
// nothing else. Attributes equal to those held (the echo of this
// client's own change) stay; others go; a Lost takes everything; a
// change to a name drops its directory's listing and the name's miss.
func TestCacheApplyDropsWhatChanged(t *testing.T) {
	const dir, file, other = 10, 11, 12
	tests := []struct {
		name      string
		change    vfs.Change
		attrKept  bool // file's attributes
		otherKept bool // an unrelated file's
		listKept  bool // dir's listing
	}{
		{"attributes as held", vfs.Change{Attr: fileAttr(file, 5, 1)}, true, true, true},
		{"a new size", vfs.Change{Attr: fileAttr(file, 6, 1)}, false, true, true},
		{"a new mtime", vfs.Change{Attr: fileAttr(file, 5, 2)}, false, true, true},
		{"content, attributes as held", vfs.Change{Attr: fileAttr(file, 5, 1), Data: true}, true, true, true},
		{"the name, as held", vfs.Change{Dir: dir, Name: "f", Attr: fileAttr(file, 5, 1)}, true, true, false},
		{"the name, gone", vfs.Change{Dir: dir, Name: "f"}, false, true, false},
		{"lost", vfs.Change{Lost: true}, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testCache(100)
			gen := c.since()
			c.put(attrKey(file), fileAttr(file, 5, 1), 1, true, gen)
			c.put(attrKey(other), fileAttr(other, 5, 1), 1, true, gen)
			c.put(cacheKey{cList, dir, ""}, []vfs.DirEntry{{Name: "f", Ino: file}}, 1, true, gen)
			c.apply([]vfs.Change{tc.change})
			for _, k := range []struct {
				what string
				key  cacheKey
				want bool
			}{{"the file's attributes", attrKey(file), tc.attrKept}, {"another file's", attrKey(other), tc.otherKept},
				{"the directory's listing", cacheKey{cList, dir, ""}, tc.listKept}} {
				if _, ok := c.get(k.key); ok != k.want {
					t.Errorf("%s held: %v, want %v", k.what, ok, k.want)
				}
			}
		})
	}
}

// TestCacheCountsContentChanges: every change to a file's content the
// client knows of moves the count its read-ahead windows check: its own
// write or setattr, a notice of new content (even with attributes as
// held: two writes in one tick of the disk's clock), a notice of other
// attributes, a loss; a notice of attributes as held does not, nor a
// change to another file. A file no handle holds has no count.
func TestCacheCountsContentChanges(t *testing.T) {
	const file = 11
	tests := []struct {
		name  string
		do    func(c *cache)
		moved bool
	}{
		{"own write or setattr", func(c *cache) { c.dropChanged(file) }, true},
		{"notice of content", func(c *cache) { c.apply([]vfs.Change{{Dir: 1, Name: "f", Attr: fileAttr(file, 5, 1), Data: true}}) }, true},
		{"notice of a new size", func(c *cache) { c.apply([]vfs.Change{{Attr: fileAttr(file, 9, 1)}}) }, true},
		{"notice, attributes as held", func(c *cache) { c.apply([]vfs.Change{{Attr: fileAttr(file, 5, 1)}}) }, false},
		{"another file's write", func(c *cache) { c.dropChanged(file + 1) }, false},
		{"lost", func(c *cache) { c.apply([]vfs.Change{{Lost: true}}) }, true},
		{"notices turned off", func(c *cache) { c.notify(false) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testCache(100)
			c.put(attrKey(file), fileAttr(file, 5, 1), 1, true, c.since())
			n := c.openContent(file)
			before := n.changes.Load()
			tc.do(c)
			if moved := n.changes.Load() != before; moved != tc.moved {
				t.Errorf("count moved: %v, want %v", moved, tc.moved)
			}
		})
	}
	c, _ := testCache(100)
	a, b := c.openContent(file), c.openContent(file)
	if a != b {
		t.Error("two handles of one file count apart")
	}
	c.closeContent(file)
	c.closeContent(file)
	if n := len(c.contents); n != 0 {
		t.Errorf("after both handles closed: %d counts kept, want 0", n)
	}
}

// TestCacheBounded: the cache holds at most its size, dropping the
// least recently used; a listing costing more than an eighth of it is
// not held.
func TestCacheBounded(t *testing.T) {
	c, _ := testCache(64)
	for ino := range uint64(100) {
		c.put(attrKey(ino+1), fileAttr(ino+1, 1, 1), 1, true, c.since())
		c.get(attrKey(1)) // used: kept
	}
	if n := c.size(); n > 64 {
		t.Errorf("holds %d, want at most 64", n)
	}
	if _, ok := c.get(attrKey(1)); !ok {
		t.Error("the most recently used entry was dropped")
	}
	if _, ok := c.get(attrKey(2)); ok {
		t.Error("the least recently used entry is still held")
	}
	big := make([]vfs.DirEntry, 9)
	for i := range big {
		big[i] = vfs.DirEntry{Name: fmt.Sprint(i)}
	}
	c.put(cacheKey{cList, 1000, ""}, big, len(big), true, c.since())
	if _, ok := c.get(cacheKey{cList, 1000, ""}); ok {
		t.Error("a listing costing more than an eighth of the cache is held")
	}
}

// TestCacheNoticesWaitForOwnChange: a notice touching a file a change of
// this client's is in flight on (whose notice comes ahead of its reply)
// waits until the change is answered, and is then judged against the
// answer: one that agrees drops nothing, one that does not drops the
// file. A Lost is never held back.
func TestCacheNoticesWaitForOwnChange(t *testing.T) {
	const file = 11
	for _, tc := range []struct {
		name    string
		noticed vfs.Attr
		kept    bool
	}{
		{"the echo", fileAttr(file, 6, 2), true},
		{"another change", fileAttr(file, 7, 3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testCache(100)
			c.put(attrKey(file), fileAttr(file, 5, 1), 1, true, c.since())
			done := c.owning(file)
			c.apply([]vfs.Change{{Dir: 10, Name: "f", Data: true, Attr: tc.noticed}})
			if v, ok := c.get(attrKey(file)); !ok || v.(vfs.Attr).Size != 5 {
				t.Fatalf("while the change is in flight: %v %+v, want the attributes held before", ok, v)
			}
			c.putBrief(attrKey(file), fileAttr(file, 6, 2), 1) // the change's answer
			done()
			if v, ok := c.get(attrKey(file)); tc.kept && (!ok || v.(vfs.Attr).Size != 6) || !tc.kept && ok && v.(vfs.Attr).Size == 6 {
				t.Errorf("after the answer: %v %+v; want the answer kept: %v", ok, v, tc.kept)
			}
		})
	}
	c, _ := testCache(100)
	c.put(attrKey(file), fileAttr(file, 5, 1), 1, true, c.since())
	defer c.owning(file)()
	c.apply([]vfs.Change{{Lost: true}})
	if _, ok := c.get(attrKey(file)); ok {
		t.Error("a Lost waited for a change in flight")
	}
}

// TestCacheEntryWithDirStated: a change of a name whose batch brings the
// directory's attributes too leaves the directory's attributes held if
// they are as held (the echo of this client's own create), its listing
// dropped; without them, the directory's attributes go.
func TestCacheEntryWithDirStated(t *testing.T) {
	const dir = 10
	dirAttr := vfs.Attr{Ino: dir, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Mtime: time.Unix(7, 0), Ctime: time.Unix(7, 0)}
	for _, stated := range []bool{true, false} {
		c, _ := testCache(100)
		gen := c.since()
		c.put(attrKey(dir), dirAttr, 1, true, gen)
		c.put(cacheKey{cList, dir, ""}, []vfs.DirEntry{{Name: "f", Ino: 11}}, 1, true, gen)
		cs := []vfs.Change{{Dir: dir, Name: "new", Attr: fileAttr(12, 0, 7)}}
		if stated { // ahead of the name's change: a batch is in no order
			cs = append([]vfs.Change{{Attr: dirAttr}}, cs...)
		}
		c.apply(cs)
		if _, ok := c.get(attrKey(dir)); ok != stated {
			t.Errorf("dir stated %v: its attributes held %v, want %v", stated, ok, stated)
		}
		if _, ok := c.get(cacheKey{cList, dir, ""}); ok {
			t.Errorf("dir stated %v: its listing is held after a name in it changed", stated)
		}
	}
}
