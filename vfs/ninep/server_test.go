package ninep

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// hangBound is how long a call may take before a test calls it hung. The
// properties tested are "never blocks on an unrelated request" and
// "answers promptly"; the bound is generous so a loaded machine does not
// fail them.
const hangBound = 3 * time.Second

// blockingFile is a file whose reads block until the request's context
// ends, like a session's wait file with no yield, and which counts its
// open handles.
type blockingFile struct {
	vfs.Leaf
	ino     uint64
	entered chan struct{}
	opens   atomic.Int64
	ended   chan error
}

func newBlockingFile() *blockingFile {
	return &blockingFile{ino: vfs.NewIno(), entered: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func (b *blockingFile) Attr(context.Context) (vfs.Attr, error) {
	return vfs.Attr{Ino: b.ino, Mode: syscall.S_IFREG | 0o444, Nlink: 1, Volatile: true}, nil
}

func (b *blockingFile) SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error) {
	return vfs.Attr{}, vfs.Error("setattr", "block", syscall.EPERM)
}

func (b *blockingFile) Open(context.Context, int) (vfs.Handle, error) {
	b.opens.Add(1)
	return blockingHandle{b}, nil
}

type blockingHandle struct{ b *blockingFile }

func (h blockingHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	h.b.entered <- struct{}{}
	<-ctx.Done()
	h.b.ended <- ctx.Err()
	return 0, vfs.Error("read", "block", syscall.EINTR)
}

func (blockingHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "block", syscall.EBADF)
}

func (h blockingHandle) Close() error { h.b.opens.Add(-1); return nil }

// blockTree is a root with the blocking file and a disk directory.
func blockTree(t *testing.T) (vfs.Node, *blockingFile) {
	b := newBlockingFile()
	return vfs.NewStaticDir(map[string]vfs.Node{"block": b, "disk": newDisk(t)}), b
}

func walk(t *testing.T, n vfs.Node, names ...string) vfs.Node {
	t.Helper()
	for _, name := range names {
		var err error
		if n, err = n.Lookup(context.Background(), name); err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
	}
	return n
}

// within runs fn and fails the test if it has not returned in hangBound.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangBound):
		t.Fatalf("%s: still blocked after %v", what, hangBound)
		return nil
	}
}

// startBlockedRead opens the blocking file and starts a read that stays
// blocked in the backend until ctx ends; it returns the read's outcome.
func startBlockedRead(t *testing.T, ctx context.Context, root vfs.Node, b *blockingFile) <-chan error {
	t.Helper()
	return startBlockedReadOf(t, ctx, root, b, 10)
}

// startBlockedReadOf is startBlockedRead of size bytes.
func startBlockedReadOf(t *testing.T, ctx context.Context, root vfs.Node, b *blockingFile, size int) <-chan error {
	t.Helper()
	h, err := walk(t, root, "block").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	res := make(chan error, 1)
	go func() {
		_, err := h.ReadAt(ctx, make([]byte, size), 0)
		res <- err
	}()
	select {
	case <-b.entered:
	case <-time.After(hangBound):
		t.Fatal("the read never reached the backend")
	}
	return res
}

