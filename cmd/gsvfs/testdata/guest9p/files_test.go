package guest9p

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The file operations a real file system must get right, as the kernel's
// 9P client passes them on. Every test runs in parallel in its own
// directory; paths are relative to the mount directory (see TestMain).

func TestCreateExclusive(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	writeFile(t, filepath.Join(d, "existing"), "keep")
	must(t, "symlink", os.Symlink("created-through-link", filepath.Join(d, "dangling")))
	cases := []struct {
		name  string
		flags int
		mode  uint32
		want  syscall.Errno
		// After the call: the file's mode and content.
		wantMode    uint32
		wantContent string
	}{
		{"new", os.O_CREATE | os.O_EXCL | os.O_WRONLY, 0o640, 0, 0o640, ""},
		{"new", os.O_CREATE | os.O_EXCL | os.O_WRONLY, 0o640, syscall.EEXIST, 0o640, ""},
		{"existing", os.O_CREATE | os.O_EXCL | os.O_RDWR, 0o600, syscall.EEXIST, 0o644, "keep"},
		{"existing", os.O_CREATE | os.O_RDWR, 0o600, 0, 0o644, "keep"},
		{"umasked", os.O_CREATE | os.O_EXCL | os.O_WRONLY, 0o777, 0, 0o755, ""},
		// O_EXCL does not follow a symlink, even a dangling one.
		{"dangling", os.O_CREATE | os.O_EXCL | os.O_WRONLY, 0o644, syscall.EEXIST, 0, ""},
		// Without O_EXCL the dangling link's target is created.
		{"dangling", os.O_CREATE | os.O_WRONLY, 0o600, 0, 0o600, ""},
		{"existing", os.O_RDWR | os.O_TRUNC, 0, 0, 0o644, ""},
	}
	for _, c := range cases {
		p := filepath.Join(d, c.name)
		fd, err := unix.Open(p, c.flags|unix.O_CLOEXEC, c.mode)
		if err == nil {
			unix.Close(fd)
		}
		what := "open " + c.name + " " + flagNames(c.flags)
		wantErrno(t, what, err, c.want)
		if c.wantMode == 0 {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Errorf("%s, then stat: %v", what, err)
			continue
		}
		if got := st.Mode; got != unix.S_IFREG|c.wantMode {
			t.Errorf("%s: mode got %o, want %o", what, got, unix.S_IFREG|c.wantMode)
		}
		if got := readFile(t, p); got != c.wantContent {
			t.Errorf("%s: content got %q, want %q", what, got, c.wantContent)
		}
	}
	if got, err := os.Readlink(filepath.Join(d, "dangling")); err != nil || got != "created-through-link" {
		t.Errorf("the link after creating through it: got %q, %v; want %q", got, err, "created-through-link")
	}
	if _, err := os.Lstat(filepath.Join(d, "created-through-link")); err != nil {
		t.Errorf("the file created through the dangling link: %v", err)
	}
}

