//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// The reproductions of issue 28's defects, each run on the data paths it
// concerns (and the ones it must hold on too), in a child of this test
// binary that touches the mount (as the mount's user), with the disk's
// side of each change made by the same child on the path's disk.

// Environment of a TestIntegrityChild: the part to run, the directory
// through the path and on its disk, and how long a fresh open may lag a
// change on the disk (see ixPath.openWithin).
const (
	ixPartEnv   = "GSVFS_TEST_INTEGRITY_PART"
	ixMntEnv    = "GSVFS_TEST_INTEGRITY_MNT"
	ixDiskEnv   = "GSVFS_TEST_INTEGRITY_DISK"
	ixWithinEnv = "GSVFS_TEST_INTEGRITY_OPEN_WITHIN"
)

// ixRepros are the reproductions: each names the paths it runs on.
var ixRepros = []struct {
	part  string
	paths []string
	run   func(t *testing.T, c ixCtx)
}{
	// Defect 1: ftruncate up hides the new part on 9P paths.
	{"TruncateUpShows", []string{"passthrough", "no-passthrough", "user", "server", "device"}, ixTruncateUpShows},
	// Defect 2: stale forever after the second change on the disk.
	{"SecondChangeShows", []string{"server", "device"}, ixSecondChangeShows},
	// Defect 3: close-to-open where the kernel caches pages.
	{"CloseToOpenOverwrite", []string{"passthrough", "no-passthrough", "user", "server"}, ixCloseToOpenOverwrite},
	{"CloseToOpenShrink", []string{"passthrough", "no-passthrough", "user", "server"}, ixCloseToOpenShrink},
	{"CloseToOpenRandom", []string{"passthrough", "no-passthrough", "user", "server"}, ixCloseToOpenRandom},
	// Found on the way: a name made on the disk, opened at once.
	{"NewNameShows", []string{"passthrough", "no-passthrough", "user", "server", "device"}, ixNewNameShows},
	// Found by fsx: a file made through the path and held, then
	// written on the disk, and opened again (fsx's first change; on
	// root's mount only fsx's run fails it, after its probe).
	{"HeldNewFileGrowsOnDisk", []string{"passthrough", "no-passthrough", "user", "server"}, ixHeldNewFileGrows},
	// Defect 4: a mapping shows old bytes past EOF after a truncate.
	{"MmapTailZero", []string{"passthrough", "no-passthrough", "user", "server", "device"}, ixMmapTailZero},
	// Defect 5: a user's held file stays off the disk for 30 s.
	{"HeldWritesReachDisk", []string{"user"}, ixHeldWritesReachDisk},
}

// TestIntegrityRepro runs each reproduction on its paths, a path's
// mount set up once for all of them, the paths in parallel.
func TestIntegrityRepro(t *testing.T) {
	for _, path := range ixPaths {
		t.Run(path.name, func(t *testing.T) {
			ixParallel(t, path.name)
			var p *ixPath
			for _, r := range ixRepros {
				if !slices.Contains(r.paths, path.name) {
					continue
				}
				if p == nil {
					setup := path.setup(t, "")
					p = &setup
				}
				t.Run(r.part, func(t *testing.T) { ixChild(t, *p, r.part) })
			}
		})
	}
}

