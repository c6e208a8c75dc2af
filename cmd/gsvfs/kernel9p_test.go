//go:build linux

package main

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// TestKernel9P mounts the 9P server under test with the real Linux client:
// ../shared/tools/vm9p boots a qemu guest whose kernel mounts the server's
// unix socket at /mnt/9p, and the guest runs testdata/guest9p (go-fuse's
// posixtest and our own file system tests, built here as a static test
// binary) plus a few busybox checks, through testdata/guest9p/guest.sh.
//
// GSVFS_KERNEL9P_SERVER picks the server: gsvfs (the default: `gsvfs serve`)
// or diod, the reference 9P2000.L server. With gsvfs the guest also drives
// shell sessions through /proc (testdata/guest9p/proc_test.go); they run
// here, on the host, which afterwards checks that the sessions the guest
// removed left no process behind. GSVFS_VM9P overrides the path of
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
	// GuestEnv are guest.env's lines about the server's /proc (empty
	// without one): where it is and the session settings it runs with.
	GuestEnv string
	log      *testenv.LogBuffer
}

// The session settings of the gsvfs server, small enough for the guest to
// check: output past the cap, and sessions forgotten after they end.
const (
	k9SessionOutput    = 10000
	k9SessionRetention = 2 * time.Second
)

// k9SecretVar is a variable of the gsvfs server's environment that no
// session may see (it is not on the allow-list); its value is random.
const k9SecretVar = "GSVFS_TEST_SECRET"

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
	script, err := filepath.Abs(filepath.Join("testdata", "guest9p", "guest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	k9TrackInputs(t, filepath.Dir(script), runner)

	srv := k9StartServer(t, kind, base)
	env := fmt.Sprintf("GSVFS_GUEST_SERVER=%s\nGSVFS_GUEST_SUBDIR=%s\n%s", kind, k9Subdir, srv.GuestEnv)
	if err := os.WriteFile(filepath.Join(files, "guest.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "--socket", srv.Sock, "--msize", "1048576",
		"--timeout", "300", "--opts", srv.Opts, script, "--", files)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	if srv.GuestEnv != "" {
		// Whatever the guest's verdict: survivors are killed.
		k9CheckRemovedSessions(t, filepath.Join(srv.Host, k9Subdir, "proc.pids"), err == nil)
	}
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

// k9CheckRemovedSessions checks that no process is left of the sessions
// the guest removed: pidsFile has a "NAME PID" line for each, PID being
// the session's leader, whose pid is its process group and its session
// (shelld starts each session with setsid). Survivors are killed. The
// file must exist if the guest passed.
func k9CheckRemovedSessions(t *testing.T, pidsFile string, guestPassed bool) {
	t.Helper()
	data, err := os.ReadFile(pidsFile)
	if err != nil {
		if guestPassed {
			t.Errorf("the guest's pids of the removed sessions: %v", err)
		}
		return
	}
	leaders := map[int]string{} // pid: session name
	for line := range strings.Lines(string(data)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var name string
		var pid int
		if n, err := fmt.Sscanf(line, "%s %d", &name, &pid); n != 2 || err != nil || pid <= 1 {
			t.Errorf("%s: bad line %q, want NAME PID", pidsFile, line)
			continue
		}
		leaders[pid] = name
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pgrp, sid, ok := k9ProcStat(pid)
		if !ok || state == "Z" {
			continue // gone, or dead and waiting for its parent
		}
		name, ok := leaders[pgrp]
		if !ok {
			if name, ok = leaders[sid]; !ok {
				continue
			}
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		what := fmt.Sprintf("rmdir of session %s left pid %d (%q, state %s, process group %d, session %d) running",
			name, pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "), state, pgrp, sid)
		t.Error(what)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// k9ProcStat reads the state, process group and session of a process from
// /proc/PID/stat.
func k9ProcStat(pid int) (state string, pgrp, sid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// "pid (comm) state ppid pgrp session ...": comm may hold anything.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 4 {
		return "", 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	return f[0], pgrp, sid, err1 == nil && err2 == nil
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
		secret := "gsvfs-secret-" + rand.Text()
		srv := &k9Server{Name: "gsvfs", Sock: sock, Opts: "uname=root", Host: state, log: &testenv.LogBuffer{},
			GuestEnv: fmt.Sprintf("GSVFS_GUEST_PROC=proc\nGSVFS_GUEST_PROC_OUTPUT=%d\n"+
				"GSVFS_GUEST_PROC_RETENTION=%v\nGSVFS_GUEST_PROC_SECRET=%s\n",
				k9SessionOutput, k9SessionRetention, secret)}
		args := []string{"serve", "--root", state, "--listen", "unix:" + sock,
			"--session-output", strconv.Itoa(k9SessionOutput), "--session-retention", k9SessionRetention.String()}
		if bash, err := exec.LookPath("bash"); err == nil {
			args = append(args, "--session-shell", bash)
		}
		cmd := exec.Command(binary, args...)
		// An empty home: the sessions' login shells read no start-up
		// files of the user running the test (slow, or noisy).
		home := filepath.Join(dir, "home")
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "HOME="+home, k9SecretVar+"="+secret)
		k9Serve(t, srv, cmd)
		return srv
	case "diod":
		if _, err := exec.LookPath("diod"); err != nil {
			t.Skip("SKIPPED: GSVFS_KERNEL9P_SERVER=diod but diod is not installed (apt-get install diod)")
		}
		export := filepath.Join(dir, "export")
		if err := os.MkdirAll(filepath.Join(export, "workspaces"), 0o755); err != nil {
			t.Fatal(err)
		}
		srv := &k9Server{Name: "diod", Sock: sock, Opts: "aname=" + export + ",uname=root", Host: export, log: &testenv.LogBuffer{}}
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
