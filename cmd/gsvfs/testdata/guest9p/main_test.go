// Package guest9p is the file system test that runs inside the vm9p guest
// (../shared/tools/vm9p from the repository root) against a directory on
// the Linux kernel's 9P2000.L client mount. The host builds it with
//
//	CGO_ENABLED=0 go test -c -o DIR/guest9p.test ./cmd/gsvfs/testdata/guest9p
//
// and guest.sh runs it with GSVFS_GUEST_DIR set to a directory on /mnt/9p
// (TestKernel9P in cmd/gsvfs does all of that). Without GSVFS_GUEST_DIR every
// test skips: on the host there is no 9P mount to test.
package guest9p

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// guestDirEnv names the directory on the 9P mount the tests work in.
const guestDirEnv = "GSVFS_GUEST_DIR"

func TestMain(m *testing.M) {
	if path := os.Getenv(lockChildEnv); path != "" {
		// Re-executed by TestFcntlLocks as the second lock owner.
		os.Exit(lockChild(path))
	}
	// Modes below are checked exactly; do not depend on the caller's umask.
	syscall.Umask(0o022)
	if dir := os.Getenv(guestDirEnv); dir != "" {
		mountErr = checkNineP(dir)
		if mountErr == nil {
			// Tests use paths relative to the mount directory. With the
			// kernel's default cache=none an unpinned dentry is dropped at
			// once, so every absolute path would walk all of
			// /mnt/9p/... again (a Twalk and a Tgetattr per element).
			mountErr = os.Chdir(dir)
		}
	}
	os.Exit(m.Run())
}

var (
	// mountErr says why $GSVFS_GUEST_DIR cannot be tested.
	mountErr error
	// onNineP is false only when anyFSEnv let the tests run elsewhere.
	onNineP bool
)

// mountDir returns the directory the tests work in (the current directory,
// which TestMain set to $GSVFS_GUEST_DIR), skipping the test when the
// variable is not set and failing it when the directory is not on a 9P
// mount (a test run against the wrong file system must not pass).
func mountDir(t *testing.T) string {
	t.Helper()
	if os.Getenv(guestDirEnv) == "" {
		t.Skip("SKIPPED: " + guestDirEnv + " is not set; these tests run in the vm9p guest against a 9P mount (see guest.sh)")
	}
	if mountErr != nil {
		t.Fatal(mountErr)
	}
	return "."
}

// serverEnv names the server under test ("diod", "gsvfs"), for knownBug.
const serverEnv = "GSVFS_GUEST_SERVER"

// knownBug skips the (sub)test when the server under test is server,
// which is known to get it wrong for the given reason; every other server
// is held to it.
func knownBug(t *testing.T, server, why string) {
	t.Helper()
	if os.Getenv(serverEnv) == server {
		t.Skipf("SKIPPED: %s is known to fail this: %s", server, why)
	}
}

// diodPathFids is why diod fails the checks that stat an open file after
// its name went away or changed: the kernel's fstat sends Tgetattr on the
// fid it walked to the name, not on the open fid, and diod resolves a fid
// by its path at each call.
const diodPathFids = "Tgetattr on a fid is answered from the fid's path, not from the file the fid was walked to"

// anyFSEnv, when set, lets the tests run on any file system: a way to
// check their expectations against ext4 on the host.
const anyFSEnv = "GSVFS_GUEST_ANYFS"

// checkNineP fails unless dir is a directory whose longest mount point
// prefix in /proc/mounts is a 9p mount.
func checkNineP(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s=%s is not a directory", guestDirEnv, dir)
	}
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return err
	}
	defer f.Close()
	best, fstype := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		mp := fields[1]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, fstype = mp, fields[2]
		}
	}
	onNineP = fstype == "9p"
	if !onNineP && os.Getenv(anyFSEnv) == "" {
		return fmt.Errorf("%s=%s is on %s (%q), not on a 9p mount", guestDirEnv, dir, best, fstype)
	}
	return nil
}

// freshDir makes a new, empty directory on the mount for the running test
// and returns its path relative to the current directory. It stays open
// until the test ends, which pins its dentry: lookups inside it then start
// there instead of walking to it again.
func freshDir(t *testing.T) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp(mountDir(t), name+"-")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return dir
}

// errName is an errno's symbolic name, "ok" for 0.
func errName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// must fails the test at once on error.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantErrno reports a test error unless err carries want (0: success).
func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := vfs.Errno(err); got != want {
		t.Errorf("%s: got %s (%v), want %s", what, errName(got), err, errName(want))
	}
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, "lstat "+p, unix.Lstat(p, &st))
	return st
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, "read "+p, err)
	return string(b)
}

// dirNames lists directory d: its names in order, joined by spaces.
func dirNames(t *testing.T, d string) string {
	t.Helper()
	ents, err := os.ReadDir(d)
	must(t, "readdir "+d, err)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return strings.Join(names, " ")
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	must(t, "write "+p, os.WriteFile(p, []byte(content), 0o644))
}
