//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs/vfstest"

	"github.com/gsvfs/gsvfs/vfs"
)

// The semantics tests check, through a real FUSE mount of the real binary,
// what agents, git and multi-user setups rely on from the disk-backed
// trees. Where a behaviour is "whatever ext4 does", the same sequence runs
// on a native directory too and the results are compared.

// smOther is the unprivileged identity the multi-user tests run children
// as.
const smOther = 1000

// smModes are the two ways the daemon serves file data: kernel passthrough
// (the default where the kernel allows it) and through the daemon with the
// page cache.
var smModes = []struct {
	name  string
	flags []string
}{
	{"passthrough", nil},
	{"no-passthrough", []string{"--no-passthrough"}},
}

// smEachMode runs test once in each of smModes, in parallel subtests
// named after the modes, each on a mount of its own.
func smEachMode(t *testing.T, test func(t *testing.T, mode string, d *daemon)) {
	for _, mode := range smModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			test(t, mode.name, startMount(t, mode.flags...))
		})
	}
}

// smWorkdir makes a fresh directory for the running test in /workspaces of
// the mount and returns its path through the mount.
func smWorkdir(t *testing.T, d *daemon) string {
	t.Helper()
	dir := d.Path(filepath.Join("workspaces", smName(t)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// smHost returns the state-directory path of a path inside the mount.
func smHost(t *testing.T, d *daemon, mounted string) string {
	t.Helper()
	rel, err := filepath.Rel(d.Mnt, mounted)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is not inside the mount %s", mounted, d.Mnt)
	}
	return filepath.Join(d.Root, rel)
}

// smName is the test's name as one path element.
func smName(t *testing.T) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}

func smErrName(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// smWantErrno fails unless err carries want (0 meaning success).
func smWantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := vfs.Errno(err); got != want {
		t.Errorf("%s: got %s (%v), want %s", what, smErrName(got), err, smErrName(want))
	}
}

func smMust(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func smLstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return st
}

func smReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return b
}

// smDescribe says how got differs from want, for content checks.
func smDescribe(got, want []byte) string {
	if bytes.Equal(got, want) {
		return "equal"
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	nul := ""
	if i < len(got) && len(bytes.Trim(got[i:], "\x00")) == 0 {
		nul = " (NUL padding from there)"
	}
	return fmt.Sprintf("got %d bytes, want %d; first difference at offset %d%s", len(got), len(want), i, nul)
}

// smSharedMount is startMount at a place every user can reach (the test
// temp directories are 0700 by default), for tests that run children as
// another uid.
func smSharedMount(t *testing.T, extra ...string) *daemon {
	t.Helper()
	vfstest.NeedFUSE(t)
	base := smSharedTempDir(t)
	d := mountAt(t, filepath.Join(base, "state"), filepath.Join(base, "mnt"), extra...)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// smSharedTempDir is a t.TempDir that other users can traverse.
func smSharedTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		smMust(t, "chmod temp dir", os.Chmod(p, 0o755))
	}
	return dir
}

// smAsOther runs sh -c script as uid/gid smOther in dir and returns its
// combined output (a failing script is not a test failure: the output says
// what happened).
func smAsOther(t *testing.T, dir, script string) string {
	t.Helper()
	return smAsUid(t, smOther, dir, script)
}

// smAsUid is smAsOther as uid/gid uid.
func smAsUid(t *testing.T, uid uint32, dir, script string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; cannot run children as another uid")
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}},
	}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("script as uid %d in %s did not finish in 20s:\n%s\n%s", uid, dir, script, out)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running script as uid %d: %v", uid, err)
		}
	}
	return string(out)
}

