//go:build linux

package main

import (
	"bytes"
	smbin "encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs/vfstest"

	"github.com/gsvfs/gsvfs/internal/testenv"
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
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; cannot run children as another uid")
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: smOther, Gid: smOther, Groups: []uint32{}},
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
		t.Fatalf("script as uid %d in %s did not finish in 20s:\n%s\n%s", smOther, dir, script, out)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running script as uid %d: %v", smOther, err)
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

// smDirent is one linux_dirent64 record.
type smDirent struct {
	name string
	off  int64
}

func smParseDirents(b []byte) []smDirent {
	var out []smDirent
	for len(b) >= 19 {
		reclen := int(smbin.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		out = append(out, smDirent{name: string(name), off: int64(smbin.NativeEndian.Uint64(b[8:16]))})
		b = b[reclen:]
	}
	return out
}

// smGetdents reads up to n entries (all if n < 0) from fd with a buffer of
// bufSize bytes, one getdents64 call at a time.
func smGetdents(t *testing.T, fd, bufSize, n int) []smDirent {
	t.Helper()
	buf := make([]byte, bufSize)
	var out []smDirent
	for n < 0 || len(out) < n {
		k, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatalf("getdents with a %d-byte buffer after %d entries: %v", bufSize, len(out), err)
		}
		if k == 0 {
			break
		}
		got := smParseDirents(buf[:k])
		if len(got) == 0 {
			t.Fatalf("getdents returned %d bytes but no whole record", k)
		}
		out = append(out, got...)
	}
	return out
}

func smNames(es []smDirent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.name
	}
	return out
}

// smCheckTinyGetdents lists dir (holding want, plus . and ..) with a
// getdents buffer that fits one or two entries, with a telldir/seekdir
// resumption in the middle, a seek to the recorded end and a rewind.
func smCheckTinyGetdents(t *testing.T, dir string, want []string, bufSize int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	smMust(t, "open dir", err)
	defer unix.Close(fd)

	all := append([]string{".", ".."}, want...)
	slices.Sort(all)
	check := func(what string, got []string) {
		t.Helper()
		counts := map[string]int{}
		for _, n := range got {
			counts[n]++
		}
		var dup, missing, extra []string
		for n, c := range counts {
			if c > 1 {
				dup = append(dup, n)
			}
		}
		for _, n := range all {
			if counts[n] == 0 {
				missing = append(missing, n)
			}
		}
		for n := range counts {
			if !slices.Contains(all, n) {
				extra = append(extra, n)
			}
		}
		if len(dup)+len(missing)+len(extra) > 0 {
			t.Errorf("%s (buffer %d bytes): got %d names, want %d each once; duplicated %d %v, missing %d %v, unexpected %v",
				what, bufSize, len(got), len(all), len(dup), smHead(dup), len(missing), smHead(missing), extra)
		}
	}

	first := smGetdents(t, fd, bufSize, 300)
	pos, err := unix.Seek(fd, 0, unix.SEEK_CUR)
	smMust(t, "telldir (lseek SEEK_CUR)", err)
	if len(first) > 0 && pos != first[len(first)-1].off {
		t.Errorf("telldir after %d entries: got %d, want the last entry's d_off %d", len(first), pos, first[len(first)-1].off)
	}
	cont1 := smGetdents(t, fd, bufSize, 100)
	got, err := unix.Seek(fd, pos, unix.SEEK_SET)
	if err != nil || got != pos {
		t.Fatalf("seekdir back to %d: got (%d, %v), want (%d, nil)", pos, got, err, pos)
	}
	rest := smGetdents(t, fd, bufSize, -1)
	n := min(len(cont1), len(rest))
	if !slices.Equal(smNames(cont1), smNames(rest[:n])) || n != 100 {
		t.Errorf("continuation after seekdir(%d): got %v..., want %v... (as before the seek)",
			pos, smHead(smNames(rest[:n])), smHead(smNames(cont1)))
	}
	check("one pass with a seek back", append(smNames(first), smNames(rest)...))

	end, err := unix.Seek(fd, 0, unix.SEEK_CUR)
	smMust(t, "telldir at the end", err)
	if got, err := unix.Seek(fd, end, unix.SEEK_SET); err != nil || got != end {
		t.Errorf("seekdir to the end offset %d (%#x) recorded by telldir: got (%d, %v), want (%d, nil)", end, uint64(end), got, err, end)
	} else if more := smGetdents(t, fd, bufSize, -1); len(more) != 0 {
		t.Errorf("reading after seekdir to the end: got %d entries %v, want none", len(more), smHead(smNames(more)))
	}

	if _, err := unix.Seek(fd, 0, unix.SEEK_SET); err != nil {
		t.Fatalf("rewinddir: %v", err)
	}
	check("second pass after rewinddir", smNames(smGetdents(t, fd, bufSize, -1)))
}

func smHead(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

// TestSemGetdentsTinyBuffer lists a directory of 1,000 entries through the
// mount with getdents buffers that fit one or two entries, as readdir(3)
// implementations with small buffers and telldir/seekdir users do.
func TestSemGetdentsTinyBuffer(t *testing.T) {
	d := startMount(t)
	mounted := smWorkdir(t, d)
	native := t.TempDir()
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("entry-%04d", i))
	}
	for _, dir := range []string{native, mounted} {
		for _, n := range names {
			fd, err := unix.Open(filepath.Join(dir, n), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			smMust(t, "create", err)
			if err := unix.Close(fd); err != nil {
				t.Fatalf("close of a created file: %v", err)
			}
		}
	}
	// A record for "entry-0000" takes 32 bytes, "." and ".." 24.
	for _, size := range []int{32, 64} {
		t.Run(fmt.Sprintf("native/buf%d", size), func(t *testing.T) { smCheckTinyGetdents(t, native, names, size) })
		t.Run(fmt.Sprintf("mount/buf%d", size), func(t *testing.T) { smCheckTinyGetdents(t, mounted, names, size) })
	}
}

