package ninep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// heldWrites is a stored file (its attributes are not volatile, so the
// client writes it behind) whose writes wait at a gate the test opens,
// and fail at an offset the test names.
type heldWrites struct {
	vfs.Leaf
	ino    uint64
	gate   chan struct{} // writes wait until it is closed
	failAt int64         // a write covering this offset fails with ENOSPC; -1 none

	mu      sync.Mutex
	data    []byte
	waiting int // writes waiting at the gate
	most    int // the most ever waiting at once
}

func newHeldWrites() *heldWrites {
	return &heldWrites{ino: vfs.NewIno(), gate: make(chan struct{}), failAt: -1}
}

func (g *heldWrites) Attr(context.Context) (vfs.Attr, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return vfs.Attr{Ino: g.ino, Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: int64(len(g.data)),
		Mtime: time.Unix(1, int64(len(g.data)))}, nil
}

func (g *heldWrites) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	return g.Attr(ctx)
}

func (g *heldWrites) Open(context.Context, int) (vfs.Handle, error) { return heldWritesHandle{g}, nil }

type heldWritesHandle struct{ g *heldWrites }

func (h heldWritesHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	if off >= int64(len(h.g.data)) {
		return 0, nil
	}
	return copy(p, h.g.data[off:]), nil
}

func (h heldWritesHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	g := h.g
	g.mu.Lock()
	g.waiting++
	g.most = max(g.most, g.waiting)
	g.mu.Unlock()
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting--
	if g.failAt >= off && g.failAt < off+int64(len(p)) {
		return 0, vfs.Error("write", "gated", syscall.ENOSPC)
	}
	if end := off + int64(len(p)); end > int64(len(g.data)) {
		g.data = append(g.data, make([]byte, end-int64(len(g.data)))...)
	}
	copy(g.data[off:], p)
	return len(p), nil
}

func (heldWritesHandle) Close() error { return nil }

