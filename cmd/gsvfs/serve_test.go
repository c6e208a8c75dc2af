//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	return d, ninep.Address{Network: "unix", Addr: filepath.Join(root, "gsvfs.sock")}
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
	if err == nil || !strings.Contains(string(out), "already listening") {
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
	run(t, "", "sh", "-c", "echo shared > "+second.Path("workspaces/f"))
	if got := run(t, "", "cat", first.Path("workspaces/f")); got != "shared\n" {
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

// When its server goes away, a --server mount stops: calls fail or the
// mount is gone within a second or two, and nothing hangs.
func TestMountServerGone(t *testing.T) {
	srv, addr := startServe(t)
	d := mountServer(t, addr.String())
	run(t, "", "sh", "-c", "echo x > "+d.Path("workspaces/f"))
	srv.cmd.Process.Kill()
	<-srv.done
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- exec.Command("cat", d.Path("workspaces/f")).Run() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("cat through a mount whose server is dead succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cat through a mount whose server is dead hangs")
	}
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the mount daemon did not exit after losing its server")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Mnt, &st); err == nil && st.Type == 0x65735546 {
		t.Error("the dead mount is still mounted")
	}
	t.Logf("server loss handled in %v", time.Since(start))
}
