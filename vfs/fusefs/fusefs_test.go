//go:build linux

package fusefs

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// These tests serve a synthetic tree from this process and touch the mount
// only from child processes (cat, stat, ls): a process must never make FUSE
// calls into a mount it serves itself.

func mountTree(t *testing.T, root vfs.Node) string {
	t.Helper()
	vfstest.NeedFUSE(t)
	dir := t.TempDir()
	m, err := New(dir, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			Detach(dir)
		}
	})
	return dir
}

// child runs a command with a deadline and returns its output and error.
func child(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// panicky panics on every Attr call once armed.
type panicky struct {
	*vfs.TextFile
	armed *atomic.Bool
}

func (p panicky) Attr(ctx context.Context) (vfs.Attr, error) {
	if p.armed.Load() {
		panic("test panic in Attr")
	}
	return p.TextFile.Attr(ctx)
}

func TestPanicBecomesEIOAndMountStaysUp(t *testing.T) {
	armed := &atomic.Bool{}
	root := vfs.NewStaticDir(map[string]vfs.Node{
		"bad":  panicky{TextFile: vfs.NewTextFile([]byte("x")), armed: armed},
		"good": vfs.NewTextFile([]byte("still here\n")),
	})
	dir := mountTree(t, root)
	armed.Store(true)
	out, err := child(10*time.Second, "stat", filepath.Join(dir, "bad"))
	if err == nil || !strings.Contains(out, "Input/output error") {
		t.Errorf("stat of a panicking node: %v %q, want an Input/output error", err, out)
	}
	out, err = child(10*time.Second, "cat", filepath.Join(dir, "good"))
	if err != nil || out != "still here\n" {
		t.Errorf("after the panic cat good = %q, %v; want %q", out, err, "still here\n")
	}
}

// counter is a volatile file whose content is generated anew at each open.
type counter struct {
	*vfs.TextFile
	opens atomic.Int64
}

func (c *counter) Attr(ctx context.Context) (vfs.Attr, error) {
	a, _ := c.TextFile.Attr(ctx)
	a.Volatile = true
	a.Size = 0 // generated content has no size known in advance
	return a, nil
}

func (c *counter) Open(context.Context, int) (vfs.Handle, error) {
	n := c.opens.Add(1)
	return vfs.BytesHandle(strings.Repeat("open "+strconv.FormatInt(n, 10)+"\n", int(n))), nil
}

func TestVolatileFilesAreReadFresh(t *testing.T) {
	c := &counter{TextFile: vfs.NewTextFile(nil)}
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"c": c}))
	for i := 1; i <= 3; i++ {
		out, err := child(10*time.Second, "cat", filepath.Join(dir, "c"))
		want := strings.Repeat("open "+strconv.Itoa(i)+"\n", i)
		if err != nil || out != want {
			t.Errorf("read %d = %q, %v; want %q", i, out, err, want)
		}
	}
}

// blocker is a file whose read blocks until the request is cancelled.
type blocker struct {
	*vfs.TextFile
}

func (b blocker) Attr(ctx context.Context) (vfs.Attr, error) {
	a, _ := b.TextFile.Attr(ctx)
	a.Volatile = true
	return a, nil
}

func (b blocker) Open(context.Context, int) (vfs.Handle, error) { return blockingHandle{}, nil }

type blockingHandle struct{ vfs.BytesHandle }

func (blockingHandle) ReadAt(ctx context.Context, _ []byte, _ int64) (int, error) {
	<-ctx.Done()
	return 0, vfs.Error("read", "", syscall.EINTR)
}

// TestInterruptEndsBlockedRead checks that a signal to a reader blocked in
// the daemon ends the read (FUSE interrupt cancels the request's context)
// instead of leaving the process unkillable.
func TestInterruptEndsBlockedRead(t *testing.T) {
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"wait": blocker{vfs.NewTextFile(nil)}}))
	start := time.Now()
	_, err := child(20*time.Second, "timeout", "-s", "INT", "1", "cat", filepath.Join(dir, "wait"))
	if err == nil {
		t.Fatal("cat of a blocking file succeeded, want it interrupted")
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("interrupted read took %v to end, want about 1s", elapsed)
	}
}

// slowSync is a stored file whose fsync takes a while, as a disk's or a
// link's does, and records whether the request was cancelled meanwhile.
type slowSync struct {
	*vfs.TextFile
	cancelled, synced *atomic.Int64
}

func (s slowSync) Open(context.Context, int) (vfs.Handle, error) {
	return slowSyncHandle{vfs.BytesHandle("x"), s}, nil
}

type slowSyncHandle struct {
	vfs.BytesHandle
	s slowSync
}

func (h slowSyncHandle) Sync(ctx context.Context) error {
	select {
	case <-ctx.Done():
		h.s.cancelled.Add(1)
		return vfs.Error("fsync", "", syscall.EINTR)
	case <-time.After(200 * time.Millisecond):
		h.s.synced.Add(1)
		return nil
	}
}

// TestInterruptLeavesStoredIO: a signal to a caller waiting on stored
// content (here fsync, which Go's runtime and any timer may interrupt)
// does not cancel the call: a disk never fails fsync(2) with EINTR.
// Python retries a call that fails with EINTR, so what is checked is that
// the daemon's call ran to its end every time.
func TestInterruptLeavesStoredIO(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("SKIPPED: no python3 to signal a caller in fsync")
	}
	s := slowSync{vfs.NewTextFile([]byte("x")), &atomic.Int64{}, &atomic.Int64{}}
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"f": s}))
	prog := `import os, signal, sys
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(5):
    os.fsync(fd)
signal.setitimer(signal.ITIMER_REAL, 0)
`
	if out, err := child(10*time.Second, py, "-c", prog, filepath.Join(dir, "f")); err != nil {
		t.Fatalf("fsync under signals: %v\n%s", err, out)
	}
	if c, n := s.cancelled.Load(), s.synced.Load(); c != 0 || n != 5 {
		t.Errorf("fsync under a signal every 10 ms: %d cancelled, %d ran to the end; want 0 and 5", c, n)
	}
}