// TestSemExclusiveCreateReadOnly is how git writes loose objects:
// open(O_CREAT|O_EXCL|O_RDWR, 0444) and then write on that very handle.
func TestSemExclusiveCreateReadOnly(t *testing.T) {
	d := smSharedMount(t)
	dir := smWorkdir(t, d)

	t.Run("root", func(t *testing.T) {
		p := filepath.Join(dir, "obj")
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o444)
		smMust(t, "open(O_CREAT|O_EXCL|O_RDWR, 0444)", err)
		data := []byte("blob 12\x00hello world\n")
		n, err := unix.Write(fd, data)
		if err != nil || n != len(data) {
			t.Errorf("write on the new 0444 handle: got (%d, %v), want (%d, nil)", n, err, len(data))
		}
		var st unix.Stat_t
		smMust(t, "fstat", unix.Fstat(fd, &st))
		if st.Mode != unix.S_IFREG|0o444 || st.Size != int64(len(data)) {
			t.Errorf("fstat: got mode %o size %d, want mode %o size %d", st.Mode, st.Size, unix.S_IFREG|0o444, len(data))
		}
		back := make([]byte, 64)
		n, err = unix.Pread(fd, back, 0)
		if err != nil || !bytes.Equal(back[:n], data) {
			t.Errorf("pread on the handle: got %q, %v, want %q", back[:max(n, 0)], err, data)
		}
		smMust(t, "close", unix.Close(fd))
		if got := smReadFile(t, p); !bytes.Equal(got, data) {
			t.Errorf("content after close: got %q, want %q", got, data)
		}
		_, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o444)
		smWantErrno(t, "second O_EXCL create", err, syscall.EEXIST)
	})

	t.Run("uid1000", func(t *testing.T) {
		shared := filepath.Join(dir, "shared")
		smMust(t, "mkdir", os.Mkdir(shared, 0o755))
		smMust(t, "chmod 1777", unix.Chmod(shared, 0o1777))
		// With noclobber, sh opens O_WRONLY|O_CREAT|O_EXCL, mode 0666 under
		// umask 222 = 0444, and writes on that descriptor.
		out := smAsOther(t, shared, `umask 222; set -C; echo 'blob 5 hello' > obj && cat obj && echo again > obj`)
		if !strings.HasPrefix(out, "blob 5 hello\n") || !strings.Contains(out, "File exists") {
			t.Errorf("as uid %d: got output %q, want the content then a 'File exists' error", smOther, out)
		}
		st := smLstat(t, filepath.Join(shared, "obj"))
		if st.Mode != unix.S_IFREG|0o444 || st.Uid != smOther || st.Gid != smOther || st.Size != 13 {
			t.Errorf("obj via mount: got mode %o uid %d gid %d size %d, want mode %o uid %d gid %d size 13",
				st.Mode, st.Uid, st.Gid, st.Size, unix.S_IFREG|0o444, smOther, smOther)
		}
		host := smLstat(t, smHost(t, d, filepath.Join(shared, "obj")))
		if host.Mode != st.Mode || host.Uid != st.Uid || host.Gid != st.Gid || host.Size != st.Size {
			t.Errorf("obj on the host: got mode %o uid %d gid %d size %d, want as via the mount (mode %o uid %d gid %d size %d)",
				host.Mode, host.Uid, host.Gid, host.Size, st.Mode, st.Uid, st.Gid, st.Size)
		}
	})
}

