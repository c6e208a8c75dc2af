//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// An ordinary user's mount (`gsvfs mount ~/gsv` typed by a user) has no
// passthrough and no allow_other: every byte goes through the daemon and
// only the user reaches the mount, not root. So the tests here start the
// daemon as smOther and run their checks in a child of this test binary
// as smOther too; the parent only sets up, waits and reports.

// userChildEnv, set in a child run as the ordinary user, holds the
// mount point and the state directory of that user's mount, and which
// part of TestUserMountChild to run: "PART:MNT:STATE".
const userChildEnv = "GSVFS_TEST_USER_MOUNT"

// userMount is a daemon started by smOther and what runs as that user.
type userMount struct {
	*daemon
	base, home string
	testBin    string // a copy of this test binary the user may run
}

// startUserMount starts `gsvfs mount --foreground` as smOther on a state
// directory and mount point of that user's; it is stopped when the test
// ends.
func startUserMount(t *testing.T) *userMount {
	t.Helper()
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to start a mount as another user")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatalf("fusermount3 is missing (install fuse3): %v", err)
	}
	openDevFuseToAll(t)
	base, home, bin := ordinaryUser(t)
	u := &userMount{base: base, home: home, testBin: filepath.Join(base, "gsvfs.test")}
	copyExecutable(t, os.Args[0], u.testBin)
	state, mnt := filepath.Join(home, "state"), filepath.Join(base, "mnt")
	userDir(t, state)
	userDir(t, mnt)
	u.daemon = launch(t, &daemon{Root: state, Mnt: mnt, env: u.env(), bin: bin, cred: userCred()},
		"mount", "--foreground", "--root", state, mnt)
	t.Cleanup(func() { u.stop(t) })
	return u
}

// env is the ordinary user's environment.
func (u *userMount) env() []string {
	env := []string{"HOME=" + u.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "TMPDIR=" + u.home}
	// A child's seed replays as the parent's does.
	if seed, ok := os.LookupEnv("GSVFS_C2O_SEED"); ok {
		env = append(env, "GSVFS_C2O_SEED="+seed)
	}
	return env
}

