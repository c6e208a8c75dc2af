package devices

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// A device serving an endless directory: listing it through the gateway
// fails with EFBIG once the listing passes the per-link bound instead
// of running for ever, memory and goroutines stay bounded, another
// device keeps answering meanwhile, the gateway logs it once with the
// device's id however often it is listed, and the link stays up for the
// device's other files.
func TestEndlessDeviceBounded(t *testing.T) {
	gw := startGateway(t)
	startDevice(t, gw.token(t, "good"), "good")
	tree := vfs.NewStaticDir(map[string]vfs.Node{"endless": vfstest.NewEndlessDir(), "hello": vfs.NewTextFile([]byte("hi\n"))})
	startDeviceServing(t, gw.token(t, "bad"), "bad", tree)
	good, bad := gw.online(t, "good"), gw.online(t, "bad")
	goroutines := runtime.NumGoroutine()

	stop, others := make(chan struct{}), make(chan error, 1)
	go func() { others <- readUntil(t, good, stop) }()
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	for range 2 {
		listed, peak, err := streamList(bad, "endless")
		if got := vfs.Errno(err); got != syscall.EFBIG {
			t.Fatalf("listing the endless directory: %d entries, then %v (%v); want EFBIG", listed, got, err)
		}
		if listed > ninep.DefaultMaxListEntries {
			t.Errorf("listed %d entries, past the bound of %d", listed, ninep.DefaultMaxListEntries)
		}
		if grew := int64(peak) - int64(base.HeapAlloc); grew > 128<<20 {
			t.Errorf("the heap grew by %d MB while listing, want under 128", grew>>20)
		}
		t.Logf("listed %d entries; heap grew by at most %d MB", listed, (int64(peak)-int64(base.HeapAlloc))>>20)
	}
	close(stop)
	if err := <-others; err != nil {
		t.Errorf("another device while the bad one was listed: %v", err)
	}
	log := gw.log.String()
	if n := strings.Count(log, "device listing cut short"); n != 1 || !strings.Contains(log, "device=bad") {
		t.Errorf("the bound should be logged once with the device's id; log:\n%s", log)
	}
	if strings.Contains(log, "device offline") {
		t.Errorf("a listing too long cut the device's link; log:\n%s", log)
	}
	if got, err := readAll(t, bad, "hello"); err != nil || got != "hi\n" {
		t.Errorf("the device's other file after the listings: %q, %v", got, err)
	}
	eventually(t, "goroutines back to what two links need", func() bool {
		return runtime.NumGoroutine() <= goroutines
	})
}

// readUntil reads a device's file until stop is closed, failing on the
// first error.
func readUntil(t *testing.T, root vfs.Node, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if _, err := readAll(t, root, "hello"); err != nil {
			return err
		}
	}
}

// streamList reads a directory as the kernel does through FUSE, batch
// by batch, keeping none; it returns how many entries came, the largest
// heap seen between batches and the error that ended the listing. It
// gives up at four times the gateway's bound: then nothing bounds it.
func streamList(root vfs.Node, name string) (int, uint64, error) {
	ctx := context.Background()
	dir, err := root.Lookup(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	h, err := dir.Open(ctx, os.O_RDONLY)
	if err != nil {
		return 0, 0, err
	}
	defer h.Close()
	var listed int
	var peak uint64
	for off := uint64(0); ; {
		ents, err := h.(vfs.DirReader).ReadDir(ctx, off)
		if err != nil || len(ents) == 0 {
			return listed, peak, err
		}
		listed += len(ents)
		if listed > 4*ninep.DefaultMaxListEntries {
			return listed, peak, errors.New("the listing went on past four times the bound")
		}
		off = ents[len(ents)-1].Next
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
	}
}

// stuckFile is a file whose reads ignore their context until released:
// a device whose disk hangs, or one that will not let go of a call.
type stuckFile struct {
	vfs.ReadOnly
	ino     uint64
	release chan struct{}
}

func (f *stuckFile) Attr(context.Context) (vfs.Attr, error) {
	return vfs.Attr{Ino: f.ino, Mode: syscall.S_IFREG | 0o444, Nlink: 1}, nil
}

func (f *stuckFile) Lookup(context.Context, string) (vfs.Node, error) {
	return nil, vfs.Error("lookup", "", syscall.ENOTDIR)
}

func (f *stuckFile) Open(context.Context, int) (vfs.Handle, error) { return stuckHandle{f}, nil }

type stuckHandle struct{ f *stuckFile }

func (h stuckHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	<-h.f.release
	return 0, io.EOF
}

func (stuckHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "", syscall.EBADF)
}

func (stuckHandle) Close() error { return nil }

// A device that will not let go of a call (its flush is never answered)
// is cut off after the link's flush wait: the caller gets EIO instead of
// waiting for ever, the gateway logs the cut with the device's id, the
// other device keeps answering, and the device joins again.
func TestStuckDeviceCutOffAndRejoins(t *testing.T) {
	gw := startGateway(t)
	startDevice(t, gw.token(t, "good"), "good")
	stuck := &stuckFile{ino: vfs.NewIno(), release: make(chan struct{})}
	defer close(stuck.release) // before the device's server is closed
	tree := vfs.NewStaticDir(map[string]vfs.Node{"stuck": stuck, "hello": vfs.NewTextFile([]byte("hi\n"))})
	startDeviceServing(t, gw.token(t, "bad"), "bad", tree)
	good, bad := gw.online(t, "good"), gw.online(t, "bad")
	n, err := bad.Lookup(context.Background(), "stuck")
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	go func() { _, err := h.ReadAt(ctx, make([]byte, 10), 0); res <- err }()
	select {
	case err := <-res:
		if got := vfs.Errno(err); got != syscall.EIO {
			t.Errorf("a read the device never lets go of: %v (%v), want EIO", got, err)
		}
	case <-time.After(4 * linkFlushWait):
		t.Fatalf("a read the device never lets go of still waits after %v", 4*linkFlushWait)
	}
	if got, err := readAll(t, good, "hello"); err != nil || got != "hi from good\n" {
		t.Errorf("the other device: %q, %v", got, err)
	}
	if log := gw.log.String(); !strings.Contains(log, "device cut off") || !strings.Contains(log, "device=bad") {
		t.Errorf("the cut should be logged with the device's id; log:\n%s", log)
	}
	eventually(t, "the cut device joins again", func() bool {
		got, err := readAll(t, bad, "hello")
		return err == nil && got == "hi\n"
	})
}