// A read blocked in a backend delays no other request: a rename and a
// getattr on the same connection and on another one complete while it
// waits, and flushing it (cancelling the call) ends it with EINTR.
func TestBlockedReadStallsNothing(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	_, rootA := dial(t, addr, "")
	_, rootB := dial(t, addr, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := startBlockedRead(t, ctx, rootA, b)

	bg := context.Background()
	for _, c := range []struct {
		name string
		root vfs.Node
	}{{"same connection", rootA}, {"other connection", rootB}} {
		disk := walk(t, c.root, "disk")
		err := within(t, c.name+": create+rename+getattr", func() error {
			_, h, err := disk.Create(bg, "f", os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			h.Close()
			if err := disk.Rename(bg, "f", disk, "g"); err != nil {
				return err
			}
			if _, err := walk(t, disk, "g").Attr(bg); err != nil {
				return err
			}
			return disk.Remove(bg, "g", false)
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	select {
	case err := <-res:
		t.Fatalf("the blocked read returned before it was flushed: %v", err)
	default:
	}

	cancel() // the client sends Tflush
	err := within(t, "flushed read", func() error { return <-res })
	if got := vfs.Errno(err); got != syscall.EINTR {
		t.Errorf("flushed read: got %v (%v), want EINTR", got, err)
	}
	select {
	case err := <-b.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("backend read ended with %v, want its context cancelled", err)
		}
	case <-time.After(hangBound):
		t.Error("the backend read was never cancelled")
	}
}

// A Tflush sent on the wire answers only after the flushed request has
// replied, and promptly. The frames are read raw, so the order seen is
// the order on the wire.
func TestFlushOrdersReplies(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	nc, err := net.Dial("unix", addr.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rt := func(tag uint16, m Message) {
		t.Helper()
		if _, err := nc.Write(appendFrame(nil, tag, m)); err != nil {
			t.Fatal(err)
		}
	}
	next := func() (uint16, Message) {
		t.Helper()
		nc.SetReadDeadline(time.Now().Add(hangBound))
		var hdr [4]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
		copy(frame, hdr[:])
		if _, err := io.ReadFull(nc, frame[4:]); err != nil {
			t.Fatal(err)
		}
		tag, m, err := decodeFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		return tag, m
	}
	setup := []Message{
		&Tversion{Msize: 8192, Version: Version},
		&Tattach{Fid: 1, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}},
		&Twalk{Fid: 1, NewFid: 2, Names: []string{"block"}},
		&Tlopen{Fid: 2},
	}
	for i, m := range setup {
		rt(uint16(i), m)
		if _, r := next(); r.msgType() != m.msgType()+1 {
			t.Fatalf("%T: got %#v", m, r)
		}
	}
	rt(10, &Tread{Fid: 2, Count: 10})
	<-b.entered
	rt(11, &Tflush{OldTag: 10})
	tag1, r1 := next()
	tag2, r2 := next()
	if tag1 != 10 || tag2 != 11 {
		t.Fatalf("reply tags in wire order: got %d then %d, want 10 (read) then 11 (flush)", tag1, tag2)
	}
	if e, ok := r1.(*Rlerror); !ok || syscall.Errno(e.Ecode) != syscall.EINTR {
		t.Errorf("flushed read replied %#v, want Rlerror EINTR", r1)
	}
	if _, ok := r2.(*Rflush); !ok {
		t.Errorf("flush replied %#v, want Rflush", r2)
	}
}

// A client that vanishes leaves nothing behind: its open handles are
// closed, its blocked reads cancelled, its goroutines gone.
func TestVanishedClientLeaksNothing(t *testing.T) {
	tree, b := blockTree(t)
	srv, addr := serve(t, tree)
	before := runtime.NumGoroutine()
	fdsBefore := openFds(t)

	c, root := dial(t, addr, "")
	startBlockedRead(t, context.Background(), root, b)
	disk := walk(t, root, "disk")
	for _, name := range []string{"a", "b", "c"} {
		if _, _, err := disk.Create(context.Background(), name, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.opens.Load(); got != 1 {
		t.Fatalf("open handles of the blocking file: got %d, want 1", got)
	}
	c.nc.Close() // vanish without clunking anything

	testenv.WaitFor(t, hangBound, "server noticing the client left", func() bool { return srv.connCount() == 0 && b.opens.Load() == 0 })
	select {
	case <-b.ended:
	case <-time.After(hangBound):
		t.Fatal("the vanished client's blocked read was never cancelled")
	}
	testenv.Poll(hangBound, func() bool { return runtime.NumGoroutine() <= before })
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d after the client left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if got := openFds(t); got > fdsBefore {
		t.Errorf("open descriptors: %d after the client left, %d before", got, fdsBefore)
	}
}

func openFds(t *testing.T) int {
	t.Helper()
	return testenv.SelfFds(t, nil)
}

// Opening a FIFO or device node is refused at once: the client's kernel
// opens those itself, and a server-side open would block (a FIFO with no
// writer) or reach a device of the server's machine.
func TestSpecialFilesNotOpened(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	_, root := dial(t, addr, "")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mode uint32
		rdev uint64
	}{
		{"fifo", syscall.S_IFIFO | 0o644, 0},
		{"null", syscall.S_IFCHR | 0o666, 1<<8 | 3}, // 1:3, /dev/null
	} {
		n, err := root.(vfs.Mknoder).Mknod(ctx, tc.name, tc.mode, tc.rdev)
		if err != nil {
			t.Fatalf("mknod %s: %v", tc.name, err)
		}
		err = within(t, "open of "+tc.name, func() error {
			h, err := n.Open(ctx, os.O_RDONLY)
			if err == nil {
				h.Close()
			}
			return err
		})
		if got := vfs.Errno(err); got != syscall.EOPNOTSUPP {
			t.Errorf("open %s: got %v (%v), want EOPNOTSUPP", tc.name, got, err)
		}
	}
}

// slowStat is a node that is not vfs.Quick and whose stat waits for its
// request to end: a remote device that stopped answering.
type slowStat struct {
	*blockingFile
	stat bool // block in Attr only after the first call (the walk's)
}

func (s *slowStat) Attr(ctx context.Context) (vfs.Attr, error) {
	if !s.stat {
		s.stat = true
		return s.blockingFile.Attr(ctx)
	}
	s.entered <- struct{}{}
	<-ctx.Done()
	return vfs.Attr{}, vfs.Error("getattr", "slow", syscall.EINTR)
}

// Metadata requests run on the reader's goroutine only on quick nodes: a
// getattr that waits on a node that is not quick holds up nothing else on
// its connection, and is flushed like a blocked read.
func TestSlowMetadataStallsNothing(t *testing.T) {
	b := newBlockingFile()
	slow := &slowStat{blockingFile: b}
	tree := vfs.NewStaticDir(map[string]vfs.Node{"slow": slow, "disk": newDisk(t)})
	_, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	slowNode := walk(t, root, "slow")
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := slowNode.Attr(ctx); res <- err }()
	select {
	case <-b.entered:
	case <-time.After(hangBound):
		t.Fatal("the getattr never reached the backend")
	}
	err := within(t, "getattr beside a stuck one", func() error {
		_, err := walk(t, root, "disk").Attr(context.Background())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	err = within(t, "flushed getattr", func() error { return <-res })
	if got := vfs.Errno(err); got != syscall.EINTR {
		t.Errorf("flushed getattr: got %v (%v), want EINTR", got, err)
	}
}