// ixChild runs part in a child of this test binary (as p's user) in a
// fresh directory of p's, and fails with the child's report if it fails.
func ixChild(t *testing.T, p ixPath, part string) {
	t.Helper()
	mnt, disk := filepath.Join(p.mnt, part), filepath.Join(p.disk, part)
	ixMkdir(t, p, part)
	cmd := exec.Command(p.testBin, "-test.run", "^TestIntegrityChild$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), ixPartEnv+"="+part, ixMntEnv+"="+mnt, ixDiskEnv+"="+disk, ixWithinEnv+"="+p.openWithin.String())
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	out, err := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err != nil || !bytes.Contains(out, []byte("\nPASS\n")) {
		t.Fatalf("%s failed in the child: %v (its output is above)", part, err)
	}
}

// ixCtx is what a reproduction works on: a directory through the path
// under test and the same directory on its disk.
type ixCtx struct {
	mnt, disk  string
	openWithin time.Duration
}

// TestIntegrityChild is the side of TestIntegrityRepro that touches the
// mount, in a child; run by itself it skips.
func TestIntegrityChild(t *testing.T) {
	part := os.Getenv(ixPartEnv)
	if part == "" {
		t.Skip("runs only as the child of TestIntegrityRepro")
	}
	within, err := time.ParseDuration(os.Getenv(ixWithinEnv))
	if err != nil {
		t.Fatal(err)
	}
	c := ixCtx{mnt: os.Getenv(ixMntEnv), disk: os.Getenv(ixDiskEnv), openWithin: within}
	// Made on the disk where the parent cannot reach the mount (a
	// user's): it shows through the watch.
	testenv.WaitFor(t, 10*time.Second, "the test's directory shows through the path", exists(c.mnt))
	for _, r := range ixRepros {
		if r.part == part {
			r.run(t, c)
			return
		}
	}
	t.Fatalf("%s=%q names no reproduction", ixPartEnv, part)
}

// ixTruncateUpShows is the four calls: a file written, read up
// to its end, grown by ftruncate, then read past the old end's page,
// which must read zeros up to the new size (as on ext4) through the
// descriptor, a mapping and copy_file_range.
func ixTruncateUpShows(t *testing.T, c ixCtx) {
	fd, err := unix.Open(filepath.Join(c.mnt, "f"), unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const written, grown = 0x22cc7, 0x34c5b
	if n, err := unix.Pwrite(fd, bytes.Repeat([]byte("A"), written), 0); err != nil || n != written {
		t.Fatalf("pwrite: %d, %v", n, err)
	}
	if n, err := unix.Pread(fd, make([]byte, 0x3d14), written-0x3d14); err != nil || n != 0x3d14 {
		t.Fatalf("pread up to EOF: %d, %v", n, err)
	}
	if err := unix.Ftruncate(fd, grown); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != grown {
		t.Errorf("fstat after ftruncate: size %#x, %v; want %#x", st.Size, err, grown)
	}
	buf := make([]byte, 0x100)
	if n, err := unix.Pread(fd, buf, 0x23000); err != nil || n != 0x100 || !ixZero(buf) {
		t.Errorf("pread of 0x100 at 0x23000 after ftruncate to %#x: %d bytes, %v, zeros %v; want 0x100 zeros", grown, n, err, ixZero(buf[:max(n, 0)]))
	}
	ixMappedZero(t, fd, 0x23000, 0x100)
	off, dst := int64(0x23000), int64(0)
	if n, err := unix.CopyFileRange(fd, &off, fd, &dst, 0x100, 0); err != nil || n != 0x100 {
		t.Errorf("copy_file_range of 0x100 from 0x23000: %d, %v; want 0x100", n, err)
	}
}

// ixMappedZero fails unless n bytes at off read as zeros through a
// shared mapping of fd (a SIGBUS there fails the test).
func ixMappedZero(t *testing.T, fd int, off, n int64) {
	t.Helper()
	start := off &^ 4095
	m, err := unix.Mmap(fd, start, int(off+n-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Errorf("mmap at %#x: %v", start, err)
		return
	}
	defer unix.Munmap(m)
	got := make([]byte, n)
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("reading a mapping at %#x..%#x: %v", off, off+n, p)
			}
		}()
		copy(got, m[off-start:])
	}()
	if !ixZero(got) {
		t.Errorf("a mapping at %#x..%#x: % x..., want zeros", off, off+n, got[:min(16, len(got))])
	}
}