func flagNames(flags int) string {
	var out []string
	for _, f := range []struct {
		bit  int
		name string
	}{{os.O_CREATE, "O_CREAT"}, {os.O_EXCL, "O_EXCL"}, {os.O_TRUNC, "O_TRUNC"}, {os.O_APPEND, "O_APPEND"}} {
		if flags&f.bit != 0 {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, "|")
}

func TestWriteReadBack(t *testing.T) {
	t.Parallel()
	p := filepath.Join(freshDir(t), "f")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	must(t, "create", err)
	defer f.Close()
	steps := []struct {
		name string
		data string
		off  int64
		want string // the whole file afterwards
	}{
		{"write at 0", "hello", 0, "hello"},
		{"overwrite inside", "J", 1, "hJllo"},
		{"extend", ", world", 5, "hJllo, world"},
		{"write past the end leaves zeros", "!", 15, "hJllo, world\x00\x00\x00!"},
	}
	for _, s := range steps {
		if n, err := f.WriteAt([]byte(s.data), s.off); err != nil || n != len(s.data) {
			t.Fatalf("%s: wrote %d, %v", s.name, n, err)
		}
		if got := readFile(t, p); got != s.want {
			t.Errorf("%s: file got %q, want %q", s.name, got, s.want)
		}
	}
	reads := []struct {
		off  int64
		size int
		want string
	}{
		{0, 5, "hJllo"},
		{7, 5, "world"},
		{14, 10, "\x00!"},
		{16, 10, ""},
		{1000, 10, ""},
	}
	for _, r := range reads {
		buf := make([]byte, r.size)
		n, _ := f.ReadAt(buf, r.off)
		if got := string(buf[:n]); got != r.want {
			t.Errorf("pread %d bytes at %d: got %q, want %q", r.size, r.off, got, r.want)
		}
	}
	var st unix.Stat_t
	must(t, "fstat", unix.Fstat(int(f.Fd()), &st))
	if st.Size != 16 {
		t.Errorf("size got %d, want 16", st.Size)
	}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	p := filepath.Join(freshDir(t), "log")
	writeFile(t, p, "start\n")
	a, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	must(t, "open a", err)
	defer a.Close()
	b, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	must(t, "open b", err)
	defer b.Close()
	for _, w := range []struct {
		f    *os.File
		line string
	}{{a, "a1\n"}, {b, "b1\n"}, {a, "a2\n"}, {b, "b2\n"}} {
		if _, err := w.f.Write([]byte(w.line)); err != nil {
			t.Fatalf("append %q: %v", w.line, err)
		}
	}
	if got, want := readFile(t, p), "start\na1\nb1\na2\nb2\n"; got != want {
		t.Errorf("after appends on two descriptors: got %q, want %q", got, want)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	cases := []struct {
		name string
		op   func(p string) error
		want string
	}{
		{"truncate shorter", func(p string) error { return os.Truncate(p, 4) }, "0123"},
		{"truncate longer", func(p string) error { return os.Truncate(p, 12) }, "0123456789\x00\x00"},
		{"truncate to 0", func(p string) error { return os.Truncate(p, 0) }, ""},
		{"ftruncate shorter", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(3)
		}, "012"},
		{"ftruncate then write at the old end", func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := f.Truncate(2); err != nil {
				return err
			}
			_, err = f.WriteAt([]byte("X"), 5)
			return err
		}, "01\x00\x00\x00X"},
		{"O_TRUNC", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			return f.Close()
		}, ""},
	}
	for i, c := range cases {
		p := filepath.Join(d, string(rune('a'+i)))
		writeFile(t, p, "0123456789")
		if err := c.op(p); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := readFile(t, p); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		if st := lstat(t, p); st.Size != int64(len(c.want)) {
			t.Errorf("%s: size got %d, want %d", c.name, st.Size, len(c.want))
		}
	}
}

func TestRenameOverExisting(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	src, dst := filepath.Join(d, "src"), filepath.Join(d, "dst")
	writeFile(t, src, "new content")
	writeFile(t, dst, "old content")
	srcIno := lstat(t, src).Ino
	old, err := os.Open(dst)
	must(t, "open dst", err)
	defer old.Close()

	must(t, "rename src over dst", unix.Rename(src, dst))
	wantErrno(t, "lstat src after the rename", unix.Lstat(src, new(unix.Stat_t)), syscall.ENOENT)
	if got := readFile(t, dst); got != "new content" {
		t.Errorf("dst after the rename: got %q, want %q", got, "new content")
	}
	if got := lstat(t, dst).Ino; got != srcIno {
		t.Errorf("dst's inode after the rename: got %d, want %d (src's)", got, srcIno)
	}
	// The replaced file lives on while it is open.
	buf := make([]byte, 64)
	n, err := old.ReadAt(buf, 0)
	if got := string(buf[:n]); got != "old content" {
		t.Errorf("reading the replaced file's open descriptor: got %q (%v), want %q", got, err, "old content")
	}
	t.Run("fstat of the replaced file", func(t *testing.T) {
		knownBug(t, "diod", diodPathFids)
		var st unix.Stat_t
		must(t, "fstat", unix.Fstat(int(old.Fd()), &st))
		if st.Nlink != 0 || st.Size != int64(len("old content")) || st.Ino == srcIno {
			t.Errorf("got nlink %d size %d ino %d, want nlink 0 size %d and not ino %d",
				st.Nlink, st.Size, st.Ino, len("old content"), srcIno)
		}
	})
	names, err := os.ReadDir(d)
	must(t, "readdir", err)
	if len(names) != 1 || names[0].Name() != "dst" {
		t.Errorf("directory after the rename: got %v, want only dst", names)
	}
}

