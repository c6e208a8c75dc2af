package ninep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// readVia opens n with flags and reads it whole, returning the text and
// the requests the open cost.
func readVia(t *testing.T, c *Client, n vfs.Node, flags int) (string, int64) {
	t.Helper()
	ctx := context.Background()
	var h vfs.Handle
	var err error
	cost := costOf(c, func() { h, err = n.Open(ctx, flags) })
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := vfs.ReadAll(ctx, h, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return string(got), cost
}

// TestCachedOpenSendsNothing (clazy.go's invariant 1): a stored file
// whose attributes the notices vouch for opens for reading without a
// request, stat through the handle included, and a close of it sends
// nothing either; an open for writing, or with O_TRUNC, asks the server.
func TestCachedOpenSendsNothing(t *testing.T) {
	c, root, _ := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), "held") })
	ctx := context.Background()
	f := lookup(t, root, "f")
	if got, _ := readVia(t, c, f, os.O_RDONLY); got != "held" {
		t.Fatalf("first read: %q", got)
	}
	got := costOf(c, func() {
		h, err := f.Open(ctx, os.O_RDONLY|syscall.O_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := h.(vfs.HandleAttrer).Attr(ctx); err != nil || a.Size != 4 {
			t.Errorf("stat through the handle: %+v, %v", a, err)
		}
		h.Close()
	})
	if got != 0 {
		t.Errorf("open, fstat, close of a cached file: %d requests, want 0", got)
	}
	for _, flags := range []int{os.O_RDWR, os.O_WRONLY, os.O_RDONLY | os.O_TRUNC} {
		var h vfs.Handle
		var err error
		if got := costOf(c, func() { h, err = f.Open(ctx, flags) }); err != nil || got != 1 {
			t.Errorf("open with flags %#x: %d requests, %v; want 1", flags, got, err)
		}
		if h != nil {
			h.Close()
		}
	}
}

// TestCachedOpenOnlyWhenVouched (invariant 1): where the notices do not
// vouch for the file (held for CacheTTL only, or on a server of this
// machine's disk), the open asks the server.
func TestCachedOpenOnlyWhenVouched(t *testing.T) {
	t.Run("held briefly", func(t *testing.T) {
		c, root, _ := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), "x") })
		ctx := context.Background()
		f := lookup(t, root, "f")
		a, _ := f.Attr(ctx)
		c.cache.putBrief(cacheKey{cAttr, a.Ino, ""}, a, 1) // as after this client's own change
		if _, cost := readVia(t, c, f, os.O_RDONLY); cost != 1 {
			t.Errorf("open of a file held briefly: %d requests, want 1", cost)
		}
	})
	t.Run("exact", func(t *testing.T) {
		dir := t.TempDir()
		mustWrite(t, filepath.Join(dir, "f"), "x")
		c, root := exactDisk(t, dir)
		f := lookup(t, root, "f")
		readVia(t, c, f, os.O_RDONLY)
		if _, cost := readVia(t, c, f, os.O_RDONLY); cost == 0 {
			t.Error("open on a server of this machine's disk answered by the cache")
		}
	})
}

// TestCachedOpenReadsTheServer (invariant 2): a file opened from the
// cache reads what the server has, opening it there once, and takes
// locks there.
func TestCachedOpenReadsTheServer(t *testing.T) {
	c, root, _ := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), "content") })
	ctx := context.Background()
	f := lookup(t, root, "f")
	readVia(t, c, f, os.O_RDONLY)
	h, err := f.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	buf := make([]byte, 3)
	for _, off := range []int64{0, 3} {
		if n, err := h.ReadAt(ctx, buf, off); n != 3 || err != nil {
			t.Fatalf("read at %d: %d, %v", off, n, err)
		}
	}
	if string(buf) != "ten" {
		t.Errorf("second read: %q, want ten", buf)
	}
	if _, err := h.(vfs.Locker).Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Lock: vfs.Lock{Type: vfs.LockRead, End: vfs.LockEOF}, Owner: vfs.LockOwner{Client: "test", ID: 1}}); err != nil {
		t.Errorf("read lock through a cached open: %v", err)
	}
	if _, err := h.WriteAt(ctx, []byte("x"), 0); vfs.Errno(err) != syscall.EBADF {
		t.Errorf("write through a read-only open: %v, want EBADF", err)
	}
}

// TestCachedOpenAfterNotice (invariant 3): a file changed on the disk,
// its notice come, opens on the server and reads the new content.
func TestCachedOpenAfterNotice(t *testing.T) {
	c, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), "old") })
	f := lookup(t, root, "f")
	readVia(t, c, f, os.O_RDONLY)
	before := c.Notices().Changes
	mustWrite(t, filepath.Join(dir, "f"), "new!")
	noticesSettle(t, c, before, 1)
	got, cost := readVia(t, c, f, os.O_RDONLY)
	if got != "new!" || cost == 0 {
		t.Errorf("after a change's notice: read %q, open cost %d requests; want new! and a request", got, cost)
	}
}