// ixZero says whether b is all zeros.
func ixZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// ixSecondChangeShows is the sequence: 100 bytes written on the
// disk and read through the path, then overwritten in place on the disk
// with 1s, 2s, 3s, 1.5 s apart (the disk's times then differ): each
// change must show through the held descriptor within a second, and
// through a fresh open (at once where close-to-open is exact).
func ixSecondChangeShows(t *testing.T, c ixCtx) {
	disk, mnt := filepath.Join(c.disk, "f"), filepath.Join(c.mnt, "f")
	ixWriteDisk(t, disk, bytes.Repeat([]byte("0"), 100), os.O_TRUNC)
	ixNameShows(t, mnt)
	held := ixOpenFresh(t, c, mnt, strings.Repeat("0", 100))
	defer held.Close()
	for _, b := range "123" {
		time.Sleep(1500 * time.Millisecond) // the pace: the repro is about time passing
		want := strings.Repeat(string(b), 100)
		ixWriteDisk(t, disk, []byte(want), 0)
		ixHeldSees(t, held, want)
		ixOpenFresh(t, c, mnt, want).Close()
	}
}

// ixNameShows waits until a name made on the disk shows through the
// path, for the reproductions that are about content, not names (see
// ixNewNameShows).
func ixNameShows(t *testing.T, p string) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "the file made on the disk shows through the path", exists(p))
}

// ixNewNameShows: a file made on the disk opens through the path at
// once after (within c.openWithin where close-to-open is causal), as
// close-to-open promises of content; the directory was listed before.
func ixNewNameShows(t *testing.T, c ixCtx) {
	for i := range 20 {
		if _, err := os.ReadDir(c.mnt); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprint("new", i)
		ixWriteDisk(t, filepath.Join(c.disk, name), []byte(name), os.O_TRUNC)
		var err error
		if !testenv.Poll(c.openWithin, func() bool { _, err = os.ReadFile(filepath.Join(c.mnt, name)); return err == nil }) {
			t.Fatalf("a file made on the disk, opened through the path after: %v", err)
		}
	}
}

// ixHeldNewFileGrows: a file created empty through the path and held
// open, then written on the disk, reads its new content through a fresh
// open (close-to-open) and through the held descriptor within a second,
// and fstat says its new size.
func ixHeldNewFileGrows(t *testing.T, c ixCtx) {
	for i := range 10 {
		mnt := filepath.Join(c.mnt, fmt.Sprint("f", i))
		held, err := os.OpenFile(mnt, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat("n", 0x160d)
		ixWriteDisk(t, filepath.Join(c.disk, fmt.Sprint("f", i)), []byte(want), 0)
		ixOpenFresh(t, c, mnt, want).Close()
		ixHeldSees(t, held, want)
		held.Close()
		if t.Failed() {
			return
		}
	}
}

// ixWriteDisk writes data at the start of the file at p, on the disk,
// with extra open flags (O_TRUNC, or 0 to overwrite in place).
func ixWriteDisk(t *testing.T, p string, data []byte, flags int) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// ixOpenFresh opens p through the path and fails unless it reads want,
// at once or within c.openWithin; it returns the open file.
func ixOpenFresh(t *testing.T, c ixCtx, p, want string) *os.File {
	t.Helper()
	var f *os.File
	var got string
	var size int64
	seen := testenv.Poll(c.openWithin, func() bool {
		if f != nil {
			f.Close()
		}
		var err error
		if f, err = os.Open(p); err != nil {
			t.Fatal(err)
		}
		got = ixReadAll(t, f)
		size = ixSize(t, f)
		return got == want && size == int64(len(want))
	})
	if !seen {
		t.Errorf("a fresh open after the change on the disk reads %s, fstat size %d; want %s", ixShort(got), size, ixShort(want))
	}
	return f
}

// ixSize is fstat's size of f.
func ixSize(t *testing.T, f *os.File) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// ixHeldSees fails unless f reads want within a second.
func ixHeldSees(t *testing.T, f *os.File, want string) {
	t.Helper()
	var got string
	var size int64
	if !testenv.Poll(time.Second, func() bool {
		got, size = ixReadAll(t, f), ixSize(t, f)
		return got == want && size == int64(len(want))
	}) {
		t.Errorf("a held descriptor reads %s, fstat size %d, a second after the change on the disk; want %s", ixShort(got), size, ixShort(want))
	}
}

// ixReadAll preads f from 0 to its end.
func ixReadAll(t *testing.T, f *os.File) string {
	t.Helper()
	var b bytes.Buffer
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		b.Write(buf[:n])
		off += int64(n)
		if n == 0 || err != nil {
			return b.String()
		}
	}
}