func TestRenameDirectories(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := func(rel string) string { return filepath.Join(d, rel) }
	for _, dir := range []string{"a/sub", "b", "empty", "full/x", "p1", "p2"} {
		must(t, "mkdir", os.MkdirAll(p(dir), 0o755))
	}
	writeFile(t, p("a/sub/file"), "inside")
	writeFile(t, p("plain"), "plain")
	subIno := lstat(t, p("a/sub")).Ino

	steps := []struct {
		name     string
		from, to string
		want     syscall.Errno
	}{
		{"to a new name", "a", "c", 0},
		{"into another directory", "c/sub", "b/sub", 0},
		{"over an empty directory", "b", "empty", 0},
		{"over a non-empty directory", "p1", "full", syscall.ENOTEMPTY},
		{"into its own subdirectory", "empty", "empty/sub/deeper", syscall.EINVAL},
		{"over a file", "p1", "plain", syscall.ENOTDIR},
		{"a file over a directory", "plain", "p1", syscall.EISDIR},
		{"onto itself", "p2", "p2", 0},
	}
	for _, s := range steps {
		wantErrno(t, "rename "+s.name+" ("+s.from+" -> "+s.to+")", unix.Rename(p(s.from), p(s.to)), s.want)
	}
	// Where things are now.
	if got := readFile(t, p("empty/sub/file")); got != "inside" {
		t.Errorf("the moved file: got %q, want %q", got, "inside")
	}
	if got := lstat(t, p("empty/sub")).Ino; got != subIno {
		t.Errorf("the moved directory's inode: got %d, want %d", got, subIno)
	}
	for _, gone := range []string{"a", "b", "c/sub"} {
		wantErrno(t, "lstat "+gone, unix.Lstat(p(gone), new(unix.Stat_t)), syscall.ENOENT)
	}
	if got, want := lstat(t, p("empty/sub/..")).Ino, lstat(t, p("empty")).Ino; got != want {
		t.Errorf("the moved directory's ..: got inode %d, want %d", got, want)
	}
	if g, w := dirNames(t, d), "c empty full p1 p2 plain"; g != w {
		t.Errorf("directory after the renames: got %s, want %s", g, w)
	}
}

func TestHardLinks(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := func(rel string) string { return filepath.Join(d, rel) }
	must(t, "mkdir", os.Mkdir(p("sub"), 0o755))
	writeFile(t, p("a"), "shared")
	ino := lstat(t, p("a")).Ino
	type state map[string]uint64 // name -> nlink, or 0 for ENOENT
	steps := []struct {
		name string
		op   func() error
		want state
	}{
		{"link a b", func() error { return os.Link(p("a"), p("b")) }, state{"a": 2, "b": 2}},
		{"link a sub/c", func() error { return os.Link(p("a"), p("sub/c")) }, state{"a": 3, "b": 3, "sub/c": 3}},
		{"rename b over sub/c (same file: no-op)", func() error { return unix.Rename(p("b"), p("sub/c")) }, state{"a": 3, "b": 3, "sub/c": 3}},
		{"unlink a", func() error { return os.Remove(p("a")) }, state{"a": 0, "b": 2, "sub/c": 2}},
		{"rename b to a", func() error { return unix.Rename(p("b"), p("a")) }, state{"a": 2, "b": 0, "sub/c": 2}},
		{"unlink sub/c", func() error { return os.Remove(p("sub/c")) }, state{"a": 1, "b": 0, "sub/c": 0}},
	}
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		for name, nlink := range s.want {
			var st unix.Stat_t
			err := unix.Lstat(p(name), &st)
			switch {
			case nlink == 0:
				wantErrno(t, s.name+": lstat "+name, err, syscall.ENOENT)
			case err != nil:
				t.Errorf("%s: lstat %s: %v", s.name, name, err)
			case st.Nlink != nlink || st.Ino != ino:
				t.Errorf("%s: %s has nlink %d ino %d, want nlink %d ino %d", s.name, name, st.Nlink, st.Ino, nlink, ino)
			}
		}
	}
	// One file under every name: a write through one shows through the other.
	must(t, "link", os.Link(p("a"), p("sub/d")))
	writeFile(t, p("sub/d"), "changed")
	if got := readFile(t, p("a")); got != "changed" {
		t.Errorf("a after writing sub/d: got %q, want %q", got, "changed")
	}
}

