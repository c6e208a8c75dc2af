//go:build linux

package main

// The daemon's life: durability across a restart, recovery from a killed
// daemon, the background form and umount, SIGTERM with busy files, the
// errors a person sees, the informational commands, and the read-only
// and reserved parts of the tree.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/docs/man"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// lcResult is one finished run of the gsvfs binary.
type lcResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// lcGsvfs runs the gsvfs binary in dir (the test's directory if empty)
// and waits at most 20 seconds for it. A background daemon it starts
// must not hold its output open: the run ends when gsvfs itself exits.
func lcGsvfs(t *testing.T, dir string, args ...string) lcResult {
	t.Helper()
	return lcGsvfsAs(t, dir, binary, nil, nil, args...)
}

// lcGsvfsAs is lcGsvfs running the gsvfs binary bin with the environment
// env and as the user of cred (nil: this process's).
func lcGsvfsAs(t *testing.T, dir, bin string, env []string, cred *syscall.Credential, args ...string) lcResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := lcResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), code: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		t.Fatalf("gsvfs %s did not finish within 20s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("gsvfs %s exited but its output stayed open for 2s more (a child holds stdout or stderr)", strings.Join(args, " "))
	}
	return r
}

// lcMounts returns the filesystem types mounted at dir, in stacking
// order, from /proc/self/mountinfo.
func lcMounts(t *testing.T, dir string) []string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || strings.ReplaceAll(fields[4], `\040`, " ") != abs {
			continue
		}
		if i := slices.Index(fields, "-"); i > 0 && i+1 < len(fields) {
			types = append(types, fields[i+1])
		}
	}
	return types
}

// lcPidGone polls, bounded, until process pid has exited. A zombie
// counts as gone: a background daemon is nobody's child here, and the
// reaper of orphans may be slow or absent.
func lcPidGone(pid int, within time.Duration) bool {
	return testenv.Poll(within, func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// pid (comm) state ...: the state follows the last ')'.
		i := bytes.LastIndexByte(data, ')')
		return err != nil || i > 0 && i+2 < len(data) && data[i+2] == 'Z'
	})
}

// lcSession returns the session id of process pid, from /proc.
func lcSession(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid pgrp session ...
	i := bytes.LastIndexByte(data, ')')
	fields := strings.Fields(string(data[i+1:]))
	if i < 0 || len(fields) < 4 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat: %q", pid, data)
	}
	return strconv.Atoi(fields[3])
}

// lcServingLine is what `gsvfs mount` prints once a background daemon
// serves.
var lcServingLine = regexp.MustCompile(`^gsvfs: serving (.+) at (.+) \(pid (\d+), log (.+)\)\n$`)

// lcBackground runs the background form of `gsvfs mount` in dir and
// returns the daemon's pid from its serving line. The daemon is unmounted
// and, if still alive, killed when the test ends.
func lcBackground(t *testing.T, dir, root, mnt string) (int, lcResult) {
	t.Helper()
	r := lcGsvfs(t, dir, "mount", "--root", root, mnt)
	if r.code != 0 {
		t.Fatalf("gsvfs mount --root %s %s: exit status %d, want 0\nstdout: %s\nstderr: %s", root, mnt, r.code, r.stdout, r.stderr)
	}
	m := lcServingLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("gsvfs mount printed %q, want one line like \"gsvfs: serving ROOT at MNT (pid N, log ROOT/gsvfs.log)\"", r.stdout)
	}
	pid, _ := strconv.Atoi(m[3])
	abs := mnt
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, mnt)
	}
	t.Cleanup(func() {
		if len(lcMounts(t, abs)) > 0 {
			syscall.Unmount(abs, syscall.MNT_DETACH)
		}
		if !lcPidGone(pid, 0) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid, r
}

// lcUmount runs `gsvfs umount` and waits for the daemon pid to exit.
func lcUmount(t *testing.T, mnt string, pid int) {
	t.Helper()
	r := lcGsvfs(t, "", "umount", mnt)
	if want := "gsvfs: unmounted " + mnt + "\n"; r.code != 0 || r.stdout != want {
		t.Errorf("gsvfs umount %s: exit status %d, stdout %q, want 0 and %q\nstderr: %s", mnt, r.code, r.stdout, want, r.stderr)
	}
	start := time.Now()
	if !lcPidGone(pid, 10*time.Second) {
		t.Errorf("background daemon pid %d still running 10s after gsvfs umount, want it to exit", pid)
	} else {
		t.Logf("daemon pid %d exited %v after umount returned", pid, time.Since(start).Round(time.Millisecond))
	}
	if m := lcMounts(t, mnt); len(m) != 0 {
		t.Errorf("after gsvfs umount, %s still has mounts %v, want none", mnt, m)
	}
}

// lcSum is the hex sha256 of data.
func lcSum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// lcCheckFiles checks that each file under base has the sha256 wanted.
func lcCheckFiles(t *testing.T, where, base string, want map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, err := wlHashFile(filepath.Join(base, name))
		if err != nil {
			t.Errorf("%s: reading %s: %v", where, name, err)
			continue
		}
		if got != want[name] {
			t.Errorf("%s: sha256 of %s is %s, want %s", where, name, got, want[name])
		}
	}
}