// TestSemReaddirTenThousand lists a directory of 10,000 entries.
func TestSemReaddirTenThousand(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	host := smHost(t, d, dir)
	// Half made through the mount, half dropped in the state directory by
	// another program.
	want := make([]string, 0, 10000)
	for i := range 10000 {
		name := fmt.Sprintf("file-%05d-%s", i, strings.Repeat("x", i%40))
		want = append(want, name)
		where := dir
		if i%2 == 1 {
			where = host
		}
		fd, err := unix.Open(filepath.Join(where, name), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		smMust(t, "create", err)
		if err := unix.Close(fd); err != nil {
			t.Fatalf("close of a created file: %v", err)
		}
	}
	entries, err := os.ReadDir(dir)
	smMust(t, "ReadDir", err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("os.ReadDir: got %d names (%d distinct), want the %d created", len(got), len(slices.Compact(slices.Clone(got))), len(want))
	}
	out := strings.TrimSpace(testenv.Run(t, dir, "sh", "-c", "ls -f | wc -l"))
	if out != "10002" {
		t.Errorf("ls -f | wc -l: got %s, want 10002 (10,000 entries plus . and ..)", out)
	}
}

// TestSemCoherenceHardLink writes through one name of a file and reads
// through another right after each write.
func TestSemCoherenceHardLink(t *testing.T) {
	for _, mode := range smModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			d := startMount(t, mode.flags...)
			dir := smWorkdir(t, d)
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "sub", "b")
			smMust(t, "mkdir", os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			smMust(t, "create a", os.WriteFile(a, nil, 0o644))
			smMust(t, "link a b", os.Link(a, b))

			var want []byte
			checkB := func(step string) {
				t.Helper()
				var st unix.Stat_t
				smMust(t, "stat b", unix.Stat(b, &st))
				if st.Size != int64(len(want)) {
					t.Fatalf("%s: stat via the other name: got size %d, want %d", step, st.Size, len(want))
				}
				if got := smReadFile(t, b); !bytes.Equal(got, want) {
					t.Fatalf("%s: read via the other name: %s", step, smDescribe(got, want))
				}
			}
			// Appends on a descriptor kept open on a.
			f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
			smMust(t, "open a", err)
			for i := range 40 {
				chunk := bytes.Repeat([]byte{byte('A' + i%26)}, 1+(i*977)%9000)
				_, err := f.Write(chunk)
				smMust(t, "append", err)
				want = append(want, chunk...)
				checkB(fmt.Sprintf("append %d on an open descriptor of a", i))
			}
			f.Close()
			// Open, append, close each time.
			for i := range 20 {
				chunk := []byte(fmt.Sprintf("line %d\n", i))
				f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
				smMust(t, "open a", err)
				_, err = f.Write(chunk)
				smMust(t, "append", err)
				smMust(t, "close", f.Close())
				want = append(want, chunk...)
				checkB(fmt.Sprintf("open-append-close %d on a", i))
			}
			// Overwrite in the middle via b, read via a; shrink via a.
			smMust(t, "write b", os.WriteFile(b, []byte("short"), 0o644))
			want = []byte("short")
			if got := smReadFile(t, a); !bytes.Equal(got, want) {
				t.Errorf("after truncating write via b, read via a: %s", smDescribe(got, want))
			}
			smMust(t, "truncate a", os.Truncate(a, 2))
			want = want[:2]
			checkB("truncate via a")
		})
	}
}

// TestSemCoherenceExternalWrite writes files directly in the state
// directory and reads them through the mount once the attribute cache
// time (1 s) has passed: never stale, truncated or NUL-padded.
func TestSemCoherenceExternalWrite(t *testing.T) {
	for _, mode := range smModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			d := startMount(t, mode.flags...)
			dir := smWorkdir(t, d)
			p := filepath.Join(dir, "f")
			host := smHost(t, d, p)
			smMust(t, "write", os.WriteFile(host, bytes.Repeat([]byte("a"), 100), 0o644))
			smReadFile(t, p) // the kernel now caches its size and pages

			versions := []struct {
				how  string
				data []byte
			}{
				{"grow in place", bytes.Repeat([]byte("b"), 5000)},
				{"shrink in place", bytes.Repeat([]byte("c"), 50)},
				{"same size in place", bytes.Repeat([]byte("d"), 50)},
				{"replace by rename, larger", bytes.Repeat([]byte("e"), 70000)},
				{"replace by rename, smaller", []byte("f")},
			}
			for _, v := range versions {
				if strings.HasPrefix(v.how, "replace") {
					smMust(t, "write tmp", os.WriteFile(host+".tmp", v.data, 0o644))
					smMust(t, "rename", os.Rename(host+".tmp", host))
				} else {
					smMust(t, "write", os.WriteFile(host, v.data, 0o644))
				}
				time.Sleep(1100 * time.Millisecond)
				var st unix.Stat_t
				smMust(t, "stat", unix.Stat(p, &st))
				if st.Size != int64(len(v.data)) {
					t.Errorf("%s: stat through the mount after 1.1s: got size %d, want %d", v.how, st.Size, len(v.data))
				}
				if got := smReadFile(t, p); !bytes.Equal(got, v.data) {
					t.Errorf("%s: read through the mount after 1.1s: %s", v.how, smDescribe(got, v.data))
				}
			}
		})
	}
}

