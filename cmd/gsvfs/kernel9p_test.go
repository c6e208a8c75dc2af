package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKernel9P mounts the 9P server under test with the real Linux client:
// ../shared/tools/vm9p boots a qemu guest whose kernel mounts the server's
// unix socket at /mnt/9p, and the guest runs testdata/guest9p (go-fuse's
// posixtest and our own file system tests, built here as a static test
// binary) plus a few busybox checks, through testdata/guest9p/guest.sh.
//
// GSVFS_KERNEL9P_SERVER picks the server: gsvfs (the default: `gsvfs serve`)
// or diod, the reference 9P2000.L server. GSVFS_VM9P overrides the path of
// vm9p's run script. The first run apt-installs qemu and a kernel (~35 s);
// a run then takes one to two minutes, most of it in the emulated guest.

// k9Subdir is the guest's test directory, relative to the mount's root.
const k9Subdir = "workspaces/guest9p"

// k9Server is a running 9P server the guest can mount.
type k9Server struct {
	Name string
	Sock string // unix socket it listens on
	Opts string // v9fs mount options for it
	Host string // the host directory the mount's root shows
	log  *logBuffer
}

func TestKernel9P(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; vm9p runs qemu as root and installs it with apt-get on first use")
	}
	runner := k9Runner(t)
	kind := os.Getenv("GSVFS_KERNEL9P_SERVER")
	if kind == "" {
		kind = "gsvfs"
	}
	base := t.TempDir()
	files := filepath.Join(base, "guest9p") // shipped whole to /vm9p/files/guest9p
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "test", "-c", "-o", filepath.Join(files, "guest9p.test"), "./testdata/guest9p")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest tests: %v\n%s", err, out)
	}
	env := fmt.Sprintf("GSVFS_GUEST_SERVER=%s\nGSVFS_GUEST_SUBDIR=%s\n", kind, k9Subdir)
	if err := os.WriteFile(filepath.Join(files, "guest.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "guest9p", "guest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	k9TrackInputs(t, filepath.Dir(script), runner)

	srv := k9StartServer(t, kind, base)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "--socket", srv.Sock, "--msize", "1048576",
		"--timeout", "300", "--opts", srv.Opts, script, "--", files)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		t.Fatalf("vm9p run against %s failed after %v: %v\n%s\n--- %s log ---\n%s%s",
			srv.Name, took, err, out, srv.Name, srv.log, k9GuestLog(srv))
	}
	if !strings.Contains(string(out), "guest9p: PASS") {
		t.Fatalf("vm9p run against %s exited 0 without the guest's PASS line:\n%s", srv.Name, out)
	}
	t.Logf("vm9p run against %s: %v\n%s", srv.Name, took, out)

	// What the guest wrote is on the host.
	dir := filepath.Join(srv.Host, k9Subdir, "sh")
	if got, err := os.ReadFile(filepath.Join(dir, "moved")); err != nil || string(got) != "hello 9p\nmore\n" {
		t.Errorf("sh/moved on the host: got %q, %v; want %q", got, err, "hello 9p\nmore\n")
	}
	want, err := os.ReadFile(filepath.Join(dir, "big.md5"))
	if err != nil {
		t.Fatal(err)
	}
	if got := k9MD5(t, filepath.Join(dir, "big")); got != strings.TrimSpace(string(want)) {
		t.Errorf("md5 of sh/big on the host: got %s, the guest wrote %s", got, want)
	}
}

// k9GuestLog returns the Go tests' -test.v log the guest left in the
// mount, without the lines of tests that passed, for a failure message.
func k9GuestLog(srv *k9Server) string {
	b, err := os.ReadFile(filepath.Join(srv.Host, k9Subdir, "guest9p.log"))
	if err != nil {
		return ""
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- PASS") || trimmed == "" {
			continue
		}
		keep = append(keep, line)
	}
	return "\n--- guest9p.log, passing tests left out ---\n" + strings.Join(keep, "\n")
}

// k9TrackInputs reads the guest's sources and vm9p's run script, so that
// go test's result cache, which knows the files a test reads but not what
// its children use, reruns the test when they change.
func k9TrackInputs(t *testing.T, guestDir, runner string) {
	t.Helper()
	entries, err := os.ReadDir(guestDir)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{runner}
	for _, e := range entries {
		paths = append(paths, filepath.Join(guestDir, e.Name()))
	}
	for _, p := range paths {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
}

// k9Runner returns the path of vm9p's run script: $GSVFS_VM9P, else
// ../shared/tools/vm9p/run from the repository root; it skips the test if
// the default is absent.
func k9Runner(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GSVFS_VM9P"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("GSVFS_VM9P=%s: %v", p, err)
		}
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(filepath.Dir(dir), "shared", "tools", "vm9p", "run")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIPPED: no vm9p at %s (set GSVFS_VM9P to its run script): %v", p, err)
	}
	return p
}

// k9StartServer starts the server kind ("gsvfs" or "diod") on a unix
// socket in dir and stops it when the test ends.
func k9StartServer(t *testing.T, kind, dir string) *k9Server {
	t.Helper()
	sock := filepath.Join(dir, "9p.sock")
	switch kind {
	case "gsvfs":
		// The whole tree (aname empty); its /workspaces is
		// STATE/workspaces on disk.
		state := filepath.Join(dir, "state")
		srv := &k9Server{Name: "gsvfs", Sock: sock, Opts: "uname=root", Host: state, log: &logBuffer{}}
		k9Serve(t, srv, exec.Command(binary, "serve", "--root", state, "--listen", "unix:"+sock))
		return srv
	case "diod":
		if _, err := exec.LookPath("diod"); err != nil {
			t.Skip("SKIPPED: GSVFS_KERNEL9P_SERVER=diod but diod is not installed (apt-get install diod)")
		}
		export := filepath.Join(dir, "export")
		if err := os.MkdirAll(filepath.Join(export, "workspaces"), 0o755); err != nil {
			t.Fatal(err)
		}
		srv := &k9Server{Name: "diod", Sock: sock, Opts: "aname=" + export + ",uname=root", Host: export, log: &logBuffer{}}
		// -n: no authentication; -c /dev/null: no config file.
		k9Serve(t, srv, exec.Command("diod", "-f", "-n", "-e", export, "-l", sock, "-c", "/dev/null", "-L", "stderr"))
		return srv
	}
	t.Fatalf("GSVFS_KERNEL9P_SERVER=%q: want gsvfs or diod", kind)
	return nil
}

// k9Serve starts cmd, returns once srv.Sock exists, and stops the server
// with SIGTERM when the test ends. gsvfs must then exit cleanly.
func k9Serve(t *testing.T, srv *k9Server, cmd *exec.Cmd) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = srv.log, srv.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", srv.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil && srv.Name == "gsvfs" {
				t.Errorf("gsvfs serve exited with %v after SIGTERM\n%s", err, srv.log)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not exit within 15s of SIGTERM\n%s", srv.Name, srv.log)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if fi, err := os.Stat(srv.Sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("%s exited before listening on %s: %v\n%s", srv.Name, srv.Sock, err, srv.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 20s\n%s", srv.Name, srv.Sock, srv.log)
		}
	}
}

// k9MD5 is the hex md5 of a file.
func k9MD5(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