// lcLogProblems returns the warning and error lines of a daemon log.
func lcLogProblems(log string) []string {
	var bad []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") || strings.Contains(line, "panic") {
			bad = append(bad, line)
		}
	}
	return bad
}

// TestLifecycleRestartDurability writes files of every kind through the
// mount, stops the daemon with SIGTERM, mounts the same state directory
// again, and finds every byte, mode and time where it was.
func TestLifecycleRestartDurability(t *testing.T) {
	d := startMount(t)
	want := map[string]string{}
	write := func(name string, data []byte, perm os.FileMode) {
		t.Helper()
		p := d.Path(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, perm); err != nil {
			t.Fatal(err)
		}
		want[name] = lcSum(data)
	}

	big := make([]byte, 20<<20)
	rand.Read(big)
	write("workspaces/big.bin", big, 0o644)
	write("home/alice/notes.txt", []byte("remember the milk\n"), 0o600)
	write("etc/gsvfs.conf", []byte("setting = 1\n"), 0o644)
	write("workspaces/a/b/c/d/nested.txt", []byte("deep\n"), 0o644)
	write("workspaces/empty", nil, 0o644)
	write("workspaces/tool.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)

	// fsync'd file, and its directory.
	synced := []byte(strings.Repeat("synced line\n", 1000))
	f, err := os.Create(d.Path("workspaces/synced.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(synced); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("fsync on the mount: %v, want success", err)
	}
	f.Close()
	if dir, err := os.Open(d.Path("workspaces")); err == nil {
		if err := dir.Sync(); err != nil {
			t.Errorf("fsync of a directory on the mount: %v, want success", err)
		}
		dir.Close()
	}
	want["workspaces/synced.txt"] = lcSum(synced)

	// Overwritten shorter, appended, saved atomically, sparse.
	write("workspaces/shrunk", bytes.Repeat([]byte("long "), 5000), 0o644)
	write("workspaces/shrunk", []byte("short\n"), 0o644)
	write("workspaces/appended", []byte("one\n"), 0o644)
	if f, err := os.OpenFile(d.Path("workspaces/appended"), os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.WriteString("two\n")
		f.Close()
	}
	want["workspaces/appended"] = lcSum([]byte("one\ntwo\n"))
	write("workspaces/.saved.tmp", []byte("saved atomically\n"), 0o644)
	if err := os.Rename(d.Path("workspaces/.saved.tmp"), d.Path("workspaces/saved.txt")); err != nil {
		t.Fatal(err)
	}
	want["workspaces/saved.txt"] = want["workspaces/.saved.tmp"]
	delete(want, "workspaces/.saved.tmp")
	if f, err := os.Create(d.Path("workspaces/sparse")); err == nil {
		f.WriteAt([]byte("end"), 10<<20)
		f.Close()
	}
	want["workspaces/sparse"] = lcSum(append(make([]byte, 10<<20), "end"...))
	if err := os.Symlink("big.bin", d.Path("workspaces/big.link")); err != nil {
		t.Fatal(err)
	}

	lcCheckFiles(t, "before the restart", d.Mnt, want)
	before := wlSnapshot(t, d.Path("workspaces")) + "\n" + wlSnapshot(t, d.Path("home"))
	// A file written through gsvfs is a real file in the state directory.
	if host := wlSnapshot(t, filepath.Join(d.Root, "workspaces")) + "\n" + wlSnapshot(t, filepath.Join(d.Root, "home")); host != before {
		wlCompare(t, "the state directory seen directly (got mount, want state directory)", host, before)
	}

	start := time.Now()
	d.stop(t)
	t.Logf("SIGTERM to exit: %v", time.Since(start).Round(time.Millisecond))
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("daemon exit status after SIGTERM: got %d, want 0\n%s", code, d.log)
	}
	if m := lcMounts(t, d.Mnt); len(m) != 0 {
		t.Errorf("after SIGTERM, %s is still mounted (%v), want no mount", d.Mnt, m)
	}
	if bad := lcLogProblems(d.log.String()); len(bad) > 0 {
		t.Errorf("daemon log has warnings or errors, want none:\n%s", strings.Join(bad, "\n"))
	}
	lcCheckFiles(t, "in the state directory with no daemon", d.Root, want)

	d2 := mountAt(t, d.Root, d.Mnt)
	t.Cleanup(func() { d2.stop(t) })
	lcCheckFiles(t, "after the restart", d2.Mnt, want)
	after := wlSnapshot(t, d2.Path("workspaces")) + "\n" + wlSnapshot(t, d2.Path("home"))
	wlCompare(t, "the tree after the restart (got after, want before)", before, after)
	if target, err := os.Readlink(d2.Path("workspaces/big.link")); err != nil || target != "big.bin" {
		t.Errorf("symlink after the restart: got %q, %v, want \"big.bin\"", target, err)
	}
}

// TestLifecycleStaleMount kills a daemon with SIGKILL, which leaves a dead
// mount that answers ENOTCONN; the background form of mount must clear it
// and serve, and umount must make that daemon exit.
func TestLifecycleStaleMount(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("workspaces/before-crash.txt"), []byte("survives\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lcKill(t, d)
	// The kernel may answer stat of the root from its attribute cache
	// for the cache time (a second) after the daemon died; then ENOTCONN.
	start := time.Now()
	var err error
	testenv.Poll(5*time.Second, func() bool {
		_, err = os.Stat(d.Mnt)
		return errors.Is(err, syscall.ENOTCONN)
	})
	if !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("stat of a killed daemon's mount point, 5s after the kill: got %v, want ENOTCONN (transport endpoint is not connected)", err)
	} else {
		t.Logf("stat of the dead mount point says ENOTCONN %v after the kill", time.Since(start).Round(time.Millisecond))
	}
	if _, err := os.ReadFile(d.Path("workspaces/before-crash.txt")); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("read under a killed daemon's mount point: got %v, want ENOTCONN", err)
	}
	if _, err := os.ReadDir(d.Mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("ls of a killed daemon's mount point: got %v, want ENOTCONN", err)
	}
	if m := lcMounts(t, d.Mnt); !slices.Equal(m, []string{"fuse.gsvfs"}) {
		t.Errorf("mounts at %s after SIGKILL: got %v, want the dead [fuse.gsvfs]", d.Mnt, m)
	}

	pid, r := lcBackground(t, "", d.Root, d.Mnt)
	t.Logf("background mount over the dead one: %v", r.took.Round(time.Millisecond))
	if m := lcMounts(t, d.Mnt); !slices.Equal(m, []string{"fuse.gsvfs"}) {
		t.Errorf("mounts at %s after mounting again: got %v, want one [fuse.gsvfs] (the dead one cleared, not stacked)", d.Mnt, m)
	}
	if got, err := os.ReadFile(d.Path("workspaces/before-crash.txt")); err != nil || string(got) != "survives\n" {
		t.Errorf("file written before the crash: got %q, %v, want \"survives\\n\"", got, err)
	}
	if err := os.WriteFile(d.Path("home/after.txt"), []byte("after\n"), 0o644); err != nil {
		t.Errorf("writing on the new mount: %v", err)
	} else if got, err := os.ReadFile(filepath.Join(d.Root, "home/after.txt")); err != nil || string(got) != "after\n" {
		t.Errorf("state directory copy of a file written on the new mount: got %q, %v, want \"after\\n\"", got, err)
	}
	entries, err := os.ReadDir(d.Mnt)
	if err != nil || len(entries) != 7 {
		t.Errorf("listing the new mount's root: got %d entries, %v, want 7", len(entries), err)
	}

	lcUmount(t, d.Mnt, pid)
	log, err := os.ReadFile(filepath.Join(d.Root, "gsvfs.log"))
	if err != nil {
		t.Fatalf("daemon log: %v", err)
	}
	if !bytes.Contains(log, []byte("mount gone; exiting")) {
		t.Errorf("daemon log does not say the daemon exited when the mount went away:\n%s", log)
	}
	if bad := lcLogProblems(string(log)); len(bad) > 0 {
		t.Errorf("daemon log has warnings or errors, want none:\n%s", strings.Join(bad, "\n"))
	}
}