// gatedOpen serves a gated file and opens it for writing through a client
// that writes behind with the given window.
func gatedOpen(t *testing.T, window int64) (*Client, *heldWrites, vfs.Node, vfs.Handle) {
	t.Helper()
	g := newHeldWrites()
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": g}))
	c, root := dialWith(t, addr, "", ClientOptions{WriteBehind: window})
	n := walk(t, root, "f")
	h, err := n.Open(context.Background(), os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if _, ok := h.(vfs.Flusher); !ok {
		t.Fatalf("a stored file opened for writing gives a %T, which does not write behind", h)
	}
	return c, g, n, h
}

// TestWritesGoBehind: writes return before the server has them, up to the
// window and no further; a stat waits for them and sees them all; a flush
// waits for them.
func TestWritesGoBehind(t *testing.T) {
	_, g, n, h := gatedOpen(t, 64<<10)
	ctx := vfs.WithFlushAtClose(context.Background())
	chunk := bytes.Repeat([]byte("w"), 16<<10)
	for i := range 4 { // the whole window
		if err := within(t, "a write within the window", func() error {
			_, err := h.WriteAt(ctx, chunk, int64(i*len(chunk)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	over := make(chan error, 1)
	go func() { _, err := h.WriteAt(ctx, chunk, 4*int64(len(chunk))); over <- err }()
	stat := make(chan vfs.Attr, 1)
	go func() { a, _ := n.Attr(ctx); stat <- a }()
	select {
	case <-over:
		t.Fatal("a write past the window returned before the server answered any")
	case <-stat:
		t.Fatal("a stat was answered before the writes sent ahead of it")
	case <-time.After(200 * time.Millisecond):
	}
	close(g.gate)
	if err := <-over; err != nil {
		t.Fatal(err)
	}
	if err := h.(vfs.Flusher).Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if a := <-stat; a.Size < 4*int64(len(chunk)) {
		t.Errorf("a stat sent after four writes saw size %d, want at least %d", a.Size, 4*len(chunk))
	}
	if a, _ := n.Attr(ctx); a.Size != 5*int64(len(chunk)) {
		t.Errorf("size after the flush: %d, want %d", a.Size, 5*len(chunk))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.most < 2 || g.most > 4 {
		t.Errorf("writes at the server at once: at most %d, want 2 to 4 (the window's)", g.most)
	}
}

// TestOverlappingWritesKeepOrder: a write over bytes another is still
// writing waits for it, so the later one is what stays.
func TestOverlappingWritesKeepOrder(t *testing.T) {
	_, g, _, h := gatedOpen(t, 1<<20)
	ctx := vfs.WithFlushAtClose(context.Background())
	wrote := make(chan error, 1)
	go func() {
		for i, s := range []string{"first", "second", "third"} {
			if _, err := h.WriteAt(ctx, []byte(s), int64(i)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case <-wrote:
		t.Fatal("a write over bytes still in flight returned before they landed")
	case <-time.After(200 * time.Millisecond):
	}
	close(g.gate)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := h.(vfs.Flusher).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if want := "fsthird"; string(g.data) != want {
		t.Errorf("after overlapping writes: %q, want %q", g.data, want)
	}
}

// TestWriteBehindErrors: a write that fails after it was acknowledged
// fails the flush (close(2) through the mount), once; the writes after it
// still land.
func TestWriteBehindErrors(t *testing.T) {
	_, g, _, h := gatedOpen(t, 1<<20)
	g.failAt = 5
	close(g.gate)
	ctx := vfs.WithFlushAtClose(context.Background())
	if _, err := h.WriteAt(ctx, []byte("01234"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("56789"), 5); err != nil {
		t.Fatalf("the write itself is acknowledged: %v", err)
	}
	fl := h.(vfs.Flusher)
	if err := fl.Flush(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("flush after a failed write: %v, want ENOSPC", err)
	}
	if err := fl.Flush(ctx); err != nil {
		t.Errorf("second flush: %v, want the error reported once", err)
	}
	g.failAt = -1
	if _, err := h.WriteAt(ctx, []byte("x"), 10); err != nil {
		t.Fatal(err)
	}
	if err := h.(vfs.Syncer).Sync(ctx); err != nil {
		t.Errorf("fsync: %v", err)
	}
}

// TestFailedWriteReportedAtNextWrite: the next write on the handle says a
// write before it failed, as a writer that never closes would learn it.
func TestFailedWriteReportedAtNextWrite(t *testing.T) {
	_, g, n, h := gatedOpen(t, 1<<20)
	g.failAt = 0
	close(g.gate)
	ctx := vfs.WithFlushAtClose(context.Background())
	if _, err := h.WriteAt(ctx, []byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	n.Attr(ctx) // waits for the write
	if _, err := h.WriteAt(ctx, []byte("b"), 1); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("the write after a failed one: %v, want ENOSPC", err)
	}
}

// TestWhatIsNotWrittenBehind: generated files, appends and read-only
// opens wait for each write's answer (no Flush), and a client without a
// window writes nothing behind; a disk file written behind reads back
// whole through another handle at once.
func TestWhatIsNotWrittenBehind(t *testing.T) {
	dir := t.TempDir()
	disk, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := disk.Root()
	b := newBlockingFile()
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"disk": d, "gen": b}))
	ctx := context.Background()
	mustWrite(t, filepath.Join(dir, "f"), "")
	_, root := dialWith(t, addr, "", ClientOptions{WriteBehind: 1 << 20})
	f := walk(t, root, "disk", "f")
	for _, flags := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND} {
		h, err := f.Open(ctx, flags)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := h.(vfs.Flusher); ok {
			t.Errorf("opened with flags %#x: writes behind", flags)
		}
		h.Close()
	}
	if h, err := walk(t, root, "gen").Open(ctx, os.O_RDONLY); err == nil {
		if _, ok := h.(vfs.Flusher); ok {
			t.Error("a generated file writes behind")
		}
		h.Close()
	}
	w, err := f.Open(ctx, os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := bytes.Repeat([]byte("0123456789"), 300_000) // three messages
	if _, err := w.WriteAt(vfs.WithFlushAtClose(ctx), data, 0); err != nil {
		t.Fatal(err)
	}
	r, err := f.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back := make([]byte, len(data))
	if n, err := r.ReadAt(ctx, back, 0); n != len(data) || !bytes.Equal(back, data) {
		t.Errorf("read back after a write behind: %d bytes, %v; equal %v", n, err, bytes.Equal(back, data))
	}
	_, plain := dialWith(t, addr, "", ClientOptions{})
	h, err := walk(t, plain, "disk", "f").Open(ctx, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.(vfs.Flusher); ok {
		t.Error("a client without a window writes behind")
	}
}

// TestUnflushedWritesWait: a write whose caller does not flush at close
// (a 9P server passing a client's write on) waits for the server's
// answer, so its error is the write's own.
func TestUnflushedWritesWait(t *testing.T) {
	_, g, _, h := gatedOpen(t, 1<<20)
	wrote := make(chan error, 1)
	go func() { _, err := h.WriteAt(context.Background(), []byte("x"), 0); wrote <- err }()
	select {
	case <-wrote:
		t.Fatal("an unmarked write returned before the server answered it")
	case <-time.After(200 * time.Millisecond):
	}
	g.failAt = 1
	close(g.gate)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(context.Background(), []byte("y"), 1); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("an unmarked write that fails: %v, want ENOSPC from the write itself", err)
	}
}

// TestFlushNotCutShortBySignal: a close(2) interrupted by a signal (the
// kernel's FUSE INTERRUPT ends the flush's context) still waits for the
// writes and says how they went, rather than fail with EINTR and leave
// the caller not knowing.
func TestFlushNotCutShortBySignal(t *testing.T) {
	_, g, _, h := gatedOpen(t, 1<<20)
	if _, err := h.WriteAt(vfs.WithFlushAtClose(context.Background()), []byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	flushed := make(chan error, 1)
	go func() { flushed <- h.(vfs.Flusher).Flush(interrupted) }()
	select {
	case err := <-flushed:
		t.Fatalf("flush returned %v before the write landed", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(g.gate)
	if err := <-flushed; err != nil {
		t.Errorf("flush after the write landed: %v", err)
	}
}

// TestBehindWindowRules: the window's own rules, on its own. A context
// already ended makes a call that would wait fail at once, so what
// waits and what does not shows without a clock.
func TestBehindWindowRules(t *testing.T) {
	b := newBehind(100)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	admits := func(what string, s span, want bool) uint64 {
		t.Helper()
		seq, err := b.admit(ended, s)
		if got := err == nil; got != want {
			t.Errorf("%s: admitted %v, want %v", what, got, want)
		}
		return seq
	}
	first := admits("a write within the window", span{1, 0, 60}, true)
	admits("a write past the window", span{1, 60, 120}, false)
	other := admits("another file's write filling the window", span{2, 0, 40}, true)
	b.done(other)
	admits("a write over bytes in flight", span{1, 50, 60}, false)
	other = admits("the same bytes of another file", span{2, 50, 60}, true)
	if err := b.barrier(ended); err == nil {
		t.Error("a barrier passed writes in flight")
	}
	b.done(first)
	b.done(other)
	if err := b.barrier(ended); err != nil {
		t.Errorf("a barrier with nothing in flight: %v", err)
	}
	big := admits("a write larger than the window, none in flight", span{3, 0, 1000}, true)
	admits("any write beside it", span{4, 0, 1}, false)
	b.done(big)
	if b.held != 0 || len(b.inflight) != 0 {
		t.Errorf("all done: %d bytes, %d writes in flight; want none", b.held, len(b.inflight))
	}
}
