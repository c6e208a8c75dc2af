package ninep

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// gatedFile is a stored file whose reads past gateAt wait until the gate
// opens, counting how many wait at once.
type gatedFile struct {
	vfs.Leaf
	ino     uint64
	data    []byte
	gateAt  int64
	gate    chan struct{}
	waiting atomic.Int32
	most    atomic.Int32
}

func (g *gatedFile) Attr(context.Context) (vfs.Attr, error) {
	return vfs.Attr{Ino: g.ino, Mode: syscall.S_IFREG | 0o444, Nlink: 1, Size: int64(len(g.data)),
		Mtime: time.Unix(1_700_000_000, 0)}, nil
}

func (g *gatedFile) SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error) {
	return vfs.Attr{}, vfs.Error("setattr", "gated", syscall.EPERM)
}

func (g *gatedFile) Open(context.Context, int) (vfs.Handle, error) { return gatedHandle{g}, nil }

type gatedHandle struct{ g *gatedFile }

func (h gatedHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	g := h.g
	if off >= g.gateAt {
		n := g.waiting.Add(1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
		g.waiting.Add(-1)
	}
	if off >= int64(len(g.data)) {
		return 0, nil
	}
	return copy(p, g.data[off:]), nil
}

func (gatedHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "gated", syscall.EBADF)
}

func (gatedHandle) Close() error { return nil }

// A file read in sequence has several reads in flight at once (read
// ahead), so a link with delay moves a window per round trip, not one
// message; the bytes are the file's, and the window's memory is given
// back when the file is closed.
func TestSequentialReadKeepsReadsInFlight(t *testing.T) {
	const size = 6 << 20
	g := &gatedFile{ino: vfs.NewIno(), data: make([]byte, size), gateAt: 1 << 20, gate: make(chan struct{})}
	for i := range g.data {
		g.data[i] = byte(i * 7 / 5)
	}
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": g}))
	c, root := dial(t, addr, "")
	// The client asks for notices in the background, and is refused
	// (the tree does not watch): that is over before anything is counted.
	waitUntil(t, "the notices asked for", func() bool { return c.SentByType()["watch"] > 0 })
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() { // as FUSE reads: 128 KiB at a time, in order
		var all []byte
		buf := make([]byte, 128<<10)
		for off := int64(0); ; off += int64(len(buf)) {
			n, err := h.ReadAt(context.Background(), buf, off)
			all = append(all, buf[:n]...)
			if err != nil || n < len(buf) {
				break
			}
		}
		got <- all
	}()
	testenv.WaitFor(t, hangBound, "two reads waiting on the server at once", func() bool { return g.waiting.Load() >= 2 })
	close(g.gate)
	var all []byte
	within(t, "the rest of the file", func() error { all = <-got; return nil })
	if !bytes.Equal(all, g.data) {
		t.Errorf("read %d bytes, not the file's %d", len(all), len(g.data))
	}
	t.Logf("reads waiting at once, at most: %d", g.most.Load())
	h.Close()
	testenv.WaitFor(t, hangBound, "the read-ahead giving its memory back after close", func() bool { return c.raHeld.Load() == 0 })
}

// A generated file (QID version 0) is never read ahead: its reads may
// block or have effects, so each is the caller's own.
func TestGeneratedFileNotReadAhead(t *testing.T) {
	tree, _ := blockTree(t)
	_, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	h, err := walk(t, root, "block").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.(*handle).ra != nil {
		t.Error("a generated file's handle reads ahead")
	}
}