// runChild runs part of TestUserMountChild as smOther against the mount
// and fails with the child's report when the child fails; each line the
// child prints is logged.
func (u *userMount) runChild(t *testing.T, part string) {
	t.Helper()
	cmd := exec.Command(u.testBin, "-test.run", "^TestUserMountChild$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Dir = u.home
	cmd.Env = append(u.env(), userChildEnv+"="+part+":"+u.Mnt+":"+u.Root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: userCred()}
	out, err := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err != nil || !bytes.Contains(out, []byte("\nPASS\n")) {
		t.Fatalf("%s as uid %d on the user's mount: %v (its output is above)\n%s", part, smOther, err, u.log)
	}
}

// TestUserMountPosix runs the conformance suite of the mount (go-fuse's
// posixtest, as TestPosix does on root's mount) on a mount made by an
// ordinary user, as that user.
func TestUserMountPosix(t *testing.T) {
	startUserMount(t).runChild(t, "posix")
}

// TestUserMountCoherence holds an ordinary user's mount, where the data
// goes through the daemon and the kernel's page cache, to what a process
// sees on the disk: what the mount wrote is on the disk at close(2) and
// fsync(2); a change made on the disk shows through the mount (the watch),
// even over pages written through the mount and not yet closed; O_APPEND
// from two processes, shared mmap writes, a truncate under a mapping and
// O_DIRECT beside cached pages behave as on ext4.
func TestUserMountCoherence(t *testing.T) {
	startUserMount(t).runChild(t, "coherence")
}

// TestUserMountChild is the side of the tests above that runs as the
// ordinary user, in a child of this binary; run by itself it skips.
func TestUserMountChild(t *testing.T) {
	part, rest, _ := strings.Cut(os.Getenv(userChildEnv), ":")
	mnt, state, _ := strings.Cut(rest, ":")
	if state == "" {
		t.Skip("runs only as the child of TestUserMountPosix, TestUserMountCoherence and TestUserMountCloseToOpen")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil || st.Type != unix.FUSE_SUPER_MAGIC {
		t.Fatalf("%s is not the user's FUSE mount (file system type %#x, %v)", mnt, st.Type, err)
	}
	// The root belongs to the mount's user: the kernel then consults no
	// ACL of it on each path walk from it (FUSE never caches the ACL of
	// a mount's root: one GETXATTR round trip per path).
	var root unix.Stat_t
	if err := unix.Stat(mnt, &root); err != nil || root.Uid != uint32(os.Getuid()) {
		t.Errorf("the tree's root belongs to uid %d (%v), want the mount's user %d", root.Uid, err, os.Getuid())
	}
	ws := filepath.Join(mnt, "workspaces")
	switch part {
	case "posix":
		runPosix(t, ws, notNative)
	case "closetoopen":
		dir := filepath.Join(ws, "c2o")
		smMust(t, "mkdir", os.Mkdir(dir, 0o755))
		c2oRounds(t, dir, filepath.Join(state, "workspaces", "c2o"), 100)
	case "coherence":
		for _, c := range userCoherence {
			t.Run(c.name, func(t *testing.T) {
				dir := filepath.Join(ws, c.name)
				smMust(t, "mkdir", os.Mkdir(dir, 0o755))
				c.run(t, dir, filepath.Join(state, "workspaces", c.name))
			})
		}
	default:
		t.Fatalf("%s=%q names no part", userChildEnv, part)
	}
}

// userCoherence are the coherence checks: each gets a fresh directory
// through the mount and the same directory on the disk.
var userCoherence = []struct {
	name string
	run  func(t *testing.T, dir, host string)
}{
	{"OnDiskAtClose", ucOnDiskAtClose},
	{"OnDiskAtFsync", ucOnDiskAtFsync},
	{"DiskChangeShows", ucDiskChangeShows},
	{"DiskChangeWhileHeldForWriting", ucDiskChangeWhileHeld},
	{"WritesBesideADiskChange", ucWritesBesideDiskChange},
	{"HeldFileOnDisk", ucHeldFileOnDisk},
	{"AppendTwoProcesses", ucAppendTwoProcesses},
	{"MmapSharedMsync", ucMmapShared},
	{"TruncateWhileMapped", ucTruncateMapped},
	{"ODirectBesideCachedPages", ucODirect},
	{"LocksAcrossTheDisk", ucLocks},
}

// ucData is n bytes that say where they are, so a misplaced page shows.
func ucData(n int, tag string) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s %08d\n", tag, i)
	}
	return b.Bytes()[:n]
}