// lookup is dir's child name, which must be there.
func lookup(t *testing.T, dir vfs.Node, name string) vfs.Node {
	t.Helper()
	kid, _, err := vfs.LookupAttr(context.Background(), dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// exactDisk serves dir to a client told the server shares its disk
// (ClientOptions.Exact), its notices on.
func exactDisk(t *testing.T, dir string) (*Client, vfs.Node) {
	t.Helper()
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serve(t, d.Root())
	c, root := dialWith(t, addr, "", ClientOptions{Exact: true})
	noticesOn(t, c)
	return c, root
}

// TestHeldContentServesReads (cheld.go's invariant 1): a small file read
// whole once is read again through a cached open without a request, as
// when the kernel dropped its pages; a file read only in part is not
// held, nor is one larger than maxHeldContent.
func TestHeldContentServesReads(t *testing.T) {
	big := strings.Repeat("b", maxHeldContent+1)
	c, root, _ := extDisk(t, func(dir string) {
		mustWrite(t, filepath.Join(dir, "small"), "held whole")
		mustWrite(t, filepath.Join(dir, "part"), "read in part")
		mustWrite(t, filepath.Join(dir, "big"), big)
	})
	ctx := context.Background()
	small, part, large := lookup(t, root, "small"), lookup(t, root, "part"), lookup(t, root, "big")
	readVia(t, c, small, os.O_RDONLY)
	readVia(t, c, large, os.O_RDONLY)
	h, err := part.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	h.ReadAt(ctx, make([]byte, 4), 0)
	h.Close()

	var got string
	if cost := costOf(c, func() { got, _ = readVia(t, c, small, os.O_RDONLY) }); cost != 0 || got != "held whole" {
		t.Errorf("a small file read whole, read again: %q for %d requests, want it for none", got, cost)
	}
	if cost := costOf(c, func() { got, _ = readVia(t, c, part, os.O_RDONLY) }); cost == 0 || got != "read in part" {
		t.Errorf("a file read in part, read whole: %q for %d requests, want it from the server", got, cost)
	}
	if cost := costOf(c, func() { got, _ = readVia(t, c, large, os.O_RDONLY) }); cost == 0 || got != big {
		t.Errorf("a file of %d bytes read again: %d requests, want it from the server", len(big), cost)
	}
}

// TestHeldContentGoesWithChange (cheld.go's invariant 2): this client's
// own write, and a change on the disk whose notice came, leave no held
// content behind, whatever the size.
func TestHeldContentGoesWithChange(t *testing.T) {
	c, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), "aaaa") })
	ctx := context.Background()
	f := lookup(t, root, "f")
	readVia(t, c, f, os.O_RDONLY)
	h, err := f.Open(ctx, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("bb"), 0); err != nil {
		t.Fatal(err)
	}
	h.Close()
	// A stat holds the new attributes again before the next open, which
	// the cache then answers: only the content it holds would be stale.
	if _, err := f.Attr(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := readVia(t, c, f, os.O_RDONLY); got != "bbaa" {
		t.Errorf("after this client's write: read %q, want bbaa", got)
	}
	before := c.Notices().Changes
	mustWrite(t, filepath.Join(dir, "f"), "cccc") // the same size
	noticesSettle(t, c, before, 1)
	if _, err := f.Attr(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := readVia(t, c, f, os.O_RDONLY); got != "cccc" {
		t.Errorf("after a change on the disk of the same size: read %q, want cccc", got)
	}
}

// TestHeldContentKeepsToItsShare (cheld.go's invariant 1): content fills
// at most its share of the cache, and what is held past it is refused,
// not paid for with the attributes a walk needs.
func TestHeldContentKeepsToItsShare(t *testing.T) {
	c := newCache(1024)
	c.notify(true)
	data := make([]byte, 1000) // 4 entries' worth each
	gen := c.since()
	for ino := uint64(1); ino <= 200; ino++ {
		a := vfs.Attr{Ino: ino, Mode: syscall.S_IFREG | 0o644, Size: int64(len(data)), Watched: true}
		c.put(cacheKey{cAttr, ino, ""}, a, 1, true, gen)
		c.putContent(ino, data, gen)
	}
	if c.held > c.max/heldShare || c.held < c.max/heldShare-5 {
		t.Errorf("content holds %d of the cache's %d, want its share, %d", c.held, c.max, c.max/heldShare)
	}
	for ino := uint64(1); ino <= 200; ino++ {
		if _, ok := c.get(cacheKey{cAttr, ino, ""}); !ok {
			t.Fatalf("the attributes of file %d went for content", ino)
		}
	}
}
