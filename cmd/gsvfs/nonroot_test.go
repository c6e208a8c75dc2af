//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// TestMountAsOrdinaryUser runs the background mount as uid 1000: no
// allow_other, the mount made through fusermount3, data through the daemon
// where the kernel refuses an unprivileged passthrough. The user's files
// work and belong to the user; umount ends the daemon.
func TestMountAsOrdinaryUser(t *testing.T) {
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to start a process as another user")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatalf("fusermount3 is missing (install fuse3): %v", err)
	}
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		t.Fatal(err)
	}
	devFuseWasPrivate := fi.Mode().Perm()&0o006 == 0
	// t.TempDir's parent is private to root; uid 1000 needs a way in.
	base, err := os.MkdirTemp("", "gsvfs-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	mnt := filepath.Join(base, "mnt")
	for _, d := range []string{home, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "gsvfs")
	data, err := os.ReadFile(binary) // binary's directory is private too
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	asUser := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if devFuseWasPrivate {
		// Refused with words a person can act on, not fusermount's code.
		out, err := asUser(bin, "mount", mnt)
		if err == nil || !strings.Contains(out, "cannot open /dev/fuse: permission denied") {
			t.Errorf("mount with /dev/fuse closed to the user: %v %q, want a clear /dev/fuse error", err, out)
		}
	}
	openDevFuseToAll(t)
	out, err := asUser(bin, "mount", mnt)
	if err != nil {
		t.Fatalf("gsvfs mount as uid 1000: %v\n%s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if want := filepath.Join(home, ".local/share/gsvfs"); !strings.Contains(out, "serving "+want+" at "+mnt) {
		t.Errorf("mount said %q, want it to serve the default state directory %s", out, want)
	}
	file := filepath.Join(mnt, "workspaces", "mine.txt")
	if out, err := asUser("sh", "-c", "echo private > "+file+" && cat "+file); err != nil || out != "private\n" {
		t.Errorf("write and read back as the user: %q, %v", out, err)
	}
	var st syscall.Stat_t
	host := filepath.Join(home, ".local/share/gsvfs/workspaces/mine.txt")
	if err := syscall.Stat(host, &st); err != nil || st.Uid != 1000 {
		t.Errorf("the file on the host: uid %d, %v; want owned by 1000", st.Uid, err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("root reached a private user mount; want it refused (no allow_other)")
	}
	if out, err := asUser(bin, "umount", mnt); err != nil {
		t.Fatalf("gsvfs umount as uid 1000: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if len(lcMounts(t, mnt)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the user's mount is still there 10s after umount")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openDevFuseToAll gives /dev/fuse the mode Debian gives it (0666) for the
// test, where the machine keeps it private to root, and restores it.
func openDevFuseToAll(t *testing.T) {
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o006 == 0o006 {
		return
	}
	t.Logf("/dev/fuse is mode %#o here; opening it to all users for this test", fi.Mode().Perm())
	if err := os.Chmod("/dev/fuse", 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod("/dev/fuse", fi.Mode().Perm()) })
}