// ucWantHost fails unless the file on the disk holds want now.
func ucWantHost(t *testing.T, when, host string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(host)
	if err != nil {
		t.Fatalf("%s: reading the disk: %v", when, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: on the disk: %s", when, smDescribe(got, want))
	}
}

// ucWrite writes data to fd in pieces of odd sizes, as a program's
// buffered writes come.
func ucWrite(t *testing.T, fd int, data []byte) {
	t.Helper()
	for off := 0; off < len(data); {
		n := min(len(data)-off, 4096+off%3000)
		w, err := unix.Write(fd, data[off:off+n])
		if err != nil {
			t.Fatalf("write at %d: %v", off, err)
		}
		off += w
	}
}

// What a process wrote through the mount is on the disk once close(2)
// returns: a new file, and a few bytes in the middle of an existing file
// opened write-only (the kernel may have to read the rest of that page).
func ucOnDiskAtClose(t *testing.T, dir, host string) {
	data := ucData(3<<20+123, "close")
	p := filepath.Join(dir, "new")
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	ucWrite(t, fd, data)
	smMust(t, "close", unix.Close(fd))
	ucWantHost(t, "a new file after close", filepath.Join(host, "new"), data)

	fd, err = unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	smMust(t, "open write-only", err)
	_, err = unix.Pwrite(fd, []byte("MIDDLE"), 5000)
	smMust(t, "pwrite", err)
	smMust(t, "close", unix.Close(fd))
	copy(data[5000:], "MIDDLE")
	ucWantHost(t, "6 bytes written at 5000 into a write-only file, after close", filepath.Join(host, "new"), data)
}

// What a process wrote through the mount is on the disk at once after
// fsync(2) and fdatasync(2), the file still open.
func ucOnDiskAtFsync(t *testing.T, dir, host string) {
	p := filepath.Join(dir, "f")
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(fd)
	data := ucData(1<<20+77, "fsync")
	ucWrite(t, fd, data)
	smMust(t, "fsync", unix.Fsync(fd))
	ucWantHost(t, "after fsync, the file open", filepath.Join(host, "f"), data)
	more := ucData(70000, "fdatasync")
	ucWrite(t, fd, more)
	smMust(t, "fdatasync", unix.Fdatasync(fd))
	ucWantHost(t, "after more writes and fdatasync", filepath.Join(host, "f"), append(data, more...))
}

// ucEventually waits for the file p, read through the mount, to hold
// want. The wait is far below the kernel's cache time of stored files (a
// minute): only the watch can make it pass.
func ucEventually(t *testing.T, what, p string, want []byte) {
	t.Helper()
	var got []byte
	if !testenv.Poll(10*time.Second, func() bool { got, _ = os.ReadFile(p); return bytes.Equal(got, want) }) {
		t.Fatalf("%s did not show through the mount: %s", what, smDescribe(got, want))
	}
}

// A change made on the disk by another process shows through the mount,
// in place at the same size and longer, once the kernel has cached the
// file.
func ucDiskChangeShows(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "f"), filepath.Join(host, "f")
	smMust(t, "write", os.WriteFile(p, []byte("written through the mount\n"), 0o644))
	if got := smReadFile(t, p); string(got) != "written through the mount\n" {
		t.Fatalf("read back through the mount: %q", got)
	}
	for _, v := range []string{"rewritten on the disk now\n", "rewritten on the disk, and longer\n"} {
		smMust(t, "write on the disk", os.WriteFile(h, []byte(v), 0o644))
		ucEventually(t, fmt.Sprintf("the disk's %q", v), p, []byte(v))
	}
}

// A change made on the disk to a file that a process has written through
// the mount (and synced) and still holds open for writing shows through
// the mount and on the writer's own descriptor, and what the writer
// writes after it lands beside it: the later close puts back nothing the
// disk's writer overwrote.
func ucDiskChangeWhileHeld(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "f"), filepath.Join(host, "f")
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(fd)
	ucWrite(t, fd, ucData(10000, "mount"))
	smMust(t, "fsync", unix.Fsync(fd))
	disk := ucData(10000, "disk!")
	smMust(t, "write on the disk", os.WriteFile(h, disk, 0o644))
	ucEventually(t, "the disk's rewrite of a file held open for writing", p, disk)
	got := make([]byte, len(disk)+10)
	n, err := unix.Pread(fd, got, 0)
	smMust(t, "pread on the writer's descriptor", err)
	if !bytes.Equal(got[:n], disk) {
		t.Errorf("pread on the descriptor that wrote through the mount: %s", smDescribe(got[:n], disk))
	}
	_, err = unix.Pwrite(fd, []byte("after"), int64(len(disk)))
	smMust(t, "pwrite after the change", err)
	smMust(t, "close", unix.Close(fd))
	want := append(disk, "after"...)
	ucWantHost(t, "after the mount's writer closed", h, want)
	if got := smReadFile(t, p); !bytes.Equal(got, want) {
		t.Errorf("through the mount after the writer closed: %s", smDescribe(got, want))
	}
}