// lcKill kills a foreground daemon with SIGKILL and waits for it. The
// dead mount it leaves is detached when the test ends.
func lcKill(t *testing.T, d *daemon) {
	t.Helper()
	t.Cleanup(func() {
		if len(lcMounts(t, d.Mnt)) > 0 {
			syscall.Unmount(d.Mnt, syscall.MNT_DETACH)
		}
	})
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		t.Fatal("daemon still running 10s after SIGKILL")
	}
}

// TestLifecycleRemountRightAfterCrash mounts again at once after a daemon
// was killed, as a supervisor restarting it would: the dead mount must be
// cleared and the new daemon serve, even while the kernel still answers
// stat of the dead root from its cache.
func TestLifecycleRemountRightAfterCrash(t *testing.T) {
	for _, form := range []string{"foreground", "background"} {
		t.Run(form, func(t *testing.T) {
			d := startMount(t)
			if _, err := os.Stat(d.Mnt); err != nil {
				t.Fatal(err)
			}
			lcKill(t, d)
			var pid int
			if form == "background" {
				pid, _ = lcBackground(t, "", d.Root, d.Mnt)
			} else {
				d2 := mountAt(t, d.Root, d.Mnt)
				t.Cleanup(func() { d2.stop(t) })
			}
			if m := lcMounts(t, d.Mnt); !slices.Equal(m, []string{"fuse.gsvfs"}) {
				t.Errorf("mounts at %s after mounting again: got %v, want one [fuse.gsvfs]", d.Mnt, m)
			}
			if entries, err := os.ReadDir(d.Mnt); err != nil || len(entries) != 7 {
				t.Errorf("ls of the new mount: %d entries, %v, want 7", len(entries), err)
			}
			if pid != 0 {
				lcUmount(t, d.Mnt, pid)
			}
		})
	}
}

