//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// startServe runs `gsvfs serve` on a fresh state directory and returns
// the daemon and its socket.
func startServe(t *testing.T, extra ...string) (*daemon, ninep.Address) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "state")
	d := launch(t, &daemon{Root: root}, append([]string{"serve", "--root", root}, extra...)...)
	t.Cleanup(func() { d.stop(t) })
	return d, gsvfsd.Socket(root)
}

// mountServer mounts the tree of the server at addr with FUSE.
func mountServer(t *testing.T, addr string) *daemon {
	t.Helper()
	vfstest.NeedFUSE(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	d := launch(t, &daemon{Mnt: mnt}, "mount", "--foreground", "--server", addr, mnt)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// A directory of a server's disk held open through `mount --server`
// across a change made on that disk: a later `ls` shows the change
// (listingHeldAcross).
func TestServerMountListingHeldAcrossChange(t *testing.T) {
	srv, sock := startServe(t)
	m := mountServer(t, sock.String())
	host := filepath.Join(srv.Root, "workspaces", "held")
	o := outside{t: t, d: m}
	for _, name := range []string{"f0", "f1"} {
		o.write(filepath.Join(host, name), "x")
	}
	o.listingHeldAcross(host, filepath.Join(m.Mnt, "workspaces", "held"), "f0")
}

func attach(t *testing.T, addr ninep.Address) (*ninep.Client, vfs.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ninep.Dial(ctx, addr, ninep.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	root, err := c.Attach(ctx, "root", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, root
}

// serve exits cleanly on SIGTERM with a client attached and a file open,
// and removes its socket.
func TestServeStopsWithClientsAttached(t *testing.T) {
	d, addr := startServe(t)
	if fi, err := os.Stat(addr.Addr); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, mode %v; want mode 0600", err, fi.Mode().Perm())
	}
	c, root := attach(t, addr)
	ws, err := root.Lookup(context.Background(), "workspaces")
	if err != nil {
		t.Fatal(err)
	}
	_, h, err := ws.Create(context.Background(), "open", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.WriteAt(context.Background(), []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Error("the client's connection outlived the server")
	}
	if _, err := os.Lstat(addr.Addr); !os.IsNotExist(err) {
		t.Errorf("socket after exit: %v, want it removed", err)
	}
	if b, err := os.ReadFile(filepath.Join(d.Root, "workspaces", "open")); string(b) != "kept" {
		t.Errorf("file written before SIGTERM: %q, %v", b, err)
	}
}

// The listen addresses the command refuses, each with a clear reason.
func TestServeRefusesBadListeners(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		listen, want string
	}{
		{"tcp:127.0.0.1:0", "--insecure-tcp"},
		{"tcp:0.0.0.0:5640", "loopback"},
		{"udp:x", "unix:PATH or tcp:HOST:PORT"},
		{"tcp:nope", "missing port"},
	} {
		args := []string{"serve", "--root", root, "--listen", tc.listen}
		if strings.HasPrefix(tc.listen, "tcp:0") {
			args = append(args, "--insecure-tcp")
		}
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("serve --listen %s: got %v, %q; want a failure saying %q", tc.listen, err, out, tc.want)
		}
	}
}

// A second serve of the same state directory is refused while the first
// one runs, instead of stealing its socket.
func TestServeRefusesSecondServer(t *testing.T) {
	d, _ := startServe(t)
	out, err := exec.Command(binary, "serve", "--root", d.Root).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already serves") {
		t.Errorf("second serve: got %v, %q; want it refused", err, out)
	}
}

// A loopback TCP listener works when asked for explicitly, and the log
// says at start what it gives away.
func TestServeLoopbackTCP(t *testing.T) {
	d, _ := startServe(t, "--listen", "tcp:127.0.0.1:56401", "--insecure-tcp")
	_, root := attach(t, ninep.Address{Network: "tcp", Addr: "127.0.0.1:56401"})
	if _, err := root.Lookup(context.Background(), "workspaces"); err != nil {
		t.Fatal(err)
	}
	if log := d.log.String(); !strings.Contains(log, "unauthenticated TCP listener") {
		t.Errorf("log of an --insecure-tcp server: %q; want a warning about the unauthenticated listener", log)
	}
}

// go-fuse's POSIX suite through `gsvfs mount --server`: FUSE in front of
// gsvfs's 9P client and server.
func TestPosixOver9P(t *testing.T) {
	_, addr := startServe(t)
	d := mountServer(t, addr.String())
	runPosix(t, d.Path("workspaces"), map[string]string{
		"FcntlFlockLocksFile": notNative["FcntlFlockLocksFile"],
		// 9P2000.L has no fallocate message: the mount answers
		// EOPNOTSUPP, as the Linux kernel's own 9p client does.
		"Fallocate":         "no fallocate in 9P2000.L",
		"FallocateKeepSize": "no fallocate in 9P2000.L",
	})
}

// A second `gsvfs mount` of a state directory attaches to the daemon that
// already serves it: both mounts show one tree.
func TestSecondMountAttaches(t *testing.T) {
	first := startMount(t)
	mnt := filepath.Join(smSharedTempDir(t), "second")
	second := mountAt(t, first.Root, mnt)
	t.Cleanup(func() { second.stop(t) })
	if !strings.Contains(second.log.String(), "attaching") {
		t.Errorf("second mount's log does not say it attached to the running daemon:\n%s", second.log)
	}
	testenv.Run(t, "", "sh", "-c", "echo shared > "+second.Path("workspaces/f"))
	if got := testenv.Run(t, "", "cat", first.Path("workspaces/f")); got != "shared\n" {
		t.Errorf("written through the second mount, read through the first: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(first.Root, "workspaces", "f")); string(b) != "shared\n" {
		t.Errorf("on disk: %q, %v", b, err)
	}
	// The second daemon attached once, as root, but files its users make
	// are theirs, as through the first mount.
	asUID(t, 65534, `echo x > "$1"/file && mkdir "$1"/dir && ln -s file "$1"/link`, second.Path("workspaces"))
	for _, name := range []string{"file", "dir", "link"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(first.Root, "workspaces", name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s made by uid 65534 through the attached mount: owner %d:%d, want 65534:65534", name, st.Uid, st.Gid)
		}
	}
}

// A --server mount outlives a restart of its server: while the server is
// away the mount stays and calls fail at once (EHOSTDOWN, or EIO for one
// in flight), nothing hangs; once it is back, paths work again and a file
// held open across the restart reads on at its offset.
func TestMountServerRestart(t *testing.T) {
	srv, addr := startServe(t)
	d := mountServer(t, addr.String())
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	if err := os.WriteFile(d.Path("workspaces/f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	held, first := openHead(t, d.Path("workspaces/f"), 300<<10)
	testenv.Run(t, "", "mkdir", d.Path("proc/follow"))
	stream := exec.Command("cat", d.Path("proc/follow/stream"))
	if err := stream.Start(); err != nil {
		t.Fatal(err)
	}

	srv.stop(t)
	if err := waitWithin(10*time.Second, stream.Wait); err == errStillWaiting {
		t.Errorf("cat of a session's stream still waits 10s after its server stopped")
	}
	for what, call := range map[string]func() error{
		"cat of a file": func() error { _, err := os.ReadFile(d.Path("workspaces/f")); return err },
		"ls":            func() error { _, err := os.ReadDir(d.Path("workspaces")); return err },
		"read of a file held open": func() error {
			_, err := held.ReadAt(make([]byte, 10), int64(len(data)-10)) // past what the kernel read ahead
			return err
		},
	} {
		err := waitWithin(10*time.Second, call)
		if e := vfs.Errno(err); e != syscall.EHOSTDOWN && e != syscall.EIO {
			t.Errorf("%s while the server is away: %v, want EHOSTDOWN or EIO", what, err)
		}
	}
	if types := lcMounts(t, d.Mnt); len(types) == 0 || !strings.HasPrefix(types[len(types)-1], "fuse") {
		t.Fatalf("the mount is gone while its server is away: mounted at %s: %q", d.Mnt, types)
	}
	if fi, err := os.Stat(d.Mnt); err != nil || !fi.IsDir() {
		t.Errorf("stat of the mount's root while its server is away: %v, %v; want the directory as last seen", fi, err)
	}

	again := launch(t, &daemon{Root: srv.Root}, "serve", "--root", srv.Root)
	t.Cleanup(func() { again.stop(t) })
	var got []byte
	testenv.Eventually(t, 20*time.Second, "cat of a file after the server restarted", func() (bool, string) {
		err := waitWithin(10*time.Second, func() (err error) {
			got, err = os.ReadFile(d.Path("workspaces/f"))
			return err
		})
		if err == errStillWaiting {
			t.Fatalf("cat of a file after the server restarted: %v\n%s", err, d.log)
		}
		return err == nil, fmt.Sprintf("%v\n%s", err, d.log)
	})
	if !bytes.Equal(got, data) {
		t.Errorf("cat of a file after the restart: %d bytes, not the file's", len(got))
	}
	if out := testenv.Run(t, "", "ls", d.Path("workspaces")); strings.TrimSpace(out) != "f" {
		t.Errorf("ls after the restart: %q", out)
	}
	rest, err := io.ReadAll(held)
	if err != nil {
		t.Errorf("reading on from a file held open across the restart: %v", err)
	} else if !bytes.Equal(append(first, rest...), data) {
		t.Errorf("a file held open across the restart: %d bytes, not the file's", len(first)+len(rest))
	}
}

// While a --server mount's server is away, another user cannot take its
// place by listening at its socket's path: the mount attaches only to a
// server that runs as the first one did, and until then calls fail with
// EHOSTDOWN.
func TestMountServerNotTakenOver(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run a server as another user")
	}
	shared := smSharedTempDir(t)
	sockDir, nobodyRoot := filepath.Join(shared, "sock"), filepath.Join(shared, "nobody")
	for _, dir := range []string{sockDir, nobodyRoot} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sockDir, 0o777); err != nil { // anyone may listen there
		t.Fatal(err)
	}
	if err := os.Chown(nobodyRoot, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	sock := "unix:" + filepath.Join(sockDir, "s.sock")
	srv, _ := startServe(t, "--listen", sock)
	d := mountServer(t, sock)
	srv.stop(t)

	other := launch(t, &daemon{Root: nobodyRoot, prefix: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
		"serve", "--root", filepath.Join(nobodyRoot, "state"), "--listen", sock)
	t.Cleanup(func() { other.stop(t) })
	testenv.Eventually(t, 10*time.Second, "the mount refuses the other user's server", func() (bool, string) {
		return strings.Contains(d.log.String(), "not attaching"), d.log.String()
	})
	_, err := os.ReadDir(d.Mnt)
	if vfs.Errno(err) != syscall.EHOSTDOWN {
		t.Errorf("ls of the mount with another user's server at its path: %v, want EHOSTDOWN", err)
	}
}

// openHead opens p, to be held open until the test ends, and reads its
// first n bytes.
func openHead(t *testing.T, p string, n int) (*os.File, []byte) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	head := make([]byte, n)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	return f, head
}

// errStillWaiting is waitWithin's answer for a call that has not returned.
var errStillWaiting = errors.New("still waiting")

// waitWithin runs fn and returns its error, or errStillWaiting if it has
// not returned by limit (it is left running): a bound against hanging,
// never a measure of speed.
func waitWithin(limit time.Duration, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		return errStillWaiting
	}
}