// ixShort shows s briefly: its size and its first bytes.
func ixShort(s string) string {
	return fmt.Sprintf("%d bytes %q", len(s), s[:min(len(s), 12)])
}

// ixCloseToOpenOverwrite is the y/z sequence 40 times: 100 y
// written on the disk and read through the path, then overwritten in
// place with z (same size, the same instant); the next open must read z.
func ixCloseToOpenOverwrite(t *testing.T, c ixCtx) {
	disk, mnt := filepath.Join(c.disk, "f"), filepath.Join(c.mnt, "f")
	stale := 0
	for i := range 40 {
		ixWriteDisk(t, disk, bytes.Repeat([]byte("y"), 100), os.O_TRUNC)
		if i == 0 {
			ixNameShows(t, mnt)
		}
		if _, err := os.ReadFile(mnt); err != nil {
			t.Fatal(err)
		}
		ixWriteDisk(t, disk, bytes.Repeat([]byte("z"), 100), 0)
		f, err := os.Open(mnt)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := f.Read(b); err != nil || b[0] != 'z' {
			stale++
		}
		f.Close()
	}
	if stale > 0 {
		t.Errorf("%d of 40 opens after an overwrite on the disk read the old bytes (or failed), want 0", stale)
	}
}

// ixCloseToOpenShrink: a file shrunk on the disk from 10,000 bytes to 3
// reads back its 3 bytes through a fresh open.
func ixCloseToOpenShrink(t *testing.T, c ixCtx) {
	disk, mnt := filepath.Join(c.disk, "f"), filepath.Join(c.mnt, "f")
	ixWriteDisk(t, disk, bytes.Repeat([]byte("x"), 10000), os.O_TRUNC)
	ixNameShows(t, mnt)
	if got, err := os.ReadFile(mnt); err != nil || len(got) != 10000 {
		t.Fatalf("reading 10,000 bytes through the path: %d, %v", len(got), err)
	}
	ixWriteDisk(t, disk, []byte("abc"), os.O_TRUNC)
	if got, err := os.ReadFile(mnt); err != nil || string(got) != "abc" {
		t.Errorf("after the shrink on the disk a fresh open reads %s, %v; want 3 bytes \"abc\"", ixShort(string(got)), err)
	}
}

// ixCloseToOpenRandom changes the file on the disk 300 times, at random
// by truncate+write, overwrite+truncate or rename over, each read
// through the path before and by a fresh open after.
func ixCloseToOpenRandom(t *testing.T, c ixCtx) {
	disk, mnt := filepath.Join(c.disk, "f"), filepath.Join(c.mnt, "f")
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 0))
	ixWriteDisk(t, disk, []byte("start"), os.O_TRUNC)
	ixNameShows(t, mnt)
	wrong := 0
	var first string
	for i := range 300 {
		if _, err := os.ReadFile(mnt); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 1+r.IntN(9000))
		how := []string{"truncate+write", "overwrite+truncate", "rename over"}[r.IntN(3)]
		switch how {
		case "truncate+write":
			ixWriteDisk(t, disk, data, os.O_TRUNC)
		case "overwrite+truncate":
			ixWriteDisk(t, disk, data, 0)
			if err := os.Truncate(disk, int64(len(data))); err != nil {
				t.Fatal(err)
			}
		default:
			tmp := disk + ".new"
			ixWriteDisk(t, tmp, data, os.O_TRUNC)
			if err := os.Rename(tmp, disk); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(mnt)
		if err != nil || !bytes.Equal(got, data) {
			if wrong++; first == "" {
				first = fmt.Sprintf("change %d (%s): a fresh open reads %s, %v; want %s", i, how, ixShort(string(got)), err, ixShort(string(data)))
			}
		}
	}
	if wrong > 0 {
		t.Errorf("seed %#x: %d of 300 reads after a change on the disk were wrong; the first: %s", seed, wrong, first)
	}
}