func TestSymlinks(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	must(t, "mkdir", os.Mkdir(filepath.Join(d, "dir"), 0o755))
	writeFile(t, filepath.Join(d, "dir/target"), "through the link")
	long := strings.Repeat("nowhere/", 125) + "end"
	cases := []struct {
		name, target string
		// What reading through the link gives, "" for ENOENT.
		content string
	}{
		{"rel", "dir/target", "through the link"},
		{"dotdot", "../" + filepath.Base(d) + "/dir/target", "through the link"},
		{"dir/up", "../dir/target", "through the link"},
		{"abs", "/nonexistent/absolute", ""},
		{"dangling", "missing", ""},
		{"long", long, ""},
		{"spaces", "a name with spaces\tand a tab", ""},
	}
	for _, c := range cases {
		p := filepath.Join(d, c.name)
		if err := os.Symlink(c.target, p); err != nil {
			t.Errorf("symlink %s: %v", c.name, err)
			continue
		}
		if got, err := os.Readlink(p); err != nil || got != c.target {
			t.Errorf("readlink %s: got %q, %v; want %q", c.name, got, err, c.target)
		}
		st := lstat(t, p)
		if st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Size != int64(len(c.target)) {
			t.Errorf("lstat %s: got mode %o size %d, want a symlink of size %d", c.name, st.Mode, st.Size, len(c.target))
		}
		b, err := os.ReadFile(p)
		switch {
		case c.content == "":
			wantErrno(t, "read through "+c.name, err, syscall.ENOENT)
		case err != nil || string(b) != c.content:
			t.Errorf("read through %s: got %q, %v; want %q", c.name, b, err, c.content)
		}
	}
	wantErrno(t, "readlink of a file", errOf(os.Readlink(filepath.Join(d, "dir/target"))), syscall.EINVAL)
	wantErrno(t, "symlink over an existing name", os.Symlink("x", filepath.Join(d, "rel")), syscall.EEXIST)
	// A link through a link to a directory.
	must(t, "symlink to dir", os.Symlink("dir", filepath.Join(d, "dirlink")))
	if got := readFile(t, filepath.Join(d, "dirlink/target")); got != "through the link" {
		t.Errorf("read through a directory link: got %q", got)
	}
}

