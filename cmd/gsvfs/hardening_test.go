//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A sparse file's holes are seen through the mount (SEEK_DATA and
// SEEK_HOLE ask the stored file), so cp keeps it sparse instead of
// reading gigabytes of zeros.
func TestSparseSeek(t *testing.T) {
	d := startMount(t)
	host := filepath.Join(d.Root, "workspaces", "sparse")
	f, err := os.Create(host)
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	if err := f.Truncate(64 * mib); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("data"), 32*mib); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := seekAll(t, host)
	if want[0] == 0 {
		t.Skipf("SKIPPED: the state directory's filesystem does not keep holes (SEEK_DATA of %s is 0)", host)
	}
	if got := seekAll(t, d.Path("workspaces/sparse")); got != want {
		t.Errorf("SEEK_DATA, SEEK_HOLE from 0 through the mount: %v; on the disk %v", got, want)
	}
	out, err := exec.Command("cp", "--sparse=auto", d.Path("workspaces/sparse"), d.Path("workspaces/copy")).CombinedOutput()
	if err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(d.Root, "workspaces", "copy"), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 4*mib {
		t.Errorf("cp of a 64 MiB file with 4 bytes of data through the mount uses %d bytes: the holes were filled", used)
	}
}

// seekAll is where data and the hole after it start in the file p.
func seekAll(t *testing.T, p string) [2]int64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA)
	if err != nil {
		t.Fatalf("SEEK_DATA %s: %v", p, err)
	}
	hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
	if err != nil {
		t.Fatalf("SEEK_HOLE %s: %v", p, err)
	}
	return [2]int64{data, hole}
}

// df of the mount reports the state directory's filesystem, at the root,
// in a stored tree and in a synthetic one.
func TestStatfsOfMount(t *testing.T) {
	d := startMount(t)
	var disk unix.Statfs_t
	if err := unix.Statfs(d.Root, &disk); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "workspaces", "proc"} {
		var st unix.Statfs_t
		if err := unix.Statfs(d.Path(p), &st); err != nil {
			t.Fatalf("statfs %s: %v", d.Path(p), err)
		}
		if st.Blocks != disk.Blocks || st.Bsize != disk.Bsize {
			t.Errorf("statfs of /%s on the mount: %d blocks of %d; the state directory's filesystem has %d of %d",
				p, st.Blocks, st.Bsize, disk.Blocks, disk.Bsize)
		}
	}
	out, err := exec.Command("df", "--output=size", d.Mnt).Output()
	if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[1] == "0" {
		t.Errorf("df %s: %q, %v; want its size", d.Mnt, out, err)
	}
}

// An ordinary user who holds open as many files as the mount lets one
// user gets EMFILE for the next, alone: root's cat, ls and creates go on,
// and once the user lets go, the user can open again.
func TestOpenLimitPerUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	d := smSharedMount(t, "--max-open-per-user", "40")
	shared := d.Path("workspaces/shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Hold up to 60 opens, report how many worked, and keep them until
	// root has looked (the fifo is not on the mount).
	fifo := filepath.Join(smSharedTempDir(t), "go")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(fifo, 0o666); err != nil { // whatever the umask
		t.Fatal(err)
	}
	script := `exec perl -e 'my @f; for (1..60) { open(my $h, "<", "f") or last; push @f, $h } $| = 1; print scalar(@f), "\n"; <STDIN>' 0<> ` + fifo
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = shared
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: smOther, Gid: smOther, Groups: []uint32{}}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := out.Read(buf)
	if got := strings.TrimSpace(string(buf[:n])); got != "40" {
		t.Errorf("opens held by uid %d with a limit of 40: %q %s", smOther, got, &stderr)
	}
	// Root is not held back by the user's limit.
	for i := range 50 {
		f, err := os.Open(filepath.Join(shared, "f"))
		if err != nil {
			t.Fatalf("root's open %d while the user is at the limit: %v", i, err)
		}
		defer f.Close()
	}
	if _, err := os.ReadDir(shared); err != nil {
		t.Errorf("root's ls while the user is at the limit: %v", err)
	}
	if err := os.WriteFile(filepath.Join(shared, "root-made"), nil, 0o644); err != nil {
		t.Errorf("root's create while the user is at the limit: %v", err)
	}
	// Let it go; non-blocking, so a holder that died cannot hang the test.
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Write([]byte("go\n"))
		w.Close()
	}
	cmd.Wait()
	// The user's opens were given back when it exited.
	again := smAsOther(t, shared, `perl -e 'my @f; for (1..40) { open(my $h, "<", "f") or die "$!"; push @f, $h } print "ok\n"'`)
	if strings.TrimSpace(again) != "ok" {
		t.Errorf("the user's opens after its first process exited: %q", again)
	}
}

