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

	"github.com/gsvfs/gsvfs/internal/testenv"
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
	base, home, bin := ordinaryUser(t)
	mnt := filepath.Join(base, "mnt")
	userDir(t, mnt)
	asUser := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: userCred()}
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
	testenv.WaitFor(t, 10*time.Second, "the user's mount gone after umount", func() bool {
		return len(lcMounts(t, mnt)) == 0
	})
}

// ordinaryUser makes what a test needs to run things as the ordinary
// user smOther: a directory every user can traverse (t.TempDir's parent
// is private to root), the user's home in it, and a copy of the gsvfs
// binary there, since the binary's own directory is private too.
func ordinaryUser(t *testing.T) (base, home, bin string) {
	t.Helper()
	base = testenv.SharedDir(t, "gsvfs-user-", 0o755)
	home = filepath.Join(base, "home")
	userDir(t, home)
	bin = filepath.Join(base, "gsvfs")
	copyExecutable(t, binary, bin)
	return base, home, bin
}

// userDir makes the directory dir owned by smOther.
func userDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, smOther, smOther); err != nil {
		t.Fatal(err)
	}
}

// copyExecutable copies the program from to to, executable by all.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// userCred is the identity of smOther, with no supplementary groups.
func userCred() *syscall.Credential {
	return &syscall.Credential{Uid: smOther, Gid: smOther, Groups: []uint32{}}
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