// TestLifecycleUmountDeadMount clears a killed daemon's mount with
// gsvfs umount, as the "already mounted" message advises.
func TestLifecycleUmountDeadMount(t *testing.T) {
	d := startMount(t)
	lcKill(t, d)
	r := lcGsvfs(t, "", "umount", d.Mnt)
	if want := "gsvfs: unmounted " + d.Mnt + "\n"; r.code != 0 || r.stdout != want {
		t.Errorf("gsvfs umount of a dead mount: exit status %d, stdout %q, want 0 and %q\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	if m := lcMounts(t, d.Mnt); len(m) != 0 {
		t.Errorf("after gsvfs umount of a dead mount, %s has mounts %v, want none", d.Mnt, m)
	}
	if entries, err := os.ReadDir(d.Mnt); err != nil || len(entries) != 0 {
		t.Errorf("the mount point after umount: %d entries, %v, want an empty plain directory", len(entries), err)
	}
}

// TestLifecycleBackground checks the background form: it returns promptly
// with one line naming the state directory, mount point, pid and log; the
// daemon runs in a session of its own and logs to the state directory.
func TestLifecycleBackground(t *testing.T) {
	vfstest.NeedFUSE(t)
	for _, relative := range []bool{false, true} {
		t.Run(map[bool]string{false: "absolute", true: "relative"}[relative], func(t *testing.T) {
			base := t.TempDir()
			root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			var pid int
			var r lcResult
			if relative {
				pid, r = lcBackground(t, base, "state", "mnt")
			} else {
				pid, r = lcBackground(t, "", root, mnt)
			}
			t.Logf("gsvfs mount returned after %v", r.took.Round(time.Millisecond))
			if r.took > 10*time.Second {
				t.Errorf("gsvfs mount took %v to return, want a few seconds at most", r.took)
			}
			logPath := filepath.Join(root, "gsvfs.log")
			if want := fmt.Sprintf("gsvfs: serving %s at %s (pid %d, log %s)\n", root, mnt, pid, logPath); r.stdout != want {
				t.Errorf("gsvfs mount printed %q, want %q", r.stdout, want)
			}
			if r.stderr != "" {
				t.Errorf("gsvfs mount wrote %q to stderr, want nothing", r.stderr)
			}
			if fi, err := os.Stat(logPath); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("daemon log %s: %v, want a regular file", logPath, err)
			}
			if m := lcMounts(t, mnt); !slices.Equal(m, []string{"fuse.gsvfs"}) {
				t.Errorf("mounts at %s: got %v, want [fuse.gsvfs]", mnt, m)
			}
			if sid, err := lcSession(pid); err != nil || sid != pid {
				t.Errorf("daemon pid %d session: got %d, %v, want its own session (%d)", pid, sid, err, pid)
			}
			if err := os.WriteFile(filepath.Join(mnt, "workspaces/x"), []byte("x"), 0o644); err != nil {
				t.Errorf("writing on the background mount: %v", err)
			}
			if _, err := os.Stat(filepath.Join(root, "workspaces/x")); err != nil {
				t.Errorf("file written on the background mount is not in the state directory: %v", err)
			}
			lcUmount(t, mnt, pid)
			if log, err := os.ReadFile(logPath); err == nil {
				if !bytes.Contains(log, []byte("serving")) {
					t.Errorf("daemon log %s does not record serving:\n%s", logPath, log)
				}
				if bad := lcLogProblems(string(log)); len(bad) > 0 {
					t.Errorf("daemon log has warnings or errors, want none:\n%s", strings.Join(bad, "\n"))
				}
			}
		})
	}
}