// smVersion is the content of version i of the atomically saved file:
// lengths grow and shrink, and every byte says which version it is.
func smVersion(i int) []byte {
	sizes := []int{1, 4096, 100, 65536 + 17, 3000, 200000, 4095, 12}
	head := fmt.Sprintf("v%06d:", i)
	n := max(sizes[i%len(sizes)], len(head))
	b := bytes.Repeat([]byte{byte('a' + i%26)}, n)
	copy(b, head)
	return b[:n]
}

// smCheckVersion reports what is wrong with data read from the saved file.
func smCheckVersion(data []byte) string {
	var i int
	if _, err := fmt.Sscanf(string(data[:min(len(data), 8)]), "v%06d:", &i); err != nil {
		return fmt.Sprintf("no version header: %d bytes starting %q", len(data), data[:min(len(data), 16)])
	}
	want := smVersion(i)
	if !bytes.Equal(data, want) {
		return fmt.Sprintf("version %d: %s", i, smDescribe(data, want))
	}
	return ""
}

// TestSemCoherenceAtomicSave saves a file the way editors and agents do —
// write a temporary file, rename it over the target — over and over, while
// readers open and read the target through the mount. Every read must be
// exactly one of the saved versions.
func TestSemCoherenceAtomicSave(t *testing.T) {
	type variant struct{ name, mode, writer string }
	variants := []variant{{"native", "", ""}}
	for _, mode := range smModes {
		for _, writer := range []string{"mount", "host"} {
			variants = append(variants, variant{mode.name + "/writer-on-" + writer, mode.name, writer})
		}
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			// The native variant checks the test itself: ext4 meets it.
			dir := t.TempDir()
			wdir := dir
			if v.mode != "" {
				var flags []string
				for _, m := range smModes {
					if m.name == v.mode {
						flags = m.flags
					}
				}
				d := startMount(t, flags...)
				dir = smWorkdir(t, d)
				wdir = dir
				if v.writer == "host" {
					wdir = smHost(t, d, dir)
				}
			}
			target := filepath.Join(dir, "target.txt")
			save := func(i int) error {
				tmp := filepath.Join(wdir, fmt.Sprintf(".target.txt.%d.tmp", i))
				if err := os.WriteFile(tmp, smVersion(i), 0o644); err != nil {
					return err
				}
				return os.Rename(tmp, filepath.Join(wdir, "target.txt"))
			}
			smMust(t, "first save", save(0))

			var stop atomic.Bool
			var saves atomic.Int64
			var wg sync.WaitGroup
			werr := make(chan error, 1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; !stop.Load(); i++ {
					if err := save(i); err != nil {
						werr <- err
						return
					}
					saves.Store(int64(i))
				}
			}()
			type bad struct {
				n   int
				msg string
			}
			bads := make(chan bad, 100)
			var reads, badReads, stale atomic.Int64
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						data, err := os.ReadFile(target)
						n := int(reads.Add(1))
						msg := ""
						if err != nil && v.writer == "host" && errors.Is(err, syscall.ESTALE) {
							// A replacement made behind the daemon's
							// back can race an open twice in a row
							// (the kernel retries ESTALE once): the
							// open fails, as on NFS, but no wrong
							// bytes are ever read. Counted, allowed.
							stale.Add(1)
							continue
						}
						if err != nil {
							msg = fmt.Sprintf("read error %v", err)
						} else {
							msg = smCheckVersion(data)
						}
						if msg != "" {
							badReads.Add(1)
							select {
							case bads <- bad{n, msg}:
							default:
							}
						}
					}
				}()
			}
			time.Sleep(3 * time.Second)
			stop.Store(true)
			wg.Wait()
			close(bads)
			select {
			case err := <-werr:
				t.Fatalf("saving: %v", err)
			default:
			}
			var msgs []string
			for b := range bads {
				msgs = append(msgs, fmt.Sprintf("read #%d: %s", b.n, b.msg))
			}
			t.Logf("%d saves, %d reads, %d opens refused as stale", saves.Load(), reads.Load(), stale.Load())
			if len(msgs) > 0 {
				t.Errorf("%d of %d reads were not exactly one saved version (first ones):\n%s",
					badReads.Load(), reads.Load(), strings.Join(msgs[:min(len(msgs), 10)], "\n"))
			}
			if saves.Load() < 10 || reads.Load() < 10 {
				t.Errorf("got %d saves and %d reads in 3s, want at least 10 of each", saves.Load(), reads.Load())
			}
		})
	}
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