func TestSyntheticDirListing(t *testing.T) {
	kids := map[string]vfs.Node{}
	for i := range 300 {
		kids["f"+strconv.Itoa(i)] = vfs.NewTextFile([]byte("x"))
	}
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"d": vfs.NewStaticDir(kids)}))
	out, err := child(10*time.Second, "ls", "-a", filepath.Join(dir, "d"))
	if err != nil {
		t.Fatal(err, out)
	}
	names := strings.Fields(out)
	if len(names) != 302 || names[0] != "." || names[1] != ".." {
		t.Errorf("ls -a listed %d names starting %q, want 302 starting . ..", len(names), names[:min(2, len(names))])
	}
	if out, err := child(10*time.Second, "touch", filepath.Join(dir, "d", "new")); err == nil {
		t.Errorf("creating in a read-only directory succeeded: %s", out)
	}
}

// countedDir counts the listing reads its open handles make.
type countedDir struct {
	vfs.Node
	reads *atomic.Int64
}

func (d countedDir) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	h, err := d.Node.Open(ctx, flags)
	if err != nil {
		return nil, err
	}
	return countedHandle{h, h.(vfs.DirReader), d.reads}, nil
}

type countedHandle struct {
	vfs.Handle
	dr    vfs.DirReader
	reads *atomic.Int64
}

func (h countedHandle) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	h.reads.Add(1)
	return h.dr.ReadDir(ctx, off)
}

// A listing longer than one kernel buffer is read from the backend once,
// with one more read to find its end: the kernel's pages and its seeks
// back to an entry that did not fit are served from the batch held (for
// a remote tree, each backend read is a round trip).
func TestListingReadOncePerBatch(t *testing.T) {
	kids := map[string]vfs.Node{}
	for i := range 300 {
		kids["a-rather-long-file-name-"+strconv.Itoa(i)] = vfs.NewTextFile([]byte("x"))
	}
	var reads atomic.Int64
	d := countedDir{vfs.NewStaticDir(kids), &reads}
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"d": d}))
	out, err := child(10*time.Second, "ls", "-f", filepath.Join(dir, "d"))
	if err != nil {
		t.Fatal(err, out)
	}
	if n := len(strings.Fields(out)); n != 302 {
		t.Fatalf("ls -f listed %d names, want 302", n)
	}
	if got := reads.Load(); got != 2 {
		t.Errorf("a listing of 300 names (%d bytes) took %d backend reads, want 2: the batch and its end", len(out), got)
	}
}

// TestDaemonTruncateRefused checks that the daemon's own truncate of a
// file through its mount is refused unless it is one the daemon means
// (writeback.go invariant 5): this test's process serves the mount, so
// here, against the rule above, it calls into it itself, as mend does.
func TestDaemonTruncateRefused(t *testing.T) {
	vfstest.NeedFUSE(t)
	dir := t.TempDir()
	m, err := New(dir, vfs.NewStaticDir(map[string]vfs.Node{"f": vfs.NewTextFile([]byte("hello"))}), Options{NoPassthrough: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			Detach(dir)
		}
	})
	if err := syscall.Truncate(filepath.Join(dir, "f"), 1); err != syscall.EPERM {
		t.Errorf("the daemon's truncate of its own mount's file: %v, want %v", err, syscall.EPERM)
	}
}

// growing is a stored file that grows by a line after each read, as a
// file a writer appends to while each read is a round trip away.
type growing struct {
	*vfs.TextFile
	mu    sync.Mutex
	data  []byte
	reads atomic.Int64
}

func (g *growing) Attr(ctx context.Context) (vfs.Attr, error) {
	a, err := g.TextFile.Attr(ctx)
	g.mu.Lock()
	a.Size = int64(len(g.data))
	g.mu.Unlock()
	return a, err
}

func (g *growing) Open(context.Context, int) (vfs.Handle, error) { return growingHandle{g}, nil }

type growingHandle struct{ g *growing }

func (h growingHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	g := h.g
	g.reads.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	if off < int64(len(g.data)) {
		n = copy(p, g.data[off:])
	}
	g.data = fmt.Appendf(g.data, "line %d\n", g.reads.Load())
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil // fewer bytes: the end, as the 9P client says it
}

func (growingHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, syscall.EBADF
}

func (growingHandle) Close() error { return nil }

// TestShortReadEndsRead: one read of the kernel is one read of the
// handle when it comes short: that is the file's end, and asking again
// there chases a file that grows while it is read (tail -f of a file a
// device appends to waited until the kernel's buffer filled).
func TestShortReadEndsRead(t *testing.T) {
	g := &growing{TextFile: vfs.NewTextFile(nil), data: []byte("line 0\n")}
	dir := mountTree(t, vfs.NewStaticDir(map[string]vfs.Node{"f": g}))
	out, err := child(10*time.Second, "dd", "if="+filepath.Join(dir, "f"), "bs=4096", "count=1", "status=none")
	if err != nil || out != "line 0\n" {
		t.Errorf("dd of a page: %q, %v; want %q", out, err, "line 0\n")
	}
	if got := g.reads.Load(); got != 1 {
		t.Errorf("reads of the handle for one short read: %d, want 1", got)
	}
}