// readTo reads h from off to its end in reads of FUSE's size, as the
// kernel does up to a file's end.
func readTo(t *testing.T, h vfs.Handle, off int64) []byte {
	t.Helper()
	var all []byte
	buf := make([]byte, 128<<10)
	for {
		n, err := h.ReadAt(context.Background(), buf, off)
		all, off = append(all, buf[:n]...), off+int64(n)
		if err == io.EOF || err == nil && n == 0 {
			return all
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
}

// TestOwnChangesReachWindows is issue 28's defect 1 (and 4) at the
// client: a file read to its end through a handle, then changed through
// this client (a truncate up or down through the handle or the node, a
// write through another handle), reads as changed through the handle
// that read ahead: the bytes a truncate up adds are there (zeros), a
// truncate to mid-page leaves no old bytes past the new end, another
// handle's write shows. Before the fix the window's short chunk "ended
// the file" at its old size, and copy_file_range through a mount spun.
func TestOwnChangesReachWindows(t *testing.T) {
	const size = 0x22cc7
	zeros := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name   string
		change func(ctx context.Context, t *testing.T, n vfs.Node, h vfs.Handle)
		at     int64
		want   []byte
	}{
		{"truncate up through the handle", func(ctx context.Context, t *testing.T, _ vfs.Node, h vfs.Handle) {
			truncate(ctx, t, h.(vfs.HandleAttrer), 0x34c5b)
		}, 0x23000, zeros(0x34c5b - 0x23000)},
		{"truncate up through the node", func(ctx context.Context, t *testing.T, n vfs.Node, _ vfs.Handle) {
			truncate(ctx, t, n, 0x34c5b)
		}, 0x23000, zeros(0x34c5b - 0x23000)},
		{"truncate to mid-page", func(ctx context.Context, t *testing.T, _ vfs.Node, h vfs.Handle) {
			truncate(ctx, t, h.(vfs.HandleAttrer), 0x22000+100)
		}, 0x22000, bytes.Repeat([]byte("A"), 100)},
		{"a write through another handle", func(ctx context.Context, t *testing.T, n vfs.Node, _ vfs.Handle) {
			o, err := n.Open(ctx, os.O_RDWR)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if _, err := o.WriteAt(ctx, []byte("BB"), size-1); err != nil {
				t.Fatal(err)
			}
			if f, ok := o.(vfs.Flusher); ok {
				f.Flush(ctx)
			}
		}, size - 2, []byte("ABB")},
	}
	for _, window := range []int64{0, DefaultWriteBehind} {
		_, addr := serve(t, newDisk(t))
		_, root := dialWith(t, addr, "", ClientOptions{WriteBehind: window})
		for i, tc := range tests {
			t.Run(fmt.Sprintf("%s/writebehind=%d", tc.name, window), func(t *testing.T) {
				ctx := vfs.WithFlushAtClose(context.Background())
				n, h, err := root.Create(ctx, fmt.Sprint("f", i), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				if _, err := h.WriteAt(ctx, bytes.Repeat([]byte("A"), size), 0); err != nil {
					t.Fatal(err)
				}
				if got := readTo(t, h, 0); len(got) != size {
					t.Fatalf("read back %d bytes, want %d", len(got), size)
				}
				tc.change(ctx, t, n, h)
				if got := readTo(t, h, tc.at); !bytes.Equal(got, tc.want) {
					t.Errorf("read from %#x after the change: %d bytes %.8q..., want %d %.8q...", tc.at, len(got), got, len(tc.want), tc.want)
				}
			})
		}
	}
}

// truncate sets the size of what s is (a node, or an open handle).
func truncate(ctx context.Context, t *testing.T, s interface {
	SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error)
}, size int64) {
	t.Helper()
	a, err := s.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize, Size: size})
	if err != nil || a.Size != size {
		t.Fatalf("truncate to %#x: size %#x, %v", size, a.Size, err)
	}
}

// grownFile serves a stored file (written behind, read ahead) from
// memory, with no change notices, and returns the file, an open handle
// and the client.
func grownFile(t *testing.T, data []byte) (*heldWrites, vfs.Handle, *Client) {
	t.Helper()
	g := newHeldWrites()
	close(g.gate)
	g.data = data
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": g}))
	c, root := dial(t, addr, "")
	// The client asks for notices in the background, and is refused
	// (the tree does not watch): that is over before anything is counted.
	waitUntil(t, "the notices asked for", func() bool { return c.SentByType()["watch"] > 0 })
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if h.(*handle).ra == nil {
		t.Fatal("a stored file's handle reads nothing ahead")
	}
	return g, h, c
}

// TestWindowEndAskedAgain: a read that reached the end of the file does
// not answer the next one: a file that grew with nothing said (no
// notices here) shows its new bytes to the reader at its end (tail -f).
func TestWindowEndAskedAgain(t *testing.T) {
	g, h, _ := grownFile(t, bytes.Repeat([]byte("a"), 300<<10))
	if got := readTo(t, h, 0); len(got) != 300<<10 {
		t.Fatalf("read %d bytes, want %d", len(got), 300<<10)
	}
	for i, more := range []string{"bbb", "cccc", strings.Repeat("d", 600<<10)} {
		end := int64(len(g.data))
		g.mu.Lock()
		g.data = append(g.data, more...)
		g.mu.Unlock()
		if got := readTo(t, h, end); string(got) != more {
			t.Errorf("growth %d: read from the old end: %d bytes, want %d", i, len(got), len(more))
		}
	}
}