// TestSemXattrs sets, gets, lists and removes user.* attributes through the
// mount.
func TestSemXattrs(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	probe := filepath.Join(d.Root, "workspaces", "xattr-probe")
	smMust(t, "probe file", os.WriteFile(probe, nil, 0o644))
	if err := unix.Setxattr(probe, "user.probe", []byte("1"), 0); err != nil {
		if vfs.Errno(err) == syscall.ENOTSUP {
			t.Skipf("SKIPPED: the state directory's filesystem has no user xattrs (%v)", err)
		}
		t.Fatalf("setxattr on the host: %v", err)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}

	for _, kind := range []string{"file", "dir"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(dir, kind)
			if kind == "file" {
				smMust(t, "create", os.WriteFile(p, []byte("x"), 0o644))
			} else {
				smMust(t, "mkdir", os.Mkdir(p, 0o755))
			}
			big := bytes.Repeat([]byte("v"), 3000)
			smMust(t, "setxattr", unix.Setxattr(p, "user.one", []byte("value 1"), 0))
			smMust(t, "setxattr big", unix.Setxattr(p, "user.big", big, 0))
			smMust(t, "setxattr empty", unix.Setxattr(p, "user.empty", nil, 0))
			get := func(name string) ([]byte, error) {
				size, err := unix.Getxattr(p, name, nil)
				if err != nil {
					return nil, err
				}
				buf := make([]byte, size)
				n, err := unix.Getxattr(p, name, buf)
				return buf[:max(n, 0)], err
			}
			if v, err := get("user.one"); err != nil || string(v) != "value 1" {
				t.Errorf("getxattr user.one: got %q, %v, want %q", v, err, "value 1")
			}
			if v, err := get("user.big"); err != nil || !bytes.Equal(v, big) {
				t.Errorf("getxattr user.big: got %d bytes, %v, want %d", len(v), err, len(big))
			}
			if v, err := get("user.empty"); err != nil || len(v) != 0 {
				t.Errorf("getxattr user.empty: got %q, %v, want empty", v, err)
			}
			small := make([]byte, 3)
			_, err := unix.Getxattr(p, "user.one", small)
			smWantErrno(t, "getxattr into a too small buffer", err, syscall.ERANGE)
			size, err := unix.Listxattr(p, nil)
			smMust(t, "listxattr size", err)
			buf := make([]byte, size)
			n, err := unix.Listxattr(p, buf)
			smMust(t, "listxattr", err)
			var names []string
			for _, s := range strings.Split(string(buf[:n]), "\x00") {
				if strings.HasPrefix(s, "user.") {
					names = append(names, s)
				}
			}
			slices.Sort(names)
			if want := []string{"user.big", "user.empty", "user.one"}; !slices.Equal(names, want) {
				t.Errorf("listxattr: got %v, want %v", names, want)
			}
			smWantErrno(t, "setxattr XATTR_CREATE on an existing name", unix.Setxattr(p, "user.one", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST)
			smWantErrno(t, "setxattr XATTR_REPLACE on a missing name", unix.Setxattr(p, "user.none", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA)
			smMust(t, "setxattr XATTR_REPLACE", unix.Setxattr(p, "user.one", []byte("value 2"), unix.XATTR_REPLACE))
			hostVal := make([]byte, 64)
			hn, err := unix.Getxattr(smHost(t, d, p), "user.one", hostVal)
			if err != nil || string(hostVal[:max(hn, 0)]) != "value 2" {
				t.Errorf("getxattr on the host: got %q, %v, want %q", hostVal[:max(hn, 0)], err, "value 2")
			}
			smMust(t, "removexattr", unix.Removexattr(p, "user.one"))
			_, err = get("user.one")
			smWantErrno(t, "getxattr after removexattr", err, syscall.ENODATA)
			smWantErrno(t, "removexattr of a missing name", unix.Removexattr(p, "user.one"), syscall.ENODATA)
			_, err = get("user.never")
			smWantErrno(t, "getxattr of a name never set", err, syscall.ENODATA)
		})
	}
}

// TestSemSelinuxLabelUnsupported: a file without an SELinux label answers
// its getxattr with EOPNOTSUPP, as a filesystem without labels does, so
// that ls stops asking for every file it lists; a label a file has on the
// disk still reads through the mount, and ls -l lists as before. Needs a
// host without SELinux (with it, the kernel answers labels itself).
func TestSemSelinuxLabelUnsupported(t *testing.T) {
	if lsm, _ := os.ReadFile("/sys/kernel/security/lsm"); strings.Contains(string(lsm), "selinux") {
		t.Skip("SKIPPED: this host runs SELinux, whose kernel answers labels without asking the mount")
	}
	d := startMount(t)
	dir := smWorkdir(t, d)
	plain := filepath.Join(dir, "plain")
	labelled := filepath.Join(dir, "labelled")
	smMust(t, "create", os.WriteFile(plain, []byte("x"), 0o644))
	smMust(t, "create", os.WriteFile(labelled, []byte("x"), 0o644))
	label := []byte("system_u:object_r:gsvfs_t:s0\x00")
	if err := unix.Lsetxattr(smHost(t, d, labelled), selinuxName, label, 0); err != nil {
		t.Skipf("SKIPPED: cannot label a file on the host (SELinux enforcing, or no security xattrs here): %v", err)
	}
	buf := make([]byte, 256)
	_, err := unix.Lgetxattr(plain, selinuxName, buf)
	smWantErrno(t, "getxattr of a label a file lacks", err, syscall.EOPNOTSUPP)
	n, err := unix.Lgetxattr(labelled, selinuxName, buf)
	if err != nil || !bytes.Equal(buf[:max(n, 0)], label) {
		t.Errorf("getxattr of a file's label: got %q, %v, want %q", buf[:max(n, 0)], err, label)
	}
	_, err = unix.Lgetxattr(plain, "user.never", buf)
	smWantErrno(t, "getxattr of another missing name", err, syscall.ENODATA)
	out, err := exec.Command("ls", "-l", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "plain") || !strings.Contains(string(out), "labelled") {
		t.Errorf("ls -l: %v\n%s", err, out)
	}
}

const selinuxName = "security.selinux"