// Bytes a process wrote through the mount and has not yet closed or
// synced survive a change another program makes on the disk to other
// pages of the file, and so does that change: a disk drops no write(2)
// that returned.
func ucWritesBesideDiskChange(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "f"), filepath.Join(host, "f")
	want := ucData(3*4096, "orig")
	smMust(t, "write", os.WriteFile(p, want, 0o644))
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	smMust(t, "open", err)
	defer unix.Close(fd)
	_, err = unix.Pwrite(fd, []byte("written through the mount"), 100)
	smMust(t, "pwrite through the mount", err)
	copy(want[100:], "written through the mount")
	hf, err := os.OpenFile(h, os.O_WRONLY, 0)
	smMust(t, "open on the disk", err)
	_, err = hf.WriteAt([]byte("written on the disk"), 2*4096+100)
	smMust(t, "write on the disk", err)
	smMust(t, "close on the disk", hf.Close())
	copy(want[2*4096+100:], "written on the disk")
	smMust(t, "close", unix.Close(fd))
	ucWantHost(t, "the mount's writer closed after a write on the disk to another page", h, want)
	ucEventually(t, "both writes", p, want)
}

// A process that writes a line through the mount and keeps the file
// open (a log) has it on the disk within a few seconds, not at the
// kernel's dirty expiry (30 s), for programs reading the state directory
// (a /proc session) and for a daemon that dies. The poll's bound is far
// below that expiry; the time it took is logged.
func ucHeldFileOnDisk(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "log"), filepath.Join(host, "log")
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(fd)
	var want []byte
	for i := range 3 {
		line := fmt.Sprintf("line %d\n", i)
		_, err := unix.Write(fd, []byte(line))
		smMust(t, "write", err)
		want = append(want, line...)
		start := time.Now()
		var got []byte
		if !testenv.Poll(10*time.Second, func() bool { got, _ = os.ReadFile(h); return bytes.Equal(got, want) }) {
			t.Fatalf("a line written through the mount, the file held open: not on the disk after 10 s: %s", smDescribe(got, want))
		}
		t.Logf("line %d on the disk after %v", i, time.Since(start).Round(time.Millisecond))
	}
}

// Two processes appending to one file with O_APPEND, each holding it
// open, lose and tear no line: both through the mount, then one through
// the mount and one on the disk.
func ucAppendTwoProcesses(t *testing.T, dir, host string) {
	const lines = 400
	for _, c := range []struct{ name, a, b string }{
		{"both through the mount", dir, dir},
		{"one through the mount, one on the disk", dir, host},
	} {
		name := strings.ReplaceAll(c.name, " ", "-")
		script := `exec 3>>"$1"; i=0; while [ $i -lt ` + fmt.Sprint(lines) + ` ]; do echo "$2 $i" >&3; i=$((i+1)); done`
		a := exec.Command("sh", "-c", script, "sh", filepath.Join(c.a, name), "A")
		b := exec.Command("sh", "-c", script, "sh", filepath.Join(c.b, name), "B")
		smMust(t, "start A", a.Start())
		smMust(t, "start B", b.Start())
		smMust(t, "appender A", a.Wait())
		smMust(t, "appender B", b.Wait())
		for _, where := range []string{dir, host} {
			got := string(smReadFile(t, filepath.Join(where, name)))
			if msg := ucCheckAppends(got, lines); msg != "" {
				t.Errorf("%s, read in %s: %s", c.name, where, msg)
			}
		}
	}
}

// ucCheckAppends says what is wrong with the lines of two appenders A
// and B, n each: each line whole, each writer's lines all there in order.
func ucCheckAppends(s string, n int) string {
	next := map[string]int{"A": 0, "B": 0}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var who string
		var k int
		if _, err := fmt.Sscanf(line, "%s %d", &who, &k); err != nil || next[who] != k || len(line) != len(fmt.Sprintf("%s %d", who, k)) {
			return fmt.Sprintf("line %d is %q, want the next line of A (%d) or B (%d)", i+1, line, next["A"], next["B"])
		}
		next[who]++
	}
	if next["A"] != n || next["B"] != n {
		return fmt.Sprintf("%d lines of A and %d of B, want %d each", next["A"], next["B"], n)
	}
	return ""
}