// A file replaced by a symlink behind the mount's back (ln -s g f.new;
// mv -T f.new f) is looked up afresh by the next open, as gsvfs(7)
// promises, instead of failing with ELOOP within the cache time; and
// back again.
func TestFileReplacedBySymlink(t *testing.T) {
	d := startMount(t)
	host := filepath.Join(d.Root, "workspaces")
	for name, text := range map[string]string{"f": "file", "g": "target"} {
		if err := os.WriteFile(filepath.Join(host, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := d.Path("workspaces/f")
	for i := range 200 {
		if b, err := os.ReadFile(f); err != nil || string(b) != "file" {
			t.Fatalf("round %d, f a file: %q, %v", i, b, err)
		}
		if err := os.Symlink("g", filepath.Join(host, "f.new")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(host, "f.new"), filepath.Join(host, "f")); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(f); err != nil || string(b) != "target" {
			t.Fatalf("round %d, f replaced by a symlink to g on the disk: %q, %v", i, b, err)
		}
		if err := os.WriteFile(filepath.Join(host, "f.new"), []byte("file"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(host, "f.new"), filepath.Join(host, "f")); err != nil {
			t.Fatal(err)
		}
	}
}

// POSIX ACLs of stored files hold through the mount as on the disk: a
// deny entry keeps a user out of a file its mode lets everyone read, and
// an allow entry lets a user into a file its mode keeps private.
func TestACLsLikeExt4(t *testing.T) {
	requireACLTools(t)
	d := smSharedMount(t)
	native := smSharedTempDir(t)
	mounted := d.Path("workspaces")
	hostDir := filepath.Join(d.Root, "workspaces")
	for _, c := range []struct {
		name string
		mode os.FileMode
		acl  string
	}{
		{"denied", 0o644, "u:1000:---"},
		{"allowed", 0o600, "u:1000:r--"},
	} {
		for _, dir := range []string{native, hostDir} {
			p := filepath.Join(dir, c.name)
			smMust(t, "write", os.WriteFile(p, []byte("secret"), c.mode))
			smMust(t, "chmod", os.Chmod(p, c.mode))
			if out, err := exec.Command("setfacl", "-m", c.acl, p).CombinedOutput(); err != nil {
				t.Skipf("SKIPPED: setfacl on %s: %v: %s (no ACLs on this file system)", dir, err, out)
			}
		}
		want := smAsOther(t, native, "cat "+c.name+" 2>&1 || true")
		got := smAsOther(t, mounted, "cat "+c.name+" 2>&1 || true")
		if strings.Contains(want, "secret") != strings.Contains(got, "secret") {
			t.Errorf("%s (mode %o, %s) read by uid 1000: on the mount %q, on ext4 %q", c.name, c.mode, c.acl, got, want)
		}
	}
}

// open(O_TMPFILE) makes a file with no name on the mount, as on ext4: it
// takes writes, a later linkat gives it a name on the disk, and one never
// linked leaves nothing behind.
func TestTmpfile(t *testing.T) {
	d := startMount(t)
	dir := d.Path("workspaces")
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR, 0o640)
	if err != nil {
		t.Fatalf("open(O_TMPFILE) on the mount: %v", err)
	}
	if _, err := unix.Write(fd, []byte("made unnamed")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, filepath.Join(dir, "named"), unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("linkat of the O_TMPFILE file: %v", err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatalf("close of the linked O_TMPFILE file: %v", err)
	}
	host := filepath.Join(d.Root, "workspaces", "named")
	if b, err := os.ReadFile(host); err != nil || string(b) != "made unnamed" {
		t.Errorf("the linked file on the disk: %q, %v", b, err)
	}
	if st, err := os.Stat(host); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode of the linked file: %v, %v; want 0640", st.Mode(), err)
	}
	before, _ := os.ReadDir(filepath.Join(d.Root, "workspaces"))
	fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd, []byte("gone")); err != nil {
		t.Fatalf("write of the O_TMPFILE file never linked: %v", err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatalf("close of the O_TMPFILE file never linked: %v", err)
	}
	if after, _ := os.ReadDir(filepath.Join(d.Root, "workspaces")); len(after) != len(before) {
		t.Errorf("an O_TMPFILE file never linked left %d entries behind", len(after)-len(before))
	}
}

// An ordinary user who makes more directories than the daemon keeps
// descriptors for (the kernel caching every one of them), and one path
// thousands deep, leaves the daemon's descriptors bounded by its cache,
// and root's ls and creates working.
func TestManyDirectoriesBoundedDescriptors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	d := smSharedMount(t)
	shared := d.Path("workspaces/shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	const wide, deep = 6000, 3000
	out := smAsOther(t, shared, fmt.Sprintf(`perl -e '
		for my $i (1..%d) { mkdir "w$i" or die "mkdir w$i: $!"; }
		for my $i (1..%d) { stat "w$i/." or die "stat w$i: $!"; }
		for my $i (1..%d) { mkdir "d" or die "mkdir at depth $i: $!"; chdir "d" or die "chdir at depth $i: $!"; }
		print "ok\n"'`, wide, wide, deep))
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("the user's directories: %q", out)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The cache keeps at most 4,096 idle directory descriptors.
	if len(fds) > 4096+256 {
		t.Errorf("daemon descriptors with %d directories cached: %d, want at most %d",
			wide+deep, len(fds), 4096+256)
	}
	if _, err := os.ReadDir(shared); err != nil {
		t.Errorf("root's ls: %v", err)
	}
	if err := os.WriteFile(filepath.Join(shared, "w17", "root-made"), []byte("x"), 0o644); err != nil {
		t.Errorf("root's create: %v", err)
	}
	deepest := filepath.Join(shared, strings.Repeat("d/", 200))
	if err := os.WriteFile(filepath.Join(deepest, "f"), []byte("x"), 0o644); err != nil {
		t.Errorf("create 200 deep: %v", err)
	}
}

// Files and directories made in a directory with a default ACL get the
// ACL in place of the creator's umask, and the umask where there is none,
// as on ext4: compared with getfacl of the same creations on the host.
func TestDefaultACLReplacesUmask(t *testing.T) {
	requireACLTools(t)
	d := smSharedMount(t)
	native := smSharedTempDir(t)
	mounted := d.Path("workspaces/acl")
	smMust(t, "mkdir", os.Mkdir(mounted, 0o777))
	for _, dir := range []string{native, mounted} {
		for _, sub := range []string{"withacl", "plain"} {
			p := filepath.Join(dir, sub)
			smMust(t, "mkdir", os.Mkdir(p, 0o777))
			smMust(t, "chmod", os.Chmod(p, 0o777))
		}
		if out, err := exec.Command("setfacl", "-d", "-m", "u:nobody:rwx", filepath.Join(dir, "withacl")).CombinedOutput(); err != nil {
			t.Skipf("SKIPPED: setfacl -d on %s: %v: %s", dir, err, out)
		}
	}
	const script = `umask 022; for d in withacl plain; do
		touch $d/f; mkdir $d/d; mkfifo $d/p
		getfacl -cp $d/f $d/d $d/p | tr '\n' ' '; echo; done`
	want := smAsOther(t, native, script)
	got := smAsOther(t, mounted, script)
	if got != want {
		t.Errorf("new files' ACLs with umask 022 by uid 1000:\non the mount %s\non ext4      %s", got, want)
	}
	if !strings.Contains(want, "mask::rw-") {
		t.Errorf("ext4's own answer lacks mask::rw- (the test is not testing): %s", want)
	}
}

// requireACLTools skips, loudly, where the ACL tests cannot run: they act
// as another user, and set ACLs with setfacl on both sides.
func requireACLTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	if _, err := exec.LookPath("setfacl"); err != nil {
		t.Skipf("SKIPPED: setfacl is missing (.ci/run installs acl): %v", err)
	}
}