// TestSemLongPath builds a tree deeper than PATH_MAX (4096 bytes) through
// the mount, one *at call at a time, and writes and reads a file at the
// bottom.
func TestSemLongPath(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	name := strings.Repeat("d", 200)
	const depth = 24 // 24 * 201 bytes > 4096
	openChain := func(top string, create bool) int {
		t.Helper()
		fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		smMust(t, "open top", err)
		for i := range depth {
			if create {
				if err := unix.Mkdirat(fd, name, 0o755); err != nil {
					t.Fatalf("mkdirat at depth %d (%d bytes): %v", i, i*(len(name)+1), err)
				}
			}
			next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatalf("openat at depth %d (%d bytes): %v", i, i*(len(name)+1), err)
			}
			fd = next
		}
		return fd
	}
	fd := openChain(dir, true)
	defer unix.Close(fd)
	data := []byte("at the bottom of a very long path\n")
	f, err := unix.Openat(fd, "leaf", unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	smMust(t, "create leaf", err)
	if n, err := unix.Write(f, data); err != nil || n != len(data) {
		t.Errorf("write leaf: got (%d, %v), want (%d, nil)", n, err, len(data))
	}
	if err := unix.Close(f); err != nil {
		t.Fatalf("close of the leaf: %v", err)
	}
	readAt := func(dirfd int) []byte {
		t.Helper()
		f, err := unix.Openat(dirfd, "leaf", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		smMust(t, "open leaf", err)
		defer unix.Close(f)
		buf := make([]byte, 100)
		n, err := unix.Read(f, buf)
		smMust(t, "read leaf", err)
		return buf[:n]
	}
	if got := readAt(fd); !bytes.Equal(got, data) {
		t.Errorf("leaf through the mount: got %q, want %q", got, data)
	}
	var st unix.Stat_t
	smMust(t, "fstatat leaf", unix.Fstatat(fd, "leaf", &st, 0))
	if st.Size != int64(len(data)) {
		t.Errorf("fstatat leaf: got size %d, want %d", st.Size, len(data))
	}
	// The same file on the host, walked the same way.
	hfd := openChain(smHost(t, d, dir), false)
	defer unix.Close(hfd)
	if got := readAt(hfd); !bytes.Equal(got, data) {
		t.Errorf("leaf on the host: got %q, want %q", got, data)
	}
	// Reopened from scratch through the mount (fresh lookups).
	fd2 := openChain(dir, false)
	defer unix.Close(fd2)
	if got := readAt(fd2); !bytes.Equal(got, data) {
		t.Errorf("leaf through a second walk: got %q, want %q", got, data)
	}
	if total := len(dir) + depth*(len(name)+1) + len("/leaf"); total <= 4096 {
		t.Fatalf("the path is only %d bytes; want more than 4096", total)
	}
}

// smMultiUserScript runs as uid 1000 in a directory prepared by
// smMultiUserSetup; each step prints its name, exit code and output.
const smMultiUserScript = `
step() { name=$1; shift; out=$("$@" 2>&1); rc=$?; printf '%s rc=%d %s\n' "$name" "$rc" "$(printf %s "$out" | tr '\n' ' ')"; }
step read-secret cat secret
step read-public cat public
step append-public sh -c 'echo x >> public'
step truncate-public sh -c ': > public'
step create-in-root-dir touch rootonly/x
step touch-022 sh -c 'umask 022; touch shared/f022'
step touch-077 sh -c 'umask 077; touch shared/f077'
step mkdir-022 sh -c 'umask 022; mkdir shared/d022'
step mkdir-077 sh -c 'umask 077; mkdir shared/d077'
step excl-0444 sh -c 'umask 222; set -C; echo obj > shared/obj && cat shared/obj'
step excl-again sh -c 'umask 222; set -C; echo obj > shared/obj'
step write-own-0444 sh -c 'echo more >> shared/obj'
step unlink-root-file rm -f shared/rootfile
step rename-root-file mv shared/rootfile shared/stolen
step chmod-root-file chmod 0777 shared/rootfile
step write-root-0666 sh -c 'echo by-1000 >> shared/rootfile'
step chown-own-file chown 0 shared/f022
step chmod-own-file chmod 0640 shared/f077
step unlink-own-file sh -c 'touch shared/mine && rm shared/mine && echo gone'
step symlink ln -s target shared/lnk
step setgid-file sh -c 'umask 022; touch sg/f'
step setgid-dir sh -c 'umask 022; mkdir sg/d'
step setgid-chmod chmod 2755 sg/f
step readdir-secret-dir ls private
`

// smMultiUserSetup prepares dir (as root) for smMultiUserScript.
func smMultiUserSetup(t *testing.T, dir string) {
	t.Helper()
	file := func(name, content string, mode uint32) {
		p := filepath.Join(dir, name)
		smMust(t, "write "+name, os.WriteFile(p, []byte(content), 0o600))
		smMust(t, "chmod "+name, unix.Chmod(p, mode))
	}
	mkdir := func(name string, mode uint32) {
		p := filepath.Join(dir, name)
		smMust(t, "mkdir "+name, os.Mkdir(p, 0o700))
		smMust(t, "chmod "+name, unix.Chmod(p, mode))
	}
	smMust(t, "chmod top", unix.Chmod(dir, 0o755))
	file("secret", "secret data\n", 0o600)
	file("public", "public data\n", 0o644)
	mkdir("rootonly", 0o755)
	mkdir("private", 0o700)
	mkdir("shared", 0o1777)
	file("shared/rootfile", "root's\n", 0o666)
	mkdir("sg", 0o2777)
	smMust(t, "chown sg", os.Chown(filepath.Join(dir, "sg"), 0, 4242))
	smMust(t, "chmod sg", unix.Chmod(filepath.Join(dir, "sg"), 0o2777))
}

// smMultiUserResults runs the script as uid 1000 and then describes, as
// root, what it left: one line per step and per resulting file.
func smMultiUserResults(t *testing.T, dir string) (steps map[string]string, files map[string]unix.Stat_t, transcript string) {
	t.Helper()
	smMultiUserSetup(t, dir)
	out := smAsOther(t, dir, smMultiUserScript)
	steps = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		steps[name] = rest
	}
	files = map[string]unix.Stat_t{}
	var b strings.Builder
	b.WriteString(out)
	for _, name := range []string{"shared/f022", "shared/f077", "shared/d022", "shared/d077", "shared/obj",
		"shared/lnk", "shared/rootfile", "shared/mine", "sg/f", "sg/d", "public", "secret", "rootonly/x"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
			fmt.Fprintf(&b, "%s: %s\n", name, smErrName(vfs.Errno(err)))
			continue
		}
		files[name] = st
		fmt.Fprintf(&b, "%s: mode %o uid %d gid %d size %d\n", name, st.Mode, st.Uid, st.Gid, st.Size)
	}
	return steps, files, b.String()
}