// futimens sets the times of an open file: utimensat(fd, NULL, ts, 0),
// which x/sys/unix has no wrapper for.
func futimens(fd int, ts [2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// errOf keeps the error of a two-result call.
func errOf[T any](_ T, err error) error { return err }

func TestMkdirRmdir(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := func(rel string) string { return filepath.Join(d, rel) }
	steps := []struct {
		name string
		op   func() error
		want syscall.Errno
	}{
		{"mkdir x 0750", func() error { return os.Mkdir(p("x"), 0o750) }, 0},
		{"mkdir x again", func() error { return os.Mkdir(p("x"), 0o750) }, syscall.EEXIST},
		{"mkdir -p x/1/2/3/4", func() error { return os.MkdirAll(p("x/1/2/3/4"), 0o755) }, 0},
		{"rmdir x (not empty)", func() error { return unix.Rmdir(p("x")) }, syscall.ENOTEMPTY},
		{"rmdir x/1/2/3/4", func() error { return unix.Rmdir(p("x/1/2/3/4")) }, 0},
		{"rmdir x/1/2/3/4 again", func() error { return unix.Rmdir(p("x/1/2/3/4")) }, syscall.ENOENT},
		{"create x/1/2/3/f", func() error { return os.WriteFile(p("x/1/2/3/f"), nil, 0o644) }, 0},
		{"rmdir x/1/2/3 (holds a file)", func() error { return unix.Rmdir(p("x/1/2/3")) }, syscall.ENOTEMPTY},
		{"rm -r x", func() error { return os.RemoveAll(p("x")) }, 0},
		{"mkdir in a missing parent", func() error { return os.Mkdir(p("missing/y"), 0o755) }, syscall.ENOENT},
	}
	for _, s := range steps {
		wantErrno(t, s.name, s.op(), s.want)
		if s.name == "mkdir x 0750" {
			if st := lstat(t, p("x")); st.Mode != unix.S_IFDIR|0o750 {
				t.Errorf("mode of x: got %o, want %o", st.Mode, unix.S_IFDIR|0o750)
			}
		}
	}
	if names, err := os.ReadDir(d); err != nil || len(names) != 0 {
		t.Errorf("directory at the end: got %v, %v; want it empty", names, err)
	}
}

func TestUnlinkOpen(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := filepath.Join(d, "f")
	writeFile(t, p, "before")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, "open", err)
	defer f.Close()
	must(t, "unlink", os.Remove(p))
	wantErrno(t, "lstat after unlink", unix.Lstat(p, new(unix.Stat_t)), syscall.ENOENT)
	if names, err := os.ReadDir(d); err != nil || len(names) != 0 {
		t.Errorf("directory after unlink: got %v, %v; want it empty", names, err)
	}
	buf := make([]byte, 64)
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "before" {
		t.Errorf("read the unlinked file: got %q (%v), want %q", buf[:n], err, "before")
	}
	if _, err := f.WriteAt([]byte("+after"), 6); err != nil {
		t.Errorf("write the unlinked file: %v", err)
	}
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "before+after" {
		t.Errorf("read the unlinked file after writing: got %q (%v), want %q", buf[:n], err, "before+after")
	}
	// A new file under the old name is another file.
	writeFile(t, p, "new")
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "before+after" {
		t.Errorf("the unlinked file after a new one took its name: got %q", buf[:n])
	}
	t.Run("fstat", func(t *testing.T) {
		knownBug(t, "diod", diodPathFids)
		var st unix.Stat_t
		must(t, "fstat", unix.Fstat(int(f.Fd()), &st))
		if st.Nlink != 0 || st.Size != 12 {
			t.Errorf("fstat of the unlinked file: got nlink %d size %d, want 0 and 12", st.Nlink, st.Size)
		}
	})
}

func TestSetattr(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := func(rel string) string { return filepath.Join(d, rel) }
	writeFile(t, p("f"), "x")
	must(t, "symlink", os.Symlink("f", p("l")))
	ts := func(sec, nsec int64) unix.Timespec { return unix.Timespec{Sec: sec, Nsec: nsec} }
	// v9fs keeps the VFS default timestamp granularity of one second, so
	// the guest kernel sends times set with nanoseconds as whole seconds
	// (Tsetattr with atime_nsec and mtime_nsec 0); the server must store
	// exactly that.
	settable := func(t unix.Timespec) unix.Timespec {
		if onNineP {
			t.Nsec = 0
		}
		return t
	}
	type want struct {
		mode     uint32 // permission bits and setuid/setgid/sticky
		uid, gid uint32
		atime    unix.Timespec // zero: not checked
		mtime    unix.Timespec
	}
	cases := []struct {
		name string
		path string
		op   func() error
		want want
	}{
		{"chmod 0600", "f", func() error { return os.Chmod(p("f"), 0o600) }, want{mode: 0o600}},
		{"chmod 4755", "f", func() error { return unix.Chmod(p("f"), 0o4755) }, want{mode: 0o4755}},
		{"fchmod 0640", "f", func() error {
			f, err := os.Open(p("f"))
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Chmod(0o640)
		}, want{mode: 0o640}},
		{"chown 1000:1001", "f", func() error { return os.Chown(p("f"), 1000, 1001) }, want{mode: 0o640, uid: 1000, gid: 1001}},
		{"chown -1:2000", "f", func() error { return os.Chown(p("f"), -1, 2000) }, want{mode: 0o640, uid: 1000, gid: 2000}},
		{"chown through the link", "f", func() error { return os.Chown(p("l"), 0, 0) }, want{mode: 0o640}},
		{"utimes", "f", func() error {
			return unix.UtimesNano(p("f"), []unix.Timespec{ts(1_000_000_000, 123_456_789), ts(1_500_000_000, 987_654_321)})
		}, want{mode: 0o640, atime: ts(1_000_000_000, 123_456_789), mtime: ts(1_500_000_000, 987_654_321)}},
		{"utimes mtime only", "f", func() error {
			return unix.UtimesNano(p("f"), []unix.Timespec{{Nsec: unix.UTIME_OMIT}, ts(2_000_000_000, 5)})
		}, want{mode: 0o640, atime: ts(1_000_000_000, 123_456_789), mtime: ts(2_000_000_000, 5)}},
		{"futimens", "f", func() error {
			f, err := os.OpenFile(p("f"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return futimens(int(f.Fd()), [2]unix.Timespec{ts(1_234_567_890, 42), ts(1_234_567_891, 43)})
		}, want{mode: 0o640, atime: ts(1_234_567_890, 42), mtime: ts(1_234_567_891, 43)}},
		{"lchown of the link", "l", func() error { return os.Lchown(p("l"), 1000, 1000) }, want{mode: 0o777, uid: 1000, gid: 1000}},
		{"the link's target untouched", "f", func() error { return nil }, want{mode: 0o640}},
	}
	for _, c := range cases {
		if err := c.op(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		st := lstat(t, p(c.path))
		got := want{mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid}
		if c.want.atime != (unix.Timespec{}) {
			got.atime, got.mtime = st.Atim, st.Mtim
			c.want.atime, c.want.mtime = settable(c.want.atime), settable(c.want.mtime)
		}
		if got != c.want {
			t.Errorf("%s: %s has mode %o uid %d gid %d atime %v mtime %v, want mode %o uid %d gid %d atime %v mtime %v",
				c.name, c.path, got.mode, got.uid, got.gid, got.atime, got.mtime,
				c.want.mode, c.want.uid, c.want.gid, c.want.atime, c.want.mtime)
		}
	}
}

func TestMknodFIFO(t *testing.T) {
	t.Parallel()
	p := filepath.Join(freshDir(t), "fifo")
	must(t, "mkfifo", unix.Mkfifo(p, 0o640))
	if st := lstat(t, p); st.Mode != unix.S_IFIFO|0o640 {
		t.Errorf("mode: got %o, want %o", st.Mode, unix.S_IFIFO|0o640)
	}
	// The pipe itself lives in the guest kernel; O_RDWR opens it without
	// waiting for a peer.
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	must(t, "open fifo", err)
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("ping")); err != nil {
		t.Fatalf("write fifo: %v", err)
	}
	buf := make([]byte, 16)
	n, err := unix.Read(fd, buf)
	if string(buf[:max(n, 0)]) != "ping" {
		t.Errorf("read fifo: got %q, %v; want %q", buf[:max(n, 0)], err, "ping")
	}
	wantErrno(t, "mkfifo again", unix.Mkfifo(p, 0o640), syscall.EEXIST)
	must(t, "unlink fifo", os.Remove(p))
}

func TestStatfs(t *testing.T) {
	t.Parallel()
	var st unix.Statfs_t
	must(t, "statfs", unix.Statfs(mountDir(t), &st))
	checks := []struct {
		name string
		ok   bool
	}{
		{"f_bsize > 0", st.Bsize > 0},
		{"f_blocks > 0", st.Blocks > 0},
		{"f_bfree <= f_blocks", st.Bfree <= st.Blocks},
		{"f_bavail <= f_bfree", st.Bavail <= st.Bfree},
		{"f_ffree <= f_files", st.Ffree <= st.Files},
		{"f_namelen >= 255", st.Namelen >= 255},
		{"f_fsid not 0", st.Fsid != (unix.Fsid{})},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("statfs: want %s; got %+v", c.name, st)
		}
	}
	var fst unix.Statfs_t
	f, err := os.Open(mountDir(t))
	must(t, "open", err)
	defer f.Close()
	must(t, "fstatfs", unix.Fstatfs(int(f.Fd()), &fst))
	if fst.Type != st.Type || fst.Bsize != st.Bsize || fst.Blocks != st.Blocks {
		t.Errorf("fstatfs got type %#x bsize %d blocks %d, statfs type %#x bsize %d blocks %d",
			fst.Type, fst.Bsize, fst.Blocks, st.Type, st.Bsize, st.Blocks)
	}
}

func TestXattrs(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	f := filepath.Join(d, "f")
	writeFile(t, f, "")
	binary := []byte{0, 1, 2, 0xff, '\n', 0}
	steps := []struct {
		name  string
		op    func() error
		want  syscall.Errno
		attrs map[string]string // all user.* attributes afterwards
	}{
		{"get missing", func() error { return errOf(unix.Getxattr(f, "user.a", make([]byte, 8))) }, syscall.ENODATA, map[string]string{}},
		{"set user.a", func() error { return unix.Setxattr(f, "user.a", []byte("one"), 0) }, 0, map[string]string{"user.a": "one"}},
		{"set user.b binary", func() error { return unix.Setxattr(f, "user.b", binary, 0) }, 0, map[string]string{"user.a": "one", "user.b": string(binary)}},
		{"create existing", func() error { return unix.Setxattr(f, "user.a", []byte("x"), unix.XATTR_CREATE) }, syscall.EEXIST, map[string]string{"user.a": "one", "user.b": string(binary)}},
		{"replace missing", func() error { return unix.Setxattr(f, "user.c", []byte("x"), unix.XATTR_REPLACE) }, syscall.ENODATA, map[string]string{"user.a": "one", "user.b": string(binary)}},
		{"replace user.a", func() error { return unix.Setxattr(f, "user.a", []byte("two"), unix.XATTR_REPLACE) }, 0, map[string]string{"user.a": "two", "user.b": string(binary)}},
		{"get into a short buffer", func() error { return errOf(unix.Getxattr(f, "user.a", make([]byte, 2))) }, syscall.ERANGE, map[string]string{"user.a": "two", "user.b": string(binary)}},
		{"remove user.b", func() error { return unix.Removexattr(f, "user.b") }, 0, map[string]string{"user.a": "two"}},
		{"remove missing", func() error { return unix.Removexattr(f, "user.b") }, syscall.ENODATA, map[string]string{"user.a": "two"}},
		{"set 3000 bytes", func() error { return unix.Setxattr(f, "user.big", bytes.Repeat([]byte("z"), 3000), 0) }, 0, map[string]string{"user.a": "two", "user.big": strings.Repeat("z", 3000)}},
	}
	for _, s := range steps {
		wantErrno(t, s.name, s.op(), s.want)
		if got, want := userXattrs(t, f), s.attrs; !sameAttrs(got, want) {
			t.Errorf("%s: attributes got %q, want %q", s.name, got, want)
		}
	}
	// The size query (a nil buffer) and attributes on a directory.
	if n, err := unix.Getxattr(f, "user.big", nil); err != nil || n != 3000 {
		t.Errorf("size of user.big: got %d, %v; want 3000", n, err)
	}
	must(t, "set on a directory", unix.Setxattr(d, "user.dir", []byte("yes"), 0))
	if got := userXattrs(t, d); !sameAttrs(got, map[string]string{"user.dir": "yes"}) {
		t.Errorf("directory attributes: got %q", got)
	}
}

// userXattrs lists p's user.* attributes and their values.
func userXattrs(t *testing.T, p string) map[string]string {
	t.Helper()
	n, err := unix.Listxattr(p, nil)
	must(t, "listxattr size", err)
	buf := make([]byte, n)
	n, err = unix.Listxattr(p, buf)
	must(t, "listxattr", err)
	out := map[string]string{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 4096)
		m, err := unix.Getxattr(p, name, v)
		must(t, "getxattr "+name, err)
		out[name] = string(v[:m])
	}
	return out
}

func sameAttrs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestErrnos(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	p := func(rel string) string { return filepath.Join(d, rel) }
	writeFile(t, p("file"), "content")
	must(t, "mkdir", os.MkdirAll(p("full/inner"), 0o755))
	must(t, "mkdir", os.Mkdir(p("empty"), 0o755))
	must(t, "symlink", os.Symlink("missing", p("dangling")))
	openErr := func(rel string, flags int) func() error {
		return func() error {
			fd, err := unix.Open(p(rel), flags|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(fd)
			}
			return err
		}
	}
	// EXDEV does not apply: one 9P mount is one file system in the guest,
	// and the server's own mounts are invisible to the client.
	cases := []struct {
		name string
		op   func() error
		want syscall.Errno
	}{
		{"open a missing file", openErr("missing", unix.O_RDONLY), syscall.ENOENT},
		{"open in a missing directory", openErr("missing/x", unix.O_RDONLY|unix.O_CREAT), syscall.ENOENT},
		{"stat through a dangling link", func() error { return unix.Stat(p("dangling"), new(unix.Stat_t)) }, syscall.ENOENT},
		{"unlink a missing file", func() error { return unix.Unlink(p("missing")) }, syscall.ENOENT},
		{"rename a missing file", func() error { return unix.Rename(p("missing"), p("x")) }, syscall.ENOENT},
		{"O_CREAT|O_EXCL an existing file", openErr("file", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL), syscall.EEXIST},
		{"mkdir over a file", func() error { return unix.Mkdir(p("file"), 0o755) }, syscall.EEXIST},
		{"mkdir over a directory", func() error { return unix.Mkdir(p("empty"), 0o755) }, syscall.EEXIST},
		{"link over a file", func() error { return unix.Link(p("file"), p("dangling")) }, syscall.EEXIST},
		{"mkfifo over a file", func() error { return unix.Mkfifo(p("file"), 0o644) }, syscall.EEXIST},
		{"open under a file", openErr("file/x", unix.O_RDONLY), syscall.ENOTDIR},
		{"create under a file", openErr("file/x", unix.O_RDWR|unix.O_CREAT), syscall.ENOTDIR},
		{"O_DIRECTORY on a file", openErr("file", unix.O_RDONLY|unix.O_DIRECTORY), syscall.ENOTDIR},
		{"rmdir a file", func() error { return unix.Rmdir(p("file")) }, syscall.ENOTDIR},
		{"rename a directory over a file", func() error { return unix.Rename(p("empty"), p("file")) }, syscall.ENOTDIR},
		{"open a directory for writing", openErr("empty", unix.O_WRONLY), syscall.EISDIR},
		{"open a directory O_RDWR|O_CREAT", openErr("empty", unix.O_RDWR|unix.O_CREAT), syscall.EISDIR},
		{"unlink a directory", func() error { return unix.Unlink(p("empty")) }, syscall.EISDIR},
		{"rename a file over a directory", func() error { return unix.Rename(p("file"), p("empty")) }, syscall.EISDIR},
		{"truncate a directory", func() error { return unix.Truncate(p("empty"), 0) }, syscall.EISDIR},
		{"read a directory", func() error {
			fd, err := unix.Open(p("empty"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return errOf(unix.Read(fd, make([]byte, 16)))
		}, syscall.EISDIR},
		{"rmdir a non-empty directory", func() error { return unix.Rmdir(p("full")) }, syscall.ENOTEMPTY},
		{"rename over a non-empty directory", func() error { return unix.Rename(p("empty"), p("full")) }, syscall.ENOTEMPTY},
		{"rename a directory into itself", func() error { return unix.Rename(p("full"), p("full/inner/x")) }, syscall.EINVAL},
		{"readlink a file", func() error { return errOf(unix.Readlink(p("file"), make([]byte, 64))) }, syscall.EINVAL},
		{"rmdir .", func() error { return unix.Rmdir(d + "/empty/.") }, syscall.EINVAL},
		{"link a directory", func() error { return unix.Link(p("empty"), p("dirlink")) }, syscall.EPERM},
		{"getxattr missing", func() error { return errOf(unix.Getxattr(p("file"), "user.none", make([]byte, 8))) }, syscall.ENODATA},
		{"a name of 256 bytes", openErr(strings.Repeat("n", 256), unix.O_RDWR|unix.O_CREAT), syscall.ENAMETOOLONG},
		{"write to a read-only descriptor", func() error {
			fd, err := unix.Open(p("file"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return errOf(unix.Write(fd, []byte("x")))
		}, syscall.EBADF},
	}
	for _, c := range cases {
		wantErrno(t, c.name, c.op(), c.want)
	}
	// Nothing above may have changed the fixture.
	if got := readFile(t, p("file")); got != "content" {
		t.Errorf("file after the failed calls: got %q, want %q", got, "content")
	}
	if g, w := dirNames(t, d), "dangling empty file full"; g != w {
		t.Errorf("directory after the failed calls: got %s, want %s", g, w)
	}
}
