//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// The integration tests run the real gsvfs binary, mount the tree with
// real FUSE and touch it from this process, which never serves it.

// binary is the gsvfs command built once for the whole test run.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(stderrChildEnv) != "" || os.Getenv(userChildEnv) != "" || os.Getenv(ixPartEnv) != "" {
		os.Exit(m.Run()) // a test's child process: it runs no daemon
	}
	// The daemon under test may be built with the race detector: its
	// data races are reported in its log, which tests print on failure,
	// and make it exit non-zero (66) at SIGTERM.
	bin, remove, err := testenv.Build(".", os.Getenv("GSVFS_RACE") != "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

// daemon is one running `gsvfs mount --foreground`.
type daemon struct {
	Root, Mnt string
	env       []string            // the daemon's environment; nil: this process's
	prefix    []string            // a command the binary runs under (ip netns exec NS)
	bin       string              // the gsvfs binary to run; "": binary
	cred      *syscall.Credential // the user it runs as; nil: this process's
	cmd       *exec.Cmd
	done      chan error
	log       *testenv.LogBuffer
}

// startMount mounts a fresh state directory at a fresh mount point and
// returns once the mount is ready. The daemon is stopped (SIGTERM) when
// the test ends.
func startMount(t testing.TB, extra ...string) *daemon {
	t.Helper()
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	d := mountAt(t, filepath.Join(base, "state"), filepath.Join(base, "mnt"), extra...)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// mountAt starts a foreground daemon on root at mnt (creating mnt).
func mountAt(t testing.TB, root, mnt string, extra ...string) *daemon {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"mount", "--foreground", "--root", root}, extra...)
	return launch(t, &daemon{Root: root, Mnt: mnt}, append(args, mnt)...)
}

// launch starts the gsvfs binary with args (and d.env as its environment
// when set) and waits until it says it is serving.
func launch(t testing.TB, d *daemon, args ...string) *daemon {
	t.Helper()
	bin := binary
	if d.bin != "" {
		bin = d.bin
	}
	p := testenv.Start(t, testenv.Server{Path: bin, Args: args, Prefix: d.prefix, Env: d.env, Cred: d.cred, Ready: "serving"})
	d.cmd, d.done, d.log = p.Cmd, p.Done, p.Log
	return d
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop(t testing.TB) {
	t.Helper()
	if d.cmd.ProcessState != nil {
		// Already gone (a test killed it): only clear its dead mount.
		d.detach()
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("gsvfs mount exited with %v after SIGTERM\n%s", err, d.log)
		}
	case <-time.After(15 * time.Second):
		// Its goroutines, for the log: where it hangs.
		d.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
		t.Errorf("gsvfs mount did not exit within 15s of SIGTERM\n%s", d.log)
	}
	// A daemon that died uncleanly leaves a dead mount: clear it so the
	// temp directory can be removed.
	d.detach()
}

func (d *daemon) detach() {
	if d.Mnt != "" {
		syscall.Unmount(d.Mnt, syscall.MNT_DETACH)
	}
}

// Path returns the host path of p inside the mount.
func (d *daemon) Path(p string) string { return filepath.Join(d.Mnt, p) }

// likeNative runs seq (a sequence of calls that describes its results as
// text) on native disk and in a fresh directory of a fresh mount, and fails
// unless the two agree: ext4 is the reference for what the tree must do.
func likeNative(t *testing.T, what string, seq func(t *testing.T, dir string) string) {
	t.Helper()
	d := startMount(t)
	want := seq(t, t.TempDir())
	got := seq(t, d.Path("workspaces"))
	if got != want {
		t.Errorf("%s on the mount:\n%s\nwant, as on ext4:\n%s", what, got, want)
	}
}