// TestSemMultiUser runs the same sequence as uid 1000 on a native
// directory and in the mount (daemon as root, allow_other,
// default_permissions): permission checks, ownership and modes of new
// files, sticky and set-group-ID directories must be exactly ext4's.
func TestSemMultiUser(t *testing.T) {
	d := smSharedMount(t)
	native := filepath.Join(smSharedTempDir(t), "native")
	smMust(t, "mkdir native", os.Mkdir(native, 0o755))
	mounted := smWorkdir(t, d)

	nSteps, nFiles, nText := smMultiUserResults(t, native)
	mSteps, mFiles, mText := smMultiUserResults(t, mounted)
	t.Logf("native transcript:\n%s", nText)
	if nText != mText {
		t.Errorf("results differ between native ext4 and the mount.\nnative:\n%s\nmount:\n%s", nText, mText)
	}

	// What ext4 gives, spelled out, checked on both.
	wantSteps := map[string]string{
		"read-secret":        "rc=1 cat: secret: Permission denied",
		"read-public":        "rc=0 public data",
		"append-public":      "Permission denied",
		"truncate-public":    "Permission denied",
		"create-in-root-dir": "Permission denied",
		"touch-022":          "rc=0",
		"excl-0444":          "rc=0 obj",
		"excl-again":         "File exists",
		"write-own-0444":     "Permission denied",
		"unlink-root-file":   "Operation not permitted",
		"rename-root-file":   "Operation not permitted",
		"chmod-root-file":    "Operation not permitted",
		"write-root-0666":    "rc=0",
		"chown-own-file":     "Operation not permitted",
		"chmod-own-file":     "rc=0",
		"unlink-own-file":    "rc=0 gone",
		"readdir-secret-dir": "Permission denied",
	}
	type fileWant struct {
		mode     uint32
		uid, gid uint32
	}
	wantFiles := map[string]fileWant{
		"shared/f022":     {unix.S_IFREG | 0o644, smOther, smOther},
		"shared/f077":     {unix.S_IFREG | 0o640, smOther, smOther},
		"shared/d022":     {unix.S_IFDIR | 0o755, smOther, smOther},
		"shared/d077":     {unix.S_IFDIR | 0o700, smOther, smOther},
		"shared/obj":      {unix.S_IFREG | 0o444, smOther, smOther},
		"shared/lnk":      {unix.S_IFLNK | 0o777, smOther, smOther},
		"shared/rootfile": {unix.S_IFREG | 0o666, 0, 0},
		"sg/f":            {unix.S_IFREG | 0o755, smOther, 4242}, // S_ISGID dropped: 1000 is not in group 4242
		"sg/d":            {unix.S_IFDIR | 0o2755, smOther, 4242},
	}
	for _, side := range []struct {
		name  string
		steps map[string]string
		files map[string]unix.Stat_t
	}{{"native", nSteps, nFiles}, {"mount", mSteps, mFiles}} {
		for step, want := range wantSteps {
			if got := side.steps[step]; !strings.Contains(got, want) {
				t.Errorf("%s: step %s: got %q, want it to contain %q", side.name, step, got, want)
			}
		}
		for name, want := range wantFiles {
			st, ok := side.files[name]
			if !ok || st.Mode != want.mode || st.Uid != want.uid || st.Gid != want.gid {
				t.Errorf("%s: %s: got mode %o %d:%d (exists %v), want mode %o %d:%d",
					side.name, name, st.Mode, st.Uid, st.Gid, ok, want.mode, want.uid, want.gid)
			}
		}
	}
	// The state directory holds the same ownership and modes as the
	// mount shows.
	for name, st := range mFiles {
		var host unix.Stat_t
		p := smHost(t, d, filepath.Join(mounted, name))
		if err := unix.Lstat(p, &host); err != nil {
			t.Errorf("host %s: %v", name, err)
			continue
		}
		if host.Mode != st.Mode || host.Uid != st.Uid || host.Gid != st.Gid || host.Size != st.Size {
			t.Errorf("host %s: got mode %o %d:%d size %d, want as via the mount: mode %o %d:%d size %d",
				name, host.Mode, host.Uid, host.Gid, host.Size, st.Mode, st.Uid, st.Gid, st.Size)
		}
	}
}