// TestReadAtEndOneTread: a reader that keeps reading where a growing file
// ends, a page at a time from the page's start as the kernel does under
// tail -f, sends one Tread per read and no window: a window's chunks past
// the end cost round trips (and their flushes) the reader waits behind.
func TestReadAtEndOneTread(t *testing.T) {
	g, h, c := grownFile(t, []byte("line 0\n"))
	buf := make([]byte, 4096)
	for i := 1; i <= 5; i++ {
		g.mu.Lock()
		g.data = fmt.Appendf(g.data, "line %d\n", i)
		want := string(g.data)
		g.mu.Unlock()
		before := c.SentByType()
		n, err := h.ReadAt(context.Background(), buf, 0)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		after := c.SentByType()
		if got := string(buf[:n]); got != want {
			t.Errorf("read %d: %q, want %q", i, got, want)
		}
		if got := after["read"] - before["read"]; got != 1 {
			t.Errorf("read %d: %d Treads, want 1", i, got)
		}
		if got := after["flush"] - before["flush"]; got != 0 {
			t.Errorf("read %d: %d Tflushes, want 0", i, got)
		}
	}
}

// TestUnwatchedWindowExpires: what a window read of a file the server
// does not watch is served for CacheTTL at most: past it, a read in
// sequence asks the server again.
func TestUnwatchedWindowExpires(t *testing.T) {
	g, h, c := grownFile(t, bytes.Repeat([]byte("a"), 2<<20))
	clock := testenv.NewClock(time.Now())
	c.cache.mu.Lock()
	c.cache.now = clock.Now
	c.cache.mu.Unlock()
	buf := make([]byte, 128<<10)
	for off := int64(0); off < 2*int64(len(buf)); off += int64(len(buf)) { // the window starts
		if _, err := h.ReadAt(context.Background(), buf, off); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	g.data = bytes.Repeat([]byte("b"), len(g.data))
	g.mu.Unlock()
	clock.Advance(CacheTTL)
	if got := readTo(t, h, 2*int64(len(buf))); !bytes.Equal(got, g.data[2*len(buf):]) {
		t.Errorf("read on, CacheTTL after the window was read: %d bytes of 'b' of %d, want all", bytes.Count(got, []byte("b")), len(got))
	}
}

// TestWindowsTakeHalfTheMemory: the windows of all open files together
// hold at most half of the client's reply memory, and a read past what
// they may hold still reads the file whole.
func TestWindowsTakeHalfTheMemory(t *testing.T) {
	g := newHeldWrites()
	close(g.gate)
	for i := range 4 << 20 {
		g.data = append(g.data, byte(i*7/5))
	}
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": g}))
	const memory = 2 << 20
	c, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{Memory: memory}})
	var hs []vfs.Handle
	for range 2 {
		h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		hs = append(hs, h)
	}
	got := make([][]byte, len(hs))
	buf := make([]byte, 128<<10)
	for off := int64(0); off < int64(len(g.data)); off += int64(len(buf)) {
		for i, h := range hs { // the two in turn, each in sequence
			n, err := h.ReadAt(context.Background(), buf, off)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			got[i] = append(got[i], buf[:n]...)
			if held := c.raHeld.Load(); held > memory/2 {
				t.Fatalf("after a read at %d: the windows hold %d bytes, want at most %d", off, held, memory/2)
			}
		}
	}
	for i := range got {
		if !bytes.Equal(got[i], g.data) {
			t.Errorf("handle %d read %d bytes, not the file's %d", i, len(got[i]), len(g.data))
		}
	}
}

// TestSmallFileOneRead: a read cut short by the file's end says so
// (io.EOF), in one Tread, so that a caller filling its buffer (the FUSE
// edge fills each page) does not ask past the end again; a read from
// the end then finds what was added since.
func TestSmallFileOneRead(t *testing.T) {
	g, h, c := grownFile(t, []byte("small"))
	ctx := context.Background()
	buf := make([]byte, 128<<10)
	for round, want := range []string{"small", "small, grown"} {
		var n int
		var err error
		if got := costOf(c, func() { n, err = h.ReadAt(ctx, buf, 0) }); got != 1 || n != len(want) || err != io.EOF {
			t.Errorf("round %d: %d requests, %d bytes, %v; want 1, %d, EOF", round, got, n, err, len(want))
		}
		g.mu.Lock()
		g.data = append(g.data, ", grown"...)
		g.mu.Unlock()
	}
}
