//go:build linux

package main

// Unmounting and mounting again at once (issue 29, item 6): gsvfs umount
// returns once the daemon has let go of the state directory, and the next
// mount serves it, never a daemon on its way out.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// remountRounds is how many times TestLifecycleRemountLoop unmounts and
// mounts again, as the reproduction does.
const remountRounds = 50

// TestLifecycleRemountLoop runs `gsvfs umount M; gsvfs mount M` 50 times
// with no pause, as root. Each time the daemon that served M must be gone
// when umount returns, and the new mount must read a file right away and
// again once the old daemon is surely gone; every tenth round reads once
// more 2 s later, as the loop does each time (every round would
// add 100 s to the suite). A new mount that attached to the leaving
// daemon fails the second read.
func TestLifecycleRemountLoop(t *testing.T) {
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	remountLoop(t, root, mnt, remountRounds, func(args ...string) lcResult { return lcGsvfs(t, "", args...) }, os.ReadFile)
}

// TestLifecycleRemountLoopUser is the loop of TestLifecycleRemountLoop,
// 10 rounds, as an ordinary user: unmounts through fusermount3, and the
// runtime directory in the user's temporary directory.
func TestLifecycleRemountLoopUser(t *testing.T) {
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run gsvfs as another user")
	}
	openDevFuseToAll(t)
	base, home, bin := ordinaryUser(t)
	u := &userMount{base: base, home: home}
	root, mnt := filepath.Join(home, "state"), filepath.Join(base, "mnt")
	userDir(t, mnt)
	gsvfs := func(args ...string) lcResult { return lcGsvfsAs(t, home, bin, u.env(), userCred(), args...) }
	// The user's mount admits the user alone, not root: the user reads.
	read := func(p string) ([]byte, error) {
		cat := exec.Command("cat", p)
		cat.SysProcAttr = &syscall.SysProcAttr{Credential: userCred()}
		return cat.Output()
	}
	remountLoop(t, root, mnt, 10, gsvfs, read)
}