// TestSemFileOps covers the everyday operations, each through the mount.
func TestSemFileOps(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	sub := func(t *testing.T) string {
		p := filepath.Join(dir, smName(t))
		smMust(t, "mkdir", os.Mkdir(p, 0o755))
		return p
	}
	write := func(t *testing.T, p, s string) {
		t.Helper()
		smMust(t, "write "+p, os.WriteFile(p, []byte(s), 0o644))
	}
	wantContent := func(t *testing.T, p, want string) {
		t.Helper()
		if got := string(smReadFile(t, p)); got != want {
			t.Errorf("content of %s: got %q, want %q", filepath.Base(p), got, want)
		}
	}
	wantGone := func(t *testing.T, p string) {
		t.Helper()
		var st unix.Stat_t
		smWantErrno(t, "lstat "+filepath.Base(p), unix.Lstat(p, &st), syscall.ENOENT)
	}

	t.Run("rename over an existing file", func(t *testing.T) {
		s := sub(t)
		a, b := filepath.Join(s, "a"), filepath.Join(s, "b")
		write(t, a, "new content")
		write(t, b, "old content that is longer")
		// A descriptor open on the replaced file keeps reading it.
		old, err := os.Open(b)
		smMust(t, "open b", err)
		defer old.Close()
		smMust(t, "rename", os.Rename(a, b))
		wantContent(t, b, "new content")
		wantGone(t, a)
		buf := make([]byte, 100)
		n, _ := old.ReadAt(buf, 0)
		if got := string(buf[:n]); got != "old content that is longer" {
			t.Errorf("read on a descriptor of the replaced file: got %q, want %q", got, "old content that is longer")
		}
		if st := smLstat(t, b); st.Nlink != 1 || st.Size != 11 {
			t.Errorf("stat after rename: got nlink %d size %d, want 1 and 11", st.Nlink, st.Size)
		}
	})

	t.Run("rename across directories", func(t *testing.T) {
		s := sub(t)
		smMust(t, "mkdir", os.MkdirAll(filepath.Join(s, "x", "y"), 0o755))
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "z"), 0o755))
		from, to := filepath.Join(s, "x", "y", "f"), filepath.Join(s, "z", "g")
		write(t, from, "moving")
		smMust(t, "rename", os.Rename(from, to))
		wantContent(t, to, "moving")
		wantGone(t, from)
		write(t, to, "written after the move")
		wantContent(t, smHost(t, d, to), "written after the move")
	})

	t.Run("rename a directory with contents", func(t *testing.T) {
		s := sub(t)
		src := filepath.Join(s, "src")
		smMust(t, "mkdir", os.MkdirAll(filepath.Join(src, "deep", "er"), 0o755))
		write(t, filepath.Join(src, "top"), "top")
		write(t, filepath.Join(src, "deep", "er", "leaf"), "leaf")
		// Look the leaf up first, so the kernel and the daemon know it
		// under its old path.
		wantContent(t, filepath.Join(src, "deep", "er", "leaf"), "leaf")
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "dst"), 0o755))
		dst := filepath.Join(s, "dst", "moved")
		smMust(t, "rename dir", os.Rename(src, dst))
		wantGone(t, src)
		wantContent(t, filepath.Join(dst, "top"), "top")
		wantContent(t, filepath.Join(dst, "deep", "er", "leaf"), "leaf")
		write(t, filepath.Join(dst, "deep", "er", "leaf"), "leaf2")
		wantContent(t, smHost(t, d, filepath.Join(dst, "deep", "er", "leaf")), "leaf2")
		// Rename a directory over an empty one, and not over a non-empty one.
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "empty"), 0o755))
		smMust(t, "rename over empty dir", unix.Rename(dst, filepath.Join(s, "empty")))
		wantContent(t, filepath.Join(s, "empty", "top"), "top")
		smMust(t, "mkdir", os.MkdirAll(filepath.Join(s, "full", "x"), 0o755))
		smWantErrno(t, "rename over a non-empty dir", unix.Rename(filepath.Join(s, "empty"), filepath.Join(s, "full")), syscall.ENOTEMPTY)
	})

	t.Run("unlink while open", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "doomed")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		smMust(t, "create", err)
		defer f.Close()
		_, err = f.Write([]byte("before"))
		smMust(t, "write", err)
		smMust(t, "unlink", os.Remove(p))
		wantGone(t, p)
		_, err = f.Write([]byte(" after"))
		smMust(t, "write after unlink", err)
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, 0)
		if string(buf[:n]) != "before after" {
			t.Errorf("read after unlink: got %q (%v), want %q", buf[:n], err, "before after")
		}
		var st unix.Stat_t
		smMust(t, "fstat after unlink", unix.Fstat(int(f.Fd()), &st))
		if st.Nlink != 0 || st.Size != 12 {
			t.Errorf("fstat after unlink: got nlink %d size %d, want 0 and 12", st.Nlink, st.Size)
		}
		smMust(t, "ftruncate after unlink", f.Truncate(3))
		smMust(t, "fstat", unix.Fstat(int(f.Fd()), &st))
		if st.Size != 3 {
			t.Errorf("fstat after ftruncate: got size %d, want 3", st.Size)
		}
		smMust(t, "fchmod after unlink", f.Chmod(0o600))
		smMust(t, "fstat", unix.Fstat(int(f.Fd()), &st))
		if st.Mode&0o7777 != 0o600 {
			t.Errorf("fstat after fchmod: got mode %o, want 600", st.Mode&0o7777)
		}
		smMust(t, "fsync after unlink", f.Sync())
		// The name is free for a new file meanwhile.
		write(t, p, "reborn")
		wantContent(t, p, "reborn")
		n, _ = f.ReadAt(buf, 0)
		if string(buf[:n]) != "bef" {
			t.Errorf("read of the unlinked file after the name was reused: got %q, want %q", buf[:n], "bef")
		}
	})

	t.Run("symlinks", func(t *testing.T) {
		s := sub(t)
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "d"), 0o755))
		write(t, filepath.Join(s, "d", "target"), "through the link")
		links := map[string]string{
			"rel":         "d/target",
			"relup":       "../" + filepath.Base(s) + "/d/target",
			"abs":         smHost(t, d, filepath.Join(s, "d", "target")),
			"dangling":    "no/such/file",
			"danglingabs": "/nonexistent-gsvfs/x",
			"odd":         "./d//./target",
			"self":        "self",
		}
		for name, target := range links {
			smMust(t, "symlink "+name, os.Symlink(target, filepath.Join(s, name)))
		}
		for name, target := range links {
			p := filepath.Join(s, name)
			got, err := os.Readlink(p)
			if err != nil || got != target {
				t.Errorf("readlink %s: got %q, %v, want %q", name, got, err, target)
			}
			st := smLstat(t, p)
			if st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Size != int64(len(target)) {
				t.Errorf("lstat %s: got mode %o size %d, want a symlink of size %d", name, st.Mode, st.Size, len(target))
			}
		}
		for _, name := range []string{"rel", "relup", "abs", "odd"} {
			wantContent(t, filepath.Join(s, name), "through the link")
		}
		_, err := os.ReadFile(filepath.Join(s, "dangling"))
		smWantErrno(t, "read through a dangling link", err, syscall.ENOENT)
		_, err = os.ReadFile(filepath.Join(s, "self"))
		smWantErrno(t, "read through a self loop", err, syscall.ELOOP)
		// Writing through a relative link writes the target.
		write(t, filepath.Join(s, "rel"), "written via link")
		wantContent(t, filepath.Join(s, "d", "target"), "written via link")
		// The host sees the same links.
		for name, target := range links {
			if got, err := os.Readlink(smHost(t, d, filepath.Join(s, name))); err != nil || got != target {
				t.Errorf("readlink %s on the host: got %q, %v, want %q", name, got, err, target)
			}
		}
		smWantErrno(t, "symlink over an existing name", os.Symlink("x", filepath.Join(s, "rel")), syscall.EEXIST)
	})

	t.Run("hard links", func(t *testing.T) {
		s := sub(t)
		a := filepath.Join(s, "a")
		write(t, a, "shared")
		nlink := func(p string) uint64 { return uint64(smLstat(t, p).Nlink) }
		names := []string{a}
		for i := range 3 {
			p := filepath.Join(s, fmt.Sprintf("l%d", i))
			smMust(t, "link", os.Link(a, p))
			names = append(names, p)
			for _, n := range names {
				if got := nlink(n); got != uint64(len(names)) {
					t.Errorf("nlink of %s after %d links: got %d, want %d", filepath.Base(n), i+1, got, len(names))
				}
			}
		}
		if smLstat(t, a).Ino != smLstat(t, names[3]).Ino {
			t.Errorf("hard links have different inode numbers")
		}
		smMust(t, "unlink a", os.Remove(a))
		for _, n := range names[1:] {
			if got := nlink(n); got != 3 {
				t.Errorf("nlink of %s after unlinking a: got %d, want 3", filepath.Base(n), got)
			}
		}
		// Renaming a name onto another link of the same file does nothing.
		smMust(t, "rename l0 over l1", os.Rename(names[1], names[2]))
		for _, n := range names[1:] {
			if got := nlink(n); got != 3 {
				t.Errorf("nlink of %s after renaming one link onto another: got %d, want 3", filepath.Base(n), got)
			}
		}
		smMust(t, "unlink l0", os.Remove(names[1]))
		if got := nlink(names[2]); got != 2 {
			t.Errorf("nlink after unlinking l0: got %d, want 2", got)
		}
		wantContent(t, names[3], "shared")
		smWantErrno(t, "link a directory", os.Link(s, filepath.Join(s, "dirlink")), syscall.EPERM)
		smWantErrno(t, "link over an existing name", os.Link(names[3], names[2]), syscall.EEXIST)
		// Directory nlink: 2 + subdirectories.
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "sd1"), 0o755))
		smMust(t, "mkdir", os.Mkdir(filepath.Join(s, "sd2"), 0o755))
		if got := nlink(s); got != 4 {
			t.Errorf("nlink of a directory with 2 subdirectories: got %d, want 4", got)
		}
		smMust(t, "rmdir", os.Remove(filepath.Join(s, "sd2")))
		if got := nlink(s); got != 3 {
			t.Errorf("nlink after rmdir: got %d, want 3", got)
		}
	})

	t.Run("chmod chown utimes", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "f")
		write(t, p, "x")
		for _, mode := range []uint32{0o640, 0o4755, 0o2750, 0o1777, 0, 0o644} {
			smMust(t, "chmod", unix.Chmod(p, mode))
			if got := smLstat(t, p).Mode; got != unix.S_IFREG|mode {
				t.Errorf("mode after chmod %o: got %o, want %o", mode, got, unix.S_IFREG|mode)
			}
			if got := smLstat(t, smHost(t, d, p)).Mode; got != unix.S_IFREG|mode {
				t.Errorf("host mode after chmod %o: got %o, want %o", mode, got, unix.S_IFREG|mode)
			}
		}
		smMust(t, "chown", os.Chown(p, 1234, 5678))
		if st := smLstat(t, p); st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("owner after chown: got %d:%d, want 1234:5678", st.Uid, st.Gid)
		}
		smMust(t, "chown -1", os.Chown(p, -1, 42))
		if st := smLstat(t, p); st.Uid != 1234 || st.Gid != 42 {
			t.Errorf("owner after chown -1:42: got %d:%d, want 1234:42", st.Uid, st.Gid)
		}
		if st := smLstat(t, smHost(t, d, p)); st.Uid != 1234 || st.Gid != 42 {
			t.Errorf("host owner after chown: got %d:%d, want 1234:42", st.Uid, st.Gid)
		}
		atime := time.Unix(1234567890, 123456789)
		mtime := time.Unix(1600000000, 987654321)
		smMust(t, "chtimes", os.Chtimes(p, atime, mtime))
		st := smLstat(t, p)
		if got := time.Unix(st.Atim.Unix()); !got.Equal(atime) {
			t.Errorf("atime: got %v, want %v", got, atime)
		}
		if got := time.Unix(st.Mtim.Unix()); !got.Equal(mtime) {
			t.Errorf("mtime: got %v, want %v", got, mtime)
		}
		// utimensat on a symlink itself.
		ln := filepath.Join(s, "ln")
		smMust(t, "symlink", os.Symlink("f", ln))
		ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano() + 1)}
		smMust(t, "lutimes", unix.UtimesNanoAt(unix.AT_FDCWD, ln, ts, unix.AT_SYMLINK_NOFOLLOW))
		if st := smLstat(t, ln); st.Mtim.Nano() != mtime.UnixNano()+1 {
			t.Errorf("symlink mtime: got %d, want %d", st.Mtim.Nano(), mtime.UnixNano()+1)
		}
		if st := smLstat(t, p); st.Mtim.Nano() != mtime.UnixNano() {
			t.Errorf("target mtime after lutimes on the link: got %d, want %d (unchanged)", st.Mtim.Nano(), mtime.UnixNano())
		}
		// A directory too.
		smMust(t, "chmod dir", unix.Chmod(s, 0o2775))
		if got := smLstat(t, s).Mode; got != unix.S_IFDIR|0o2775 {
			t.Errorf("dir mode after chmod 2775: got %o, want %o", got, unix.S_IFDIR|0o2775)
		}
		smMust(t, "chmod dir", unix.Chmod(s, 0o755))
	})

	t.Run("fsync and statfs", func(t *testing.T) {
		s := sub(t)
		f, err := os.Create(filepath.Join(s, "f"))
		smMust(t, "create", err)
		defer f.Close()
		_, err = f.Write([]byte("durable"))
		smMust(t, "write", err)
		smMust(t, "fsync", f.Sync())
		smMust(t, "fdatasync", unix.Fdatasync(int(f.Fd())))
		df, err := os.Open(s)
		smMust(t, "open dir", err)
		smMust(t, "fsync dir", df.Sync())
		df.Close()
		var sf syscall.Statfs_t
		smMust(t, "statfs", syscall.Statfs(s, &sf))
		if sf.Blocks == 0 || sf.Bsize == 0 || sf.Namelen == 0 {
			t.Errorf("statfs of the mount: got blocks %d bsize %d namelen %d, want all nonzero", sf.Blocks, sf.Bsize, sf.Namelen)
		}
		var host syscall.Statfs_t
		smMust(t, "statfs host", syscall.Statfs(d.Root, &host))
		if sf.Blocks != host.Blocks {
			t.Errorf("statfs blocks: got %d, want %d (the state directory's filesystem)", sf.Blocks, host.Blocks)
		}
	})

	t.Run("O_APPEND from two descriptors", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "log")
		write(t, p, "start\n")
		f1, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		smMust(t, "open 1", err)
		defer f1.Close()
		f2, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		smMust(t, "open 2", err)
		defer f2.Close()
		want := "start\n"
		for i := range 20 {
			f, which := f1, 1
			if i%3 == 1 {
				f, which = f2, 2
			}
			line := fmt.Sprintf("line %d from fd %d %s\n", i, which, strings.Repeat("z", i*50))
			_, err := f.Write([]byte(line))
			smMust(t, "append", err)
			want += line
		}
		wantContent(t, p, want)
		if st := smLstat(t, p); st.Size != int64(len(want)) {
			t.Errorf("size after appends: got %d, want %d", st.Size, len(want))
		}
	})

	t.Run("truncate up and down", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "t")
		write(t, p, "0123456789")
		smMust(t, "truncate up", os.Truncate(p, 10000))
		want := "0123456789" + strings.Repeat("\x00", 9990)
		wantContent(t, p, want)
		smMust(t, "truncate down", os.Truncate(p, 4))
		wantContent(t, p, "0123")
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		smMust(t, "open", err)
		defer f.Close()
		smMust(t, "ftruncate up", f.Truncate(6))
		wantContent(t, p, "0123\x00\x00")
		smMust(t, "ftruncate 0", f.Truncate(0))
		if st := smLstat(t, p); st.Size != 0 {
			t.Errorf("size after ftruncate 0: got %d, want 0", st.Size)
		}
		// O_TRUNC on open.
		write(t, p, "long content here")
		g, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		smMust(t, "open O_TRUNC", err)
		g.Write([]byte("ab"))
		g.Close()
		wantContent(t, p, "ab")
	})

	t.Run("sparse file at 1 GiB", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "sparse")
		f, err := os.Create(p)
		smMust(t, "create", err)
		defer f.Close()
		const off = 1 << 30
		_, err = f.WriteAt([]byte("end"), off)
		smMust(t, "write at 1 GiB", err)
		st := smLstat(t, p)
		if st.Size != off+3 {
			t.Errorf("size: got %d, want %d", st.Size, off+3)
		}
		if st.Blocks > 1024 {
			t.Errorf("st_blocks: got %d 512-byte blocks, want a sparse file (at most 1024)", st.Blocks)
		}
		hole := make([]byte, 1<<20)
		n, err := f.ReadAt(hole, off/2)
		if err != nil || n != len(hole) || len(bytes.Trim(hole, "\x00")) != 0 {
			t.Errorf("read in the hole: got %d bytes, %v, nonzero %v; want %d zero bytes", n, err, len(bytes.Trim(hole, "\x00")) != 0, len(hole))
		}
		tail := make([]byte, 10)
		n, _ = f.ReadAt(tail, off-2)
		if string(tail[:n]) != "\x00\x00end" {
			t.Errorf("read across the end of the hole: got %q, want %q", tail[:n], "\x00\x00end")
		}
	})

	t.Run("pread pwrite beyond 4 GiB", func(t *testing.T) {
		s := sub(t)
		p := filepath.Join(s, "big")
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
		smMust(t, "create", err)
		defer unix.Close(fd)
		for _, off := range []int64{4<<30 - 3, 5 << 30, 1<<40 + 7} {
			data := []byte(fmt.Sprintf("at %d", off))
			n, err := unix.Pwrite(fd, data, off)
			if err != nil || n != len(data) {
				t.Fatalf("pwrite at %d: got (%d, %v), want (%d, nil)", off, n, err, len(data))
			}
			back := make([]byte, len(data)+4)
			n, err = unix.Pread(fd, back, off)
			if err != nil || string(back[:n]) != string(data) {
				t.Errorf("pread at %d: got %q, %v, want %q", off, back[:max(n, 0)], err, data)
			}
		}
		var st unix.Stat_t
		smMust(t, "fstat", unix.Fstat(fd, &st))
		if want := int64(1<<40+7) + int64(len(fmt.Sprintf("at %d", int64(1<<40+7)))); st.Size != want {
			t.Errorf("size: got %d, want %d", st.Size, want)
		}
		// A fresh descriptor sees the data too.
		g, err := os.Open(p)
		smMust(t, "open", err)
		defer g.Close()
		back := make([]byte, 13)
		n, _ := g.ReadAt(back, 5<<30)
		if want := fmt.Sprintf("at %d", int64(5<<30)); string(back[:n]) != want {
			t.Errorf("read at 5 GiB on a new descriptor: got %q, want %q", back[:n], want)
		}
	})
}