// TestLifecycleSIGTERMWithOpenFiles stops a daemon while files on the
// mount are open (by this process and by children, one with its working
// directory there): it detaches lazily and exits 0 within seconds.
func TestLifecycleSIGTERMWithOpenFiles(t *testing.T) {
	d := startMount(t)
	held := d.Path("workspaces/held.txt")
	if err := os.WriteFile(held, []byte("held open\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := os.OpenFile(d.Path("workspaces/written.txt"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	dir, err := os.Open(d.Path("workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()

	stdinHolder := exec.Command("sh", "-c", `exec sleep 30 < "$1"`, "sh", held)
	cwdHolder := exec.Command("sleep", "30")
	cwdHolder.Dir = d.Path("workspaces")
	for _, c := range []*exec.Cmd{stdinHolder, cwdHolder} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// The children have the file open once they are asleep.
	testenv.Eventually(t, 5*time.Second, "the child holding the file as stdin is asleep", func() (bool, string) {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", stdinHolder.Process.Pid))
		return strings.TrimSpace(string(comm)) == "sleep", "it runs " + string(comm)
	})

	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		took := time.Since(start)
		t.Logf("SIGTERM with open files to exit: %v", took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("daemon exit after SIGTERM with open files: %v, want exit status 0\n%s", err, d.log)
		}
		if took > 5*time.Second {
			t.Errorf("daemon took %v to exit after SIGTERM with open files, want under 5s", took)
		}
	case <-time.After(15 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		t.Fatalf("daemon still running 15s after SIGTERM with files open on the mount\n%s", d.log)
	}
	if m := lcMounts(t, d.Mnt); len(m) != 0 {
		t.Errorf("after SIGTERM with open files, %s still has mounts %v, want none (detached)", d.Mnt, m)
	}
	if entries, err := os.ReadDir(d.Mnt); err != nil || len(entries) != 0 {
		t.Errorf("the mount point after the daemon left: %d entries, %v, want an empty plain directory", len(entries), err)
	}
	// What the open descriptors see now is the kernel's business; it must
	// not hang this process.
	buf := make([]byte, 16)
	n, rerr := reader.ReadAt(buf, 0)
	_, werr := writer.Write([]byte("late"))
	t.Logf("after the daemon exited: read of a held file: %q, %v; write: %v", buf[:n], rerr, werr)
	if got, err := os.ReadFile(filepath.Join(d.Root, "workspaces/held.txt")); err != nil || string(got) != "held open\n" {
		t.Errorf("state directory copy of the held file: got %q, %v, want \"held open\\n\"", got, err)
	}
}

// TestLifecycleErrors checks that every mistake a person can make fails
// with exit status 1, one clear line on stderr and nothing mounted, in the
// foreground and background forms alike.
func TestLifecycleErrors(t *testing.T) {
	live := startMount(t)
	base := t.TempDir()
	file := filepath.Join(base, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(base, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(base, "missing")
	state := func(name string) string { return filepath.Join(base, "state-"+name) }

	type errCase struct {
		name string
		args []string
		want string
		// forms: run with and without --foreground (mount only).
		forms bool
		// target must carry no new mount afterwards.
		target string
	}
	cases := []errCase{
		{"mountpoint does not exist", []string{"mount", "--root", state("1"), missing}, "mount point " + missing + " does not exist", true, ""},
		{"mountpoint is a file", []string{"mount", "--root", state("2"), file}, "mount point " + file + " is not a directory", true, file},
		{"already mounted", []string{"mount", "--root", state("3"), live.Mnt}, "mount point " + live.Mnt + " is already mounted", true, ""},
		{"root under a file", []string{"mount", "--root", filepath.Join(file, "state"), plain}, "cannot be created", true, plain},
		{"umount a plain directory", []string{"umount", plain}, plain + " is not a mount point", false, plain},
		{"umount a missing directory", []string{"umount", missing}, missing + " is not a mount point", false, ""},
		{"unknown flag", []string{"mount", "--bogus", plain}, "unknown flag: --bogus", false, plain},
		{"bad log level", []string{"--log-level", "loud", "mount", "--root", state("4"), plain}, `bad --log-level "loud"`, true, plain},
		{"mount without a mount point", []string{"mount", "--root", state("5")}, "accepts 1 arg(s), received 0", true, ""},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`, false, ""},
	}
	if os.Geteuid() == 0 {
		tmpfs := filepath.Join(base, "tmpfs")
		if err := os.Mkdir(tmpfs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=1m"); err == nil {
			t.Cleanup(func() { syscall.Unmount(tmpfs, syscall.MNT_DETACH) })
			cases = append(cases, errCase{"umount a tmpfs", []string{"umount", tmpfs}, tmpfs + " is a tmpfs mount, not gsvfs", false, ""})
		} else {
			t.Logf("no tmpfs case: mount tmpfs: %v", err)
		}
	}
	// A state directory that cannot be written even by root: immutable.
	immutable := state("immutable")
	for _, sub := range []string{"home", "workspaces", "etc"} { // the disk trees of a state directory
		if err := os.MkdirAll(filepath.Join(immutable, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("chattr", "+i", immutable).CombinedOutput(); err == nil {
		t.Cleanup(func() { exec.Command("chattr", "-i", immutable).Run() })
		cases = append(cases, errCase{"root not writable", []string{"mount", "--root", immutable, plain}, "state directory " + immutable + " cannot be written", true, plain})
	} else {
		t.Logf("SKIPPED the unwritable state directory case: chattr +i %s: %v %s", immutable, err, out)
	}

	for _, tc := range cases {
		forms := []string{""}
		if tc.forms {
			forms = []string{"--foreground", "background"}
		}
		for _, form := range forms {
			name := tc.name
			args := tc.args
			if form != "" {
				name += "/" + strings.TrimPrefix(form, "--")
			}
			if form == "--foreground" {
				i := slices.Index(args, "mount")
				args = slices.Concat(args[:i+1], []string{"--foreground"}, args[i+1:])
			}
			t.Run(name, func(t *testing.T) {
				r := lcGsvfs(t, "", args...)
				if r.code != 1 {
					t.Errorf("gsvfs %s: exit status %d, want 1\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
				// The message is the last line of stderr; a foreground
				// daemon logs to stderr too, so log lines may come first.
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				last := lines[len(lines)-1]
				if !strings.HasPrefix(last, "gsvfs: ") || !strings.Contains(last, tc.want) || !strings.HasSuffix(r.stderr, "\n") {
					t.Errorf("gsvfs %s: stderr %q, want it to end with the line \"gsvfs: ...%s...\"", strings.Join(args, " "), r.stderr, tc.want)
				}
				if form != "--foreground" && len(lines) != 1 {
					t.Errorf("gsvfs %s: stderr has %d lines, want one clear line:\n%s", strings.Join(args, " "), len(lines), r.stderr)
				}
				if r.stdout != "" {
					t.Errorf("gsvfs %s: stdout %q, want nothing", strings.Join(args, " "), r.stdout)
				}
				if r.took > 10*time.Second {
					t.Errorf("gsvfs %s took %v to fail, want it prompt", strings.Join(args, " "), r.took)
				}
				if tc.target != "" {
					if m := lcMounts(t, tc.target); len(m) != 0 {
						t.Errorf("after the failed gsvfs %s, %s has mounts %v, want none", strings.Join(args, " "), tc.target, m)
					}
				}
			})
		}
	}
	// The live mount went through all that untouched.
	if m := lcMounts(t, live.Mnt); !slices.Equal(m, []string{"fuse.gsvfs"}) {
		t.Errorf("mounts at the live mount point after the error cases: got %v, want [fuse.gsvfs]", m)
	}
	if err := os.WriteFile(live.Path("workspaces/still-alive"), []byte("ok"), 0o644); err != nil {
		t.Errorf("writing on the live mount after the error cases: %v", err)
	}
}

// TestLifecycleInfoCommands checks version, help and shell completion.
func TestLifecycleInfoCommands(t *testing.T) {
	r := lcGsvfs(t, "", "version")
	if !regexp.MustCompile(`^gsvfs v?\d+\.\d+\.\d+\S* `).MatchString(r.stdout) || r.code != 0 {
		t.Errorf("gsvfs version: exit status %d, stdout %q, want 0 and \"gsvfs X.Y.Z ...\"", r.code, r.stdout)
	}

	r = lcGsvfs(t, "", "--help")
	if r.code != 0 {
		t.Errorf("gsvfs --help: exit status %d, want 0\n%s", r.code, r.stderr)
	}
	var commands []string
	if _, after, ok := strings.Cut(r.stdout, "Available Commands:\n"); ok {
		for _, line := range strings.Split(after, "\n") {
			if !strings.HasPrefix(line, "  ") {
				break
			}
			commands = append(commands, strings.Fields(line)[0])
		}
	}
	for _, want := range []string{"mount", "umount", "version", "completion"} {
		if !slices.Contains(commands, want) {
			t.Errorf("gsvfs --help lists commands %v, want %q among them\n%s", commands, want, r.stdout)
		}
	}

	r = lcGsvfs(t, "", "mount", "--help")
	for _, want := range []string{"--root", "--foreground", "MOUNTPOINT"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gsvfs mount --help does not mention %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "--debug-fuse") {
		t.Errorf("gsvfs mount --help shows the hidden --debug-fuse flag:\n%s", r.stdout)
	}

	r = lcGsvfs(t, "", "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "__start_gsvfs") || !strings.Contains(r.stdout, "complete ") {
		t.Errorf("gsvfs completion bash: exit status %d, want 0 and a script defining __start_gsvfs and calling complete; got:\n%.500s", r.code, r.stdout)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		script := filepath.Join(t.TempDir(), "gsvfs.bash")
		if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n on the completion script: %v\n%s", err, out)
		}
	}
}

// TestLifecycleReadOnlyTree checks the built-in manual pages at /etc/man
// (readable, like a MANPATH, and read-only) and the reserved, empty,
// read-only top-level directories.
func TestLifecycleReadOnlyTree(t *testing.T) {
	d := startMount(t)

	entries, err := os.ReadDir(d.Mnt)
	if err != nil {
		t.Fatal(err)
	}
	var top []string
	for _, e := range entries {
		top = append(top, e.Name())
	}
	if want := []string{"dev", "etc", "home", "mnt", "proc", "sys", "workspaces"}; !slices.Equal(top, want) {
		t.Errorf("ls of the root: got %v, want %v", top, want)
	}

	// Every embedded page is served at man<section>/<name>, byte for byte.
	pages, err := fs.ReadDir(man.Pages, ".")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, p := range pages {
		ext := strings.TrimPrefix(path.Ext(p.Name()), ".")
		if ext == "" || ext == "go" {
			continue
		}
		sections["man"+ext] = true
		want, _ := fs.ReadFile(man.Pages, p.Name())
		got, err := os.ReadFile(d.Path("etc/man/man" + ext + "/" + p.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("etc/man/man%s/%s: got %d bytes, %v, want the %d bytes of docs/man/%s", ext, p.Name(), len(got), err, len(want), p.Name())
		}
	}
	if len(sections) == 0 {
		t.Fatal("no manual pages embedded")
	}
	var got []string
	if entries, err := os.ReadDir(d.Path("etc/man")); err == nil {
		for _, e := range entries {
			got = append(got, e.Name())
		}
	}
	if want := slices.Sorted(maps.Keys(sections)); !slices.Equal(got, want) {
		t.Errorf("ls etc/man: got %v, want %v", got, want)
	}
	if entries, err := os.ReadDir(d.Path("etc")); err != nil || !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == "man" && e.IsDir() }) {
		t.Errorf("ls etc does not show the man directory (%v)", err)
	}
	if _, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command("man", "-M", d.Path("etc/man"), "7", "gsvfs")
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "LANG=C", "LC_ALL=C", "MANWIDTH=80")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "GSVFS(7)") || !strings.Contains(string(out), "NAME") {
			t.Errorf("man -M MNT/etc/man 7 gsvfs: %v, want the formatted page:\n%.400s", err, out)
		}
	} else {
		t.Log("man is not installed: the page was checked by reading it only")
	}

	// Nothing under /etc/man changes.
	page := d.Path("etc/man/man7/gsvfs.7")
	mandir := d.Path("etc/man/man7")
	erofs := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: got %v, want EROFS", what, err)
		}
	}
	erofs("overwriting a man page", os.WriteFile(page, []byte("x"), 0o644))
	_, err = os.OpenFile(page, os.O_WRONLY|os.O_APPEND, 0)
	erofs("opening a man page to append", err)
	erofs("creating a file in etc/man/man7", os.WriteFile(filepath.Join(mandir, "new.7"), []byte("x"), 0o644))
	erofs("mkdir in etc/man", os.Mkdir(d.Path("etc/man/man9"), 0o755))
	erofs("removing a man page", os.Remove(page))
	erofs("renaming a man page", os.Rename(page, filepath.Join(mandir, "other.7")))
	erofs("chmod of a man page", os.Chmod(page, 0o666))
	erofs("truncating a man page", os.Truncate(page, 0))
	// symlink(2) and link(2) may also say EPERM: "the filesystem does not
	// support" them.
	for what, err := range map[string]error{
		"symlink in etc/man/man7":   os.Symlink("gsvfs.7", filepath.Join(mandir, "alias.7")),
		"hard link in etc/man/man7": os.Link(page, filepath.Join(mandir, "hard.7")),
	} {
		if !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EPERM) {
			t.Errorf("%s: got %v, want EROFS or EPERM", what, err)
		}
	}
	if b, err := os.ReadFile(page); err != nil || !strings.HasPrefix(string(b), ".TH GSVFS 7") {
		t.Errorf("the man page after the refused writes: %v, %.40q, want it unchanged", err, b)
	}

	// The synthetic directories exist, hold only what their subsystems
	// put there, and take nothing (/proc has its own tests: proc_test.go;
	// /sys/devices and /mnt, devices_test.go).
	for name, want := range map[string]string{"sys": "capabilities config cron devices log mounts stats uptime users version", "dev": "full log null random urandom zero", "mnt": "", "sys/devices": "gsv"} {
		p := d.Path(name)
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			t.Errorf("/%s: %v, want a directory", name, err)
			continue
		}
		entries, err := os.ReadDir(p)
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("ls /%s: %q, %v, want %q", name, got, err, want)
		}
		erofs("creating a file in /"+name, os.WriteFile(filepath.Join(p, "x"), nil, 0o644))
		erofs("mkdir in /"+name, os.Mkdir(filepath.Join(p, "x"), 0o755))
		if err := os.Remove(p); err == nil {
			t.Errorf("rmdir /%s succeeded, want an error", name)
		}
	}

	// The root takes no new names either.
	erofs("creating a file in /", os.WriteFile(d.Path("newfile"), nil, 0o644))
	erofs("mkdir in /", os.Mkdir(d.Path("newdir"), 0o755))
	erofs("symlink in /", os.Symlink("home", d.Path("newlink")))
	if err := os.Rename(d.Path("home"), d.Path("house")); err == nil {
		t.Errorf("rename /home /house succeeded, want an error")
	}
	if err := os.Rename(d.Path("workspaces"), d.Path("home/ws")); err == nil {
		t.Errorf("rename /workspaces /home/ws succeeded, want an error")
	}
	if entries, err := os.ReadDir(d.Mnt); err != nil || len(entries) != 7 {
		t.Errorf("ls of the root after the refused changes: %d entries, %v, want 7", len(entries), err)
	}
}