// Writes to a shared mapping of a file of the mount are on the disk once
// msync(MS_SYNC) returns, and read back through the mount.
func ucMmapShared(t *testing.T, dir, host string) {
	p := filepath.Join(dir, "m")
	const size = 5 * 4096
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(fd)
	before := ucData(size, "before")
	ucWrite(t, fd, before)
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	smMust(t, "mmap", err)
	defer unix.Munmap(m)
	want := append(ucData(size-4096, "mapped"), before[size-4096:]...) // the last page untouched
	copy(m, want[:size-4096])
	smMust(t, "msync", unix.Msync(m, unix.MS_SYNC))
	ucWantHost(t, "after msync", filepath.Join(host, "m"), want)
	if got := smReadFile(t, p); !bytes.Equal(got, want) {
		t.Errorf("read through the mount after msync: %s", smDescribe(got, want))
	}
}

// A file truncated while a process maps it behaves as on ext4: the
// mapping sees zeros past the new end in its last page and SIGBUS beyond
// it, the disk has the new size, and a write to the mapping then reaches
// the disk at msync.
func ucTruncateMapped(t *testing.T, dir, host string) {
	want := ucTruncateMappedSeq(t, t.TempDir(), "")
	got := ucTruncateMappedSeq(t, dir, host)
	if got != want {
		t.Errorf("truncate while mapped, on the user's mount:\n%s\nwant, as on ext4:\n%s", got, want)
	}
}

