package ninep

import (
	"bytes"
	"context"
	"os"
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
