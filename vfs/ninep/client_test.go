package ninep

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// A server that goes away fails the calls waiting on it, and every later
// call, with EIO: nothing hangs.
func TestServerGoneFailsCalls(t *testing.T) {
	tree, b := blockTree(t)
	srv, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	res := startBlockedRead(t, context.Background(), root, b)
	disk := walk(t, root, "disk")

	srv.Close(context.Background())
	err := within(t, "blocked read after the server closed", func() error { return <-res })
	if got := vfs.Errno(err); got != syscall.EIO {
		t.Errorf("blocked read: got %v (%v), want EIO", got, err)
	}
	err = within(t, "a new call", func() error { _, err := disk.Attr(context.Background()); return err })
	if got := vfs.Errno(err); got != syscall.EIO {
		t.Errorf("new call: got %v (%v), want EIO", got, err)
	}
}

// freezer relays a connection until frozen, then swallows everything in
// both directions: a server that hangs without closing its socket.
type freezer struct {
	frozen atomic.Bool
}

func (f *freezer) relay(t *testing.T, to Address) Address {
	return acceptEach(t, func(c net.Conn) {
		s, err := net.Dial(to.Network, to.Addr)
		if err != nil {
			c.Close()
			return
		}
		t.Cleanup(func() { s.Close() })
		go f.copy(s, c)
		go f.copy(c, s)
	})
}

// acceptEach listens on a fresh unix socket until the test ends and
// hands each connection to serve, closing it when the test ends.
func acceptEach(t *testing.T, serve func(net.Conn)) Address {
	t.Helper()
	addr := Address{"unix", filepath.Join(t.TempDir(), "front.sock")}
	l, err := net.Listen("unix", addr.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go serve(c)
		}
	}()
	return addr
}

func (f *freezer) copy(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if f.frozen.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// A server that stops answering without closing is detected by the
// client's liveness probe: waiting calls fail with EIO in about a second.
func TestHungServerFailsCalls(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	var f freezer
	c, root := dial(t, f.relay(t, addr), "")
	// statfs, which the client holds briefly: dropped here, so the call
	// after the freeze must ask.
	sf := root.(vfs.StatFSer)
	if _, err := sf.StatFS(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.cache.dropAll()
	f.frozen.Store(true)
	start := time.Now()
	err := within(t, "statfs on a hung server", func() error {
		_, err := sf.StatFS(context.Background())
		return err
	})
	if got := vfs.Errno(err); got != syscall.EIO {
		t.Errorf("statfs: got %v (%v), want EIO", got, err)
	}
	t.Logf("hung server detected after %v (liveness %v)", time.Since(start), c.liveness)
	select {
	case <-c.Done():
	default:
		t.Error("the client still counts the connection as alive")
	}
}

// With Idle set, a connection no call waits on is probed too: a server
// that goes silent is noticed with nothing outstanding, and a live one
// is kept.
func TestIdleProbe(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	var f freezer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, f.relay(t, addr), ClientOptions{Idle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(time.Second) // idle, probed and answered several times
	select {
	case <-c.Done():
		t.Fatal("an idle connection to a live server was ended")
	default:
	}
	f.frozen.Store(true)
	start := time.Now()
	select {
	case <-c.Done():
		t.Logf("silent server noticed %v after it froze (idle 200ms, liveness %v)", time.Since(start), c.liveness)
	case <-time.After(5 * time.Second):
		t.Fatal("an idle connection to a frozen server is still counted alive")
	}
}

// A server that answers but holds one call for long (a blocking read of
// /proc's stream or wait) is alive: the liveness probes sent meanwhile
// are answered at once, and an answer that comes back before the probe's
// clock would start must not leave the clock running.
func TestLongCallOnLiveServer(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	c, root := dial(t, addr, "")
	ctx, cancel := context.WithTimeout(context.Background(), hangBound*2/3)
	defer cancel()
	res := startBlockedRead(t, ctx, root, b)
	err := within(t, "a read held for 2 s", func() error { return <-res })
	if got := vfs.Errno(err); got != syscall.EINTR {
		t.Errorf("read held until its deadline: got %v (%v), want EINTR", got, err)
	}
	select {
	case <-c.Done():
		t.Fatal("the client took a live server for dead while a call waited")
	default:
	}
	if _, err := root.Attr(context.Background()); err != nil {
		t.Errorf("getattr after the long read: %v", err)
	}
}

// A call whose context ends returns at once with EINTR and its request is
// flushed on the server, leaving the connection usable.
func TestCancelledCallIsFlushed(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := startBlockedRead(t, ctx, root, b)
	err := within(t, "read with a deadline", func() error { return <-res })
	if got := vfs.Errno(err); got != syscall.EINTR {
		t.Errorf("read past its deadline: got %v (%v), want EINTR", got, err)
	}
	if _, err := root.Attr(context.Background()); err != nil {
		t.Errorf("getattr after the flush: %v", err)
	}
}

// The unix socket admits only root and the server's owner, whatever the
// socket file's mode: another user is refused by its peer credentials.
func TestSocketRefusesOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	if os.Getenv("GSVFS_NINEP_DIAL") != "" {
		t.Skip("helper process")
	}
	_, addr := serve(t, newDisk(t))
	if err := os.Chmod(addr.Addr, 0o666); err != nil { // take the file mode out of the way
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(addr.Addr), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := copyExecutable(t)
	cmd := exec.Command(exe, "-test.run=^TestDialHelper$")
	cmd.Env = append(os.Environ(), "GSVFS_NINEP_DIAL="+addr.Addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if got := string(out); !strings.Contains(got, "refused") {
		t.Errorf("a client running as nobody: got %q, want it refused", got)
	}
}

// TestDialHelper runs only as TestSocketRefusesOtherUsers' child: it tries
// a version handshake and prints whether the server refused it.
func TestDialHelper(t *testing.T) {
	path := os.Getenv("GSVFS_NINEP_DIAL")
	if path == "" {
		t.Skip("runs only as a helper process of TestSocketRefusesOtherUsers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	c, err := Dial(ctx, Address{"unix", path}, ClientOptions{})
	if err != nil {
		os.Stdout.WriteString("refused: " + err.Error() + "\n")
		return
	}
	c.Close()
	os.Stdout.WriteString("admitted\n")
}

// copyExecutable copies the test binary where another user may run it.
func copyExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.SharedDir(t, "ninep-helper", 0o755)
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	exe := filepath.Join(dir, "ninep.test")
	out, err := os.OpenFile(exe, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return exe
}