// TestSemEscapes checks that the daemon itself never reaches outside the
// state directory: symlinks planted there are served as symlinks (any
// resolution happens in the client's namespace, by the client's kernel),
// and operations the kernel does not resolve client-side — on the link
// itself, or on a file or directory the kernel already holds while its
// name is swapped for a symlink on the host — act inside the state
// directory only.
func TestSemEscapes(t *testing.T) {
	d := startMount(t)
	ws := filepath.Join(d.Root, "workspaces")
	mws := d.Path("workspaces")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	smMust(t, "write outside", os.WriteFile(secret, []byte("outside secret\n"), 0o644))
	smMust(t, "xattr outside", unix.Setxattr(secret, "user.secret", []byte("outside xattr"), 0))
	old := time.Unix(1000000000, 0)
	smMust(t, "chtimes outside", os.Chtimes(secret, old, old))
	smMust(t, "chtimes outside dir", os.Chtimes(outside, old, old))

	// outsideIntact fails if anything outside the state directory changed.
	outsideIntact := func(t *testing.T, step string) {
		t.Helper()
		entries, err := os.ReadDir(outside)
		smMust(t, "readdir outside", err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"secret"}) {
			t.Errorf("%s: the outside directory now holds %v, want only [secret]", step, names)
		}
		st := smLstat(t, secret)
		if st.Mode != unix.S_IFREG|0o644 || st.Uid != 0 || st.Gid != 0 || st.Size != 15 ||
			st.Mtim.Sec != old.Unix() || st.Nlink != 1 {
			t.Errorf("%s: the outside file changed: mode %o %d:%d size %d mtime %d nlink %d",
				step, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Sec, st.Nlink)
		}
		if got := string(smReadFile(t, secret)); got != "outside secret\n" {
			t.Errorf("%s: the outside file's content changed to %q", step, got)
		}
		buf := make([]byte, 100)
		if n, err := unix.Getxattr(secret, "user.secret", buf); err != nil || string(buf[:n]) != "outside xattr" {
			t.Errorf("%s: the outside file's xattr changed: %q, %v", step, buf[:max(n, 0)], err)
		}
		size, _ := unix.Listxattr(secret, nil)
		lbuf := make([]byte, max(size, 1))
		n, _ := unix.Listxattr(secret, lbuf)
		if got := strings.Trim(string(lbuf[:max(n, 0)]), "\x00"); got != "user.secret" {
			t.Errorf("%s: the outside file's xattrs are now %q, want only user.secret", step, got)
		}
		var dst unix.Stat_t
		smMust(t, "lstat outside", unix.Lstat(outside, &dst))
		if dst.Mtim.Sec != old.Unix() {
			t.Errorf("%s: the outside directory was modified (mtime %d)", step, dst.Mtim.Sec)
		}
	}

	t.Run("planted symlinks are served verbatim", func(t *testing.T) {
		links := map[string]string{
			"evil":     outside,
			"evilfile": secret,
			"up":       "../../..",
			"upetc":    "../../../../../../../../etc",
			"dangling": "/nonexistent-gsvfs-target",
		}
		for name, target := range links {
			smMust(t, "plant "+name, os.Symlink(target, filepath.Join(ws, name)))
		}
		entries, err := os.ReadDir(mws)
		smMust(t, "readdir", err)
		types := map[string]os.FileMode{}
		for _, e := range entries {
			types[e.Name()] = e.Type()
		}
		for name, target := range links {
			p := filepath.Join(mws, name)
			fi, err := os.Lstat(p)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("lstat %s through the mount: got %v, %v, want a symlink", name, fi, err)
			}
			if got, err := os.Readlink(p); err != nil || got != target {
				t.Errorf("readlink %s through the mount: got %q, %v, want %q", name, got, err, target)
			}
			if types[name] != os.ModeSymlink {
				t.Errorf("readdir type of %s: got %v, want a symlink", name, types[name])
			}
		}
		// Following an absolute link is the client's kernel resolving it in
		// the client's namespace: it reads the host file, as expected.
		if got, err := os.ReadFile(filepath.Join(mws, "evilfile")); err != nil || string(got) != "outside secret\n" {
			t.Errorf("reading through an absolute link (client-side resolution): got %q, %v", got, err)
		}
		outsideIntact(t, "after planting")
	})

	t.Run("operations on a link itself stay on the link", func(t *testing.T) {
		link := filepath.Join(mws, "evilfile")
		smMust(t, "lchown", os.Lchown(link, 1000, 1000))
		if st := smLstat(t, filepath.Join(ws, "evilfile")); st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("lchown through the mount: the link on the host is owned by %d:%d, want 1000:1000", st.Uid, st.Gid)
		}
		ts := []unix.Timespec{unix.NsecToTimespec(5e17), unix.NsecToTimespec(5e17)}
		smMust(t, "lutimes", unix.UtimesNanoAt(unix.AT_FDCWD, link, ts, unix.AT_SYMLINK_NOFOLLOW))
		// trusted.* may be set on a symlink by root; user.* may not.
		unix.Lsetxattr(link, "trusted.gsvfs", []byte("x"), 0)
		smWantErrno(t, "lsetxattr user.* on a symlink", unix.Lsetxattr(link, "user.gsvfs", []byte("x"), 0), syscall.EPERM)
		unix.Lremovexattr(link, "user.secret")
		unix.Lremovexattr(filepath.Join(mws, "evil"), "user.secret")
		smMust(t, "hard link to the symlink", unix.Linkat(unix.AT_FDCWD, link, unix.AT_FDCWD, filepath.Join(mws, "hard"), 0))
		if st := smLstat(t, filepath.Join(ws, "hard")); st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("a hard link to a planted symlink: got mode %o on the host, want a symlink", st.Mode)
		}
		smMust(t, "rename link", os.Rename(filepath.Join(mws, "hard"), filepath.Join(mws, "hard2")))
		smMust(t, "remove link", os.Remove(filepath.Join(mws, "hard2")))
		smMust(t, "remove evil", os.Remove(filepath.Join(mws, "evil")))
		smMust(t, "remove evilfile", os.Remove(link))
		outsideIntact(t, "after operating on the links")
	})

	t.Run("directory swapped for a symlink after lookup", func(t *testing.T) {
		sub := filepath.Join(mws, "sub")
		smMust(t, "mkdir", os.Mkdir(sub, 0o755))
		smMust(t, "victim", os.WriteFile(filepath.Join(sub, "victim"), []byte("v"), 0o644))
		dfd, err := unix.Open(sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		smMust(t, "open sub", err)
		defer unix.Close(dfd)
		// Another program swaps the directory for a link to the outside.
		smMust(t, "move sub away", os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, "sub.moved")))
		smMust(t, "plant link", os.Symlink(outside, filepath.Join(ws, "sub")))

		if fd, err := unix.Openat(dfd, "new", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
			unix.Write(fd, []byte("new"))
			unix.Close(fd)
		}
		unix.Mkdirat(dfd, "newdir", 0o755)
		unix.Symlinkat("t", dfd, "newlink")
		unix.Unlinkat(dfd, "victim", 0)
		smWantErrno(t, "unlinkat of the outside file's name in the held directory", unix.Unlinkat(dfd, "secret", 0), syscall.ENOENT)
		unix.Renameat(dfd, "new", dfd, "renamed")
		if fd, err := unix.Openat(dfd, "secret", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			buf := make([]byte, 100)
			n, _ := unix.Read(fd, buf)
			unix.Close(fd)
			t.Errorf("openat(held dir, secret) read %q: the daemon resolved the planted link", buf[:max(n, 0)])
		}
		got := smNames(smGetdents(t, dfd, 4096, -1))
		slices.Sort(got)
		if slices.Contains(got, "secret") {
			t.Errorf("listing the held directory shows %v: the outside directory's entries", got)
		}
		outsideIntact(t, "after operations in a directory swapped for a link")
		// What the calls did, they did in the real directory.
		for _, name := range []string{"renamed", "newdir", "newlink"} {
			if _, err := os.Lstat(filepath.Join(ws, "sub.moved", name)); err != nil {
				t.Errorf("%s in the moved directory on the host: %v", name, err)
			}
		}
	})

	t.Run("file swapped for a symlink after lookup", func(t *testing.T) {
		f := filepath.Join(mws, "f")
		smMust(t, "write", os.WriteFile(f, []byte("inside\n"), 0o644))
		pfd, err := unix.Open(f, unix.O_PATH|unix.O_CLOEXEC, 0)
		smMust(t, "open O_PATH", err)
		defer unix.Close(pfd)
		ofd, err := unix.Open(f, unix.O_RDWR|unix.O_CLOEXEC, 0)
		smMust(t, "open", err)
		defer unix.Close(ofd)
		smMust(t, "move f away", os.Rename(filepath.Join(ws, "f"), filepath.Join(ws, "f.moved")))
		smMust(t, "plant link", os.Symlink(secret, filepath.Join(ws, "f")))

		proc := fmt.Sprintf("/proc/self/fd/%d", pfd)
		// The results are logged: any error is fine, any effect outside is not.
		try := func(what string, err error) { t.Logf("%s on the held file: %s", what, smErrName(vfs.Errno(err))) }
		buf := make([]byte, 100)
		fd, err := unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		try("reopen for reading", err)
		if err == nil {
			n, _ := unix.Read(fd, buf)
			unix.Close(fd)
			if strings.Contains(string(buf[:max(n, 0)]), "outside") {
				t.Errorf("reopening the held file read %q: the daemon followed the planted link", buf[:n])
			}
		}
		fd, err = unix.Open(proc, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
		try("reopen with O_TRUNC", err)
		if err == nil {
			unix.Write(fd, []byte("pwned"))
			unix.Close(fd)
		}
		try("truncate", unix.Truncate(proc, 0))
		try("chmod", unix.Chmod(proc, 0o777))
		try("chown", unix.Fchownat(pfd, "", 1000, 1000, unix.AT_EMPTY_PATH))
		try("utimes", unix.UtimesNanoAt(unix.AT_FDCWD, proc, nil, 0))
		try("setxattr", unix.Setxattr(proc, "user.new", []byte("x"), 0))
		try("removexattr", unix.Removexattr(proc, "user.secret"))
		n, err := unix.Getxattr(proc, "user.secret", buf)
		try("getxattr", err)
		if err == nil {
			t.Errorf("getxattr on the held file returned the outside file's %q", buf[:n])
		}
		try("linkat", unix.Linkat(pfd, "", unix.AT_FDCWD, filepath.Join(mws, "f.hard"), unix.AT_EMPTY_PATH))
		// Calls on an open descriptor act on the file it opened.
		unix.Pwrite(ofd, []byte("still inside\n"), 0)
		unix.Ftruncate(ofd, 13)
		unix.Fchmod(ofd, 0o600)
		outsideIntact(t, "after operations on a file swapped for a link")
		if got := string(smReadFile(t, filepath.Join(ws, "f.moved"))); got != "still inside\n" {
			t.Errorf("writes on the open descriptor: the moved file holds %q, want %q", got, "still inside\n")
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(ws, "f.hard"), &st) == nil {
			var sst unix.Stat_t
			unix.Stat(secret, &sst)
			if st.Ino == sst.Ino {
				t.Errorf("linkat of the held file linked the outside file into the state directory")
			}
		}
	})
}