// ucTruncateMappedSeq runs the sequence in dir (whose files are in host
// on the disk; "" when dir is the disk) and describes what it saw.
func ucTruncateMappedSeq(t *testing.T, dir, host string) string {
	if host == "" {
		host = dir
	}
	p := filepath.Join(dir, "t")
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(fd)
	ucWrite(t, fd, ucData(3*4096, "whole"))
	m, err := unix.Mmap(fd, 0, 3*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	smMust(t, "mmap", err)
	defer unix.Munmap(m)
	_ = m[3*4096-1] // the whole mapping read in
	smMust(t, "truncate", os.Truncate(p, 4096+100))
	var out strings.Builder
	for _, off := range []int{10, 4096 + 50, 4096 + 200, 2*4096 + 10} {
		fmt.Fprintf(&out, "byte %d: %s\n", off, ucLoad(m, off))
	}
	var st unix.Stat_t
	smMust(t, "stat on the disk", unix.Stat(filepath.Join(host, "t"), &st))
	fmt.Fprintf(&out, "size on the disk: %d\n", st.Size)
	copy(m[20:], "after truncate")
	smMust(t, "msync", unix.Msync(m[:4096], unix.MS_SYNC))
	b, err := os.ReadFile(filepath.Join(host, "t"))
	smMust(t, "read the disk", err)
	fmt.Fprintf(&out, "on the disk after msync: %d bytes, %q at 20\n", len(b), b[20:34])
	return out.String()
}

// An O_DIRECT write through the mount is on the disk when it returns, and
// a buffered descriptor of the same file, whose pages the kernel holds,
// then reads it too; an O_DIRECT read sees a change made on the disk at
// once, as on ext4.
func ucODirect(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "d"), filepath.Join(host, "d")
	buffered, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	smMust(t, "open", err)
	defer unix.Close(buffered)
	ucWrite(t, buffered, ucData(4*4096, "buffered"))
	got := make([]byte, 4*4096)
	_, err = unix.Pread(buffered, got, 0) // the pages now in the kernel's cache
	smMust(t, "pread", err)
	direct, err := unix.Open(p, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	smMust(t, "open O_DIRECT", err)
	defer unix.Close(direct)
	block := ucAligned(4096)
	copy(block, ucData(4096, "direct"))
	_, err = unix.Pwrite(direct, block, 4096)
	smMust(t, "O_DIRECT pwrite", err)
	want := ucData(4*4096, "buffered")
	copy(want[4096:], block)
	ucWantHost(t, "after an O_DIRECT write returned, the buffered descriptor open", h, want)
	n, err := unix.Pread(buffered, got, 0)
	smMust(t, "pread", err)
	if !bytes.Equal(got[:n], want) {
		t.Errorf("buffered read after an O_DIRECT write: %s", smDescribe(got[:n], want))
	}
	disk := ucData(4096, "disk")
	hf, err := os.OpenFile(h, os.O_WRONLY, 0)
	smMust(t, "open on the disk", err)
	_, err = hf.WriteAt(disk, 2*4096)
	smMust(t, "write on the disk", err)
	smMust(t, "close on the disk", hf.Close())
	_, err = unix.Pread(direct, block, 2*4096)
	smMust(t, "O_DIRECT pread", err)
	if !bytes.Equal(block, disk) {
		t.Errorf("O_DIRECT read right after a write on the disk: %s", smDescribe(block, disk))
	}
}

// A lock taken through the mount and one taken on the disk exclude each
// other, and each side reads what the other wrote under the lock once it
// holds it, with no fsync and no close: the mount's writer's data is on
// the disk when its unlock returns, and the disk's writer's data reads
// through the mount when its next lock returns (as NFS flushes at unlock
// and revalidates at lock).
func ucLocks(t *testing.T, dir, host string) {
	p, h := filepath.Join(dir, "f"), filepath.Join(host, "f")
	smMust(t, "write", os.WriteFile(p, ucData(3*4096, "orig"), 0o644))
	mount, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	smMust(t, "open through the mount", err)
	defer unix.Close(mount)
	disk, err := unix.Open(h, unix.O_RDWR|unix.O_CLOEXEC, 0)
	smMust(t, "open on the disk", err)
	defer unix.Close(disk)
	lock := func(fd int, typ int16) {
		t.Helper()
		lk := unix.Flock_t{Type: typ, Whence: io.SeekStart}
		smMust(t, "lock", unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLKW, &lk))
	}
	read := func(fd int, off int64, n int) string {
		t.Helper()
		b := make([]byte, n)
		_, err := unix.Pread(fd, b, off)
		smMust(t, "pread", err)
		return string(b)
	}
	got := make([]byte, 4096)
	_, err = unix.Pread(mount, got, 0) // the page in the kernel's cache
	smMust(t, "pread", err)

	lock(mount, unix.F_WRLCK)
	_, err = unix.Pwrite(mount, []byte("the mount wrote this"), 100)
	smMust(t, "pwrite through the mount", err)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	smMust(t, "test the lock on the disk", unix.FcntlFlock(uintptr(disk), unix.F_OFD_GETLK, &lk))
	if lk.Type != unix.F_WRLCK {
		t.Errorf("the mount's write lock does not show on the disk (F_OFD_GETLK type %d)", lk.Type)
	}
	lock(mount, unix.F_UNLCK)

	lock(disk, unix.F_WRLCK)
	if got := read(disk, 100, 20); got != "the mount wrote this" {
		t.Errorf("the disk's locker reads %q at 100, want what the mount wrote before its unlock", got)
	}
	_, err = unix.Pwrite(disk, []byte("the disk wrote this"), 200)
	smMust(t, "pwrite on the disk", err)
	lock(disk, unix.F_UNLCK)

	lock(mount, unix.F_RDLCK)
	if got := read(mount, 200, 19); got != "the disk wrote this" {
		t.Errorf("the mount's locker reads %q at 200, want what the disk wrote under its lock", got)
	}
	lock(mount, unix.F_UNLCK)
}

// ucAligned is an n-byte buffer aligned for O_DIRECT.
func ucAligned(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)
	return b[off%4096 : off%4096+n]
}

// ucLoad reads byte off of a mapping, saying "SIGBUS" when the read
// faults.
func ucLoad(m []byte, off int) (s string) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			s = "SIGBUS"
		}
	}()
	return fmt.Sprintf("%q", m[off])
}