// ixMmapTailZero: after a truncate to the middle of a page, a mapping
// of that page reads zeros past the new end, whether the old bytes were
// read, mapped or written through the path before, and whether the kernel still has the page, must read it again
// (dropped with fadvise), or the file grew again over it. The fault is a race (one in a few runs of
// a sequence), so each sequence runs ixTailRounds times.
func ixMmapTailZero(t *testing.T, c ixCtx) {
	for i, before := range []string{"read", "mapped", "written"} {
		for j, after := range []string{"kept", "dropped", "regrown"} {
			t.Run(before+"/"+after, func(t *testing.T) {
				rounds := ixTailRounds / 10
				if before == "read" {
					rounds = ixTailRounds
				}
				for k := 0; k < rounds && !t.Failed(); k++ {
					ixMmapTail(t, filepath.Join(c.mnt, fmt.Sprint("f", i, j)), before, after)
				}
			})
		}
	}
}

// ixTailRounds is how often ixMmapTailZero runs a sequence after a read,
// a tenth of it the others: on main the defect shows within a few dozen
// runs of the sequences after a read.
var ixTailRounds = 200

func ixMmapTail(t *testing.T, p, before, after string) {
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { unix.Close(fd) }()
	old := bytes.Repeat([]byte{0xaa}, 3*4096)
	if _, err := unix.Pwrite(fd, old, 0); err != nil {
		t.Fatal(err)
	}
	switch before {
	case "read":
		unix.Pread(fd, make([]byte, len(old)), 0)
	case "mapped":
		if m, err := unix.Mmap(fd, 0, len(old), unix.PROT_READ, unix.MAP_SHARED); err == nil {
			_ = m[len(old)-1]
			unix.Munmap(m)
		}
	case "written":
		unix.Pwrite(fd, []byte{0xbb}, 4096+2000)
	}
	const size = 4096 + 100
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	switch after {
	case "dropped":
		unix.Fsync(fd)
		unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
	case "regrown":
		// Grown again: what was cut off must not come back.
		if err := unix.Ftruncate(fd, int64(len(old))); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(old)-size)
		if n, err := unix.Pread(fd, buf, size); n != len(buf) || err != nil || !ixZero(buf) {
			t.Errorf("pread past the cut after growing again: %d bytes, %v, zeros %v; want %d zeros", n, err, ixZero(buf[:max(n, 0)]), len(buf))
		}
	}
	ixMappedZero(t, fd, size, 4096*2-size)
}

// ixHeldWritesReachDisk is a program that writes a line each second to
// a file it keeps open through the path (a log): each line must reach
// the disk, where the user's /proc sessions read the file, long before
// the kernel's dirty expiry (30 s). The deadline is 5 s a line.
func ixHeldWritesReachDisk(t *testing.T, c ixCtx) {
	f, err := os.OpenFile(filepath.Join(c.mnt, "log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want strings.Builder
	for i := range 3 {
		start := time.Now()
		fmt.Fprintf(&want, "line %d\n", i)
		if _, err := f.WriteString(fmt.Sprintf("line %d\n", i)); err != nil {
			t.Fatal(err)
		}
		var got []byte
		if !testenv.Poll(5*time.Second, func() bool {
			got, _ = os.ReadFile(filepath.Join(c.disk, "log"))
			return string(got) == want.String()
		}) {
			t.Fatalf("line %d written to a held file is not on the disk after 5 s: the disk has %q", i, got)
		}
		t.Logf("line %d on the disk after %v", i, time.Since(start).Round(time.Millisecond))
		time.Sleep(time.Until(start.Add(time.Second))) // the program's pace: a line a second
	}
}
