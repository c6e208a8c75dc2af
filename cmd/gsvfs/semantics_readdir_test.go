//go:build linux

package main

import (
	"bytes"
	smbin "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// Directory listings through the mount: getdents with buffers too small
// for one entry, and directories of ten thousand names.

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