// remountLoop mounts root at mnt with gsvfs, then unmounts and mounts it
// again rounds times (remountRound), and unmounts it; read reads a file
// of the mount.
func remountLoop(t *testing.T, root, mnt string, rounds int, gsvfs func(args ...string) lcResult, read func(string) ([]byte, error)) {
	pid, err := remountMount(gsvfs, root, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	// Written on the disk: the mount's watch shows it.
	if err := os.WriteFile(filepath.Join(root, "workspaces", "probe"), []byte("probe"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := func(when string) error {
		p := filepath.Join(mnt, "workspaces", "probe")
		got, err := read(p)
		if err != nil || string(got) != "probe" {
			return fmt.Errorf("read %s %s: got %q, %v, want \"probe\"", p, when, got, err)
		}
		return nil
	}
	var failed []string
	for i := range rounds {
		next, err := remountRound(gsvfs, root, mnt, probe, pid, i%10 == 9)
		if err != nil {
			failed = append(failed, fmt.Sprintf("round %d: %v", i+1, err))
		}
		if next == 0 {
			break // nothing is mounted to go on with
		}
		pid = next
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d remounts failed, want none:\n%s", len(failed), rounds, strings.Join(failed, "\n"))
	}
	if r := gsvfs("umount", mnt); r.code != 0 || !lcPidGone(pid, 0) {
		t.Errorf("the last gsvfs umount: exit status %d, %s; daemon pid %d gone: %v, want it gone", r.code, r.stderr, pid, lcPidGone(pid, 0))
	}
}

// remountMount mounts root at mnt in the background and returns the
// daemon's pid.
func remountMount(gsvfs func(args ...string) lcResult, root, mnt string) (int, error) {
	r := gsvfs("mount", "--root", root, mnt)
	m := lcServingLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		return 0, fmt.Errorf("gsvfs mount: exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	return strconv.Atoi(m[3])
}

// remountRound unmounts mnt, whose daemon is pid, mounts root there
// again at once and reads the probe file through the new mount: at once, after
// the old daemon has exited and, if late, 2 s later. It returns the new
// daemon's pid (0 if the mount failed) and what went wrong.
func remountRound(gsvfs func(args ...string) lcResult, root, mnt string, probe func(when string) error, pid int, late bool) (int, error) {
	if r := gsvfs("umount", mnt); r.code != 0 {
		return 0, fmt.Errorf("gsvfs umount: exit status %d: %s", r.code, r.stderr)
	}
	var errs []error
	if !lcPidGone(pid, 0) {
		errs = append(errs, fmt.Errorf("daemon pid %d still running when gsvfs umount returned, want it gone", pid))
	}
	next, err := remountMount(gsvfs, root, mnt)
	if err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	errs = append(errs, probe("right after mounting"))
	if !lcPidGone(pid, 10*time.Second) {
		errs = append(errs, fmt.Errorf("old daemon pid %d still running 10 s after umount", pid))
	}
	errs = append(errs, probe("once the old daemon had exited"))
	if late {
		time.Sleep(2 * time.Second)
		errs = append(errs, probe("2 s later"))
	}
	return next, errors.Join(errs...)
}

// readProbe reads the probe file, which says "probe".
func readProbe(probe, when string) error {
	got, err := os.ReadFile(probe)
	if err != nil || string(got) != "probe" {
		return fmt.Errorf("read %s %s: got %q, %v, want \"probe\"", probe, when, got, err)
	}
	return nil
}

// TestLifecycleAttachedMountTakesOver unmounts the mount whose daemon
// serves the state directory while a second mount is attached to it: the
// second one serves the tree itself once the first daemon is gone, and a
// third mount attaches to it.
func TestLifecycleAttachedMountTakesOver(t *testing.T) {
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	root := filepath.Join(base, "state")
	mnts := []string{filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")}
	for _, m := range mnts {
		if err := os.Mkdir(m, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := lcBackground(t, "", root, mnts[0])
	second, _ := lcBackground(t, "", root, mnts[1])
	if err := os.WriteFile(filepath.Join(mnts[0], "workspaces", "probe"), []byte("probe"), 0o644); err != nil {
		t.Fatal(err)
	}
	lcUmount(t, mnts[0], first)
	probe := filepath.Join(mnts[1], "workspaces", "probe")
	// The second mount redials with a backoff before it takes over:
	// until then its calls fail with EHOSTDOWN.
	var last error
	if !testenv.Poll(10*time.Second, func() bool { last = readProbe(probe, "after the first mount's umount"); return last == nil }) {
		t.Errorf("the attached mount never served the tree once its daemon was gone: %v", last)
	}
	third, _ := lcBackground(t, "", root, mnts[2])
	if err := readProbe(filepath.Join(mnts[2], "workspaces", "probe"), "through a third mount"); err != nil {
		t.Error(err)
	}
	lcUmount(t, mnts[2], third)
	lcUmount(t, mnts[1], second)
}

// TestLifecycleUnmountedWithSessions unmounts a mount while a session
// runs, with umount(2) as umount(8) or fusermount3 -u would, and with
// gsvfs umount: the session's mount namespace holds a copy of the mount,
// so the daemon must end the sessions itself once its mount has left its
// namespace, and exit, rather than serve the copies for as long as the
// session lives; gsvfs umount returns once it has.
func TestLifecycleUnmountedWithSessions(t *testing.T) {
	t.Run("umount(2)", func(t *testing.T) {
		d := startMount(t)
		longSession(t, d.Mnt)
		if err := syscall.Unmount(d.Mnt, 0); err != nil {
			t.Fatalf("umount %s: %v", d.Mnt, err)
		}
		select {
		case err := <-d.done:
			if err != nil {
				t.Errorf("the daemon exited with %v after its mount was unmounted\n%s", err, d.log)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the daemon still runs 10 s after its mount was unmounted, want it gone\n%s", d.log)
		}
	})
	t.Run("gsvfs umount", func(t *testing.T) {
		vfstest.NeedFUSE(t)
		base := t.TempDir()
		root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		pid, _ := lcBackground(t, "", root, mnt)
		longSession(t, mnt)
		if r := lcGsvfs(t, "", "umount", mnt); r.code != 0 {
			t.Fatalf("gsvfs umount: exit status %d: %s", r.code, r.stderr)
		}
		if !lcPidGone(pid, 0) {
			t.Errorf("daemon pid %d still running when gsvfs umount returned, want it gone", pid)
		}
	})
}

// longSession starts a session running for minutes in the mount at mnt,
// and returns once its shell's profile is done: a profile killed halfway
// may leave its locks behind (pyenv's rehash does), for every later login
// shell of the machine to wait on.
func longSession(t *testing.T, mnt string) {
	t.Helper()
	session := filepath.Join(mnt, "proc", "long")
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(session, "ctl"), []byte("exec echo started && sleep 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the session's command started", func() (bool, string) {
		out, err := os.ReadFile(filepath.Join(session, "stdout"))
		return err == nil && strings.Contains(string(out), "started"), string(out)
	})
}
