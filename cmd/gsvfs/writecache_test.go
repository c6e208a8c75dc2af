//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWritebackGathersSmallWrites: where passthrough is not in use (an
// ordinary user's mount, --no-passthrough) the kernel caches writes, so
// 256 writes of 4 KiB reach the daemon as far fewer WRITE requests (one
// each without the writeback cache), counted by the kernel's FUSE trace.
func TestWritebackGathersSmallWrites(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	var st syscall.Stat_t
	if err := syscall.Stat(d.Mnt, &st); err != nil {
		t.Fatal(err)
	}
	tr := fuseTrace(t)
	p := d.Path("workspaces/f")
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+p, "bs=4k", "count=256").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v\n%s", err, out)
	}
	if got := tr.count(t, st.Dev&0xff, "FUSE_WRITE"); got >= 128 {
		t.Errorf("256 writes of 4 KiB went as %d WRITE requests, want fewer than 128 (the writeback cache gathers them)", got)
	}
}

// TestPosixWritebackCache runs go-fuse's posix suite on a mount whose
// data goes through the daemon with the writeback cache, the path of an
// ordinary user's mount.
func TestPosixWritebackCache(t *testing.T) {
	runPosix(t, startMount(t, "--no-passthrough").Path("workspaces"), notNative)
}

// TestWritebackWriteOnlyAndAppend: under the writeback cache the kernel
// fills partial pages by reading through the writer's handle, also one
// opened write-only, and computes O_APPEND offsets itself; both land on
// the disk as written, and at close.
func TestWritebackWriteOnlyAndAppend(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	p := d.Path("workspaces/f")
	host := filepath.Join(d.Root, "workspaces", "f")
	if err := os.WriteFile(host, []byte("0123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `printf XY | dd of="$1" bs=1 seek=3 conv=notrunc status=none && printf 'a\n' >> "$1" && printf 'b\n' >> "$1" && cat "$2"`
	out, err := exec.Command("sh", "-c", script, "sh", p, host).CombinedOutput()
	if want := "012XY56789\na\nb\n"; err != nil || string(out) != want {
		t.Errorf("write-only and appending writes, read on the disk after close: %v %q, want %q", err, out, want)
	}
}

// kernelTrace is a tracefs instance of this test's own with the FUSE
// request events on.
type kernelTrace struct{ dir string }

func fuseTrace(t *testing.T) kernelTrace {
	const root = "/sys/kernel/tracing"
	if _, err := os.Stat(root + "/instances"); err != nil {
		syscall.Mount("nodev", root, "tracefs", 0, "")
	}
	dir := fmt.Sprintf("%s/instances/gsvfs-test-%d", root, os.Getpid())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("SKIPPED: no tracefs instance for the kernel's FUSE events (root and tracefs needed): %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.WriteFile(dir+"/events/fuse/fuse_request_send/enable", []byte("1"), 0); err != nil {
		t.Skipf("SKIPPED: the kernel has no FUSE trace events: %v", err)
	}
	t.Cleanup(func() { os.WriteFile(dir+"/events/fuse/fuse_request_send/enable", []byte("0"), 0) })
	return kernelTrace{dir}
}

// count is the number of requests named op sent on FUSE connection conn.
func (k kernelTrace) count(t *testing.T, conn uint64, op string) int {
	data, err := os.ReadFile(k.dir + "/trace")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, fmt.Sprintf("connection %d ", conn)) && strings.Contains(line, "("+op+")") {
			n++
		}
	}
	return n
}

// TestWritebackOutsideGrowthWhileOpen: under the writeback cache the
// kernel takes no size from the daemon for a file it holds, yet a file
// that grows on the disk while a reader holds it open through the mount
// shows its new size and content to that reader (tail -f of a session's
// log); one made shorter shows its new size once nobody holds it.
func TestWritebackOutsideGrowthWhileOpen(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	p := d.Path("workspaces/log")
	host := filepath.Join(d.Root, "workspaces", "log")
	if err := os.WriteFile(host, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Holding the file open, read it, let it grow on the disk, wait for
	// the mount to show the size, and read on from where it was.
	script := `exec 3<"$1"; cat <&3; printf 'two\n' >> "$2"
for i in $(seq 100); do [ "$(stat -c %s "$1")" = 8 ] && break; sleep 0.1; done
stat -c %s "$1"; cat <&3`
	out, err := exec.Command("sh", "-c", script, "sh", p, host).CombinedOutput()
	if want := "one\n8\ntwo\n"; err != nil || string(out) != want {
		t.Errorf("growth outside seen by a reader holding the file: %v %q, want %q", err, out, want)
	}
	if err := os.WriteFile(host, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := outside{t: t, d: d}
	o.eventually("a file made shorter outside", "1\n", "cat", p)
}

// TestWritebackHeldSeesWriteThatWasStatedMidway: a reader holding a file
// open under the writeback cache sees the whole of a large write made on
// the disk, though the watch stated the file in the middle of it (a
// byte appended just before makes the watch state it 10 ms on, while
// the large write is under way). That stat has the large write's change
// time and part of its size; taken for the kernel's view, it made the
// report of the write's end look like the mount's own, and the held
// descriptor kept the part's size until the next change. (The model
// checker's actor found it: "fstat says size 0x10000, want 0x1ce86".)
func TestWritebackHeldSeesWriteThatWasStatedMidway(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	host := filepath.Join(d.Root, "workspaces", "big")
	if err := os.WriteFile(host, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The reader holds the file and, for each size it is sent, waits
	// until its descriptor shows that size; a size left behind stays so
	// until the next change: 5 s is a bound, not a measure.
	reader := exec.Command("sh", "-c", `exec 3<"$1"
while read want; do
  n=0
  while [ "$(stat -c %s - <&3)" != "$want" ]; do
    n=$((n+1)); [ $n -gt 100 ] && { echo "the held descriptor says $(stat -c %s - <&3), the disk $want"; exit 1; }
    sleep 0.05
  done
  echo shown
done`, "sh", d.Path("workspaces/big"))
	to, err := reader.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	from, err := reader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { to.Close(); reader.Wait() }()
	answers := bufio.NewScanner(from)
	shows := func(round int, size int64) {
		t.Helper()
		fmt.Fprintln(to, size)
		if !answers.Scan() || answers.Text() != "shown" {
			t.Fatalf("round %d: %s", round, answers.Text())
		}
	}
	big := make([]byte, 256<<20)
	for round := 1; round <= 10; round++ {
		if err := os.Truncate(host, 0); err != nil {
			t.Fatal(err)
		}
		shows(round, 0)
		f, err := os.OpenFile(host, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err1 := f.Write([]byte("x"))
		_, err2 := f.Write(big)
		f.Close()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		shows(round, 1+int64(len(big)))
	}
}

// TestWritebackMappedAndDirect: under the writeback cache a shared
// mapping's writes reach the disk by msync(2), a file truncated while
// mapped reads as truncated, and an O_DIRECT write reaches the disk at
// once and shows through the mount.
func TestWritebackMappedAndDirect(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	p := d.Path("workspaces/m")
	host := filepath.Join(d.Root, "workspaces", "m")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a"), 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	copy(m[4096:], "mapped")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(host); string(got[4096:4102]) != "mapped" {
		t.Errorf("after msync the disk has %q at 4096, want %q", got[4096:4102], "mapped")
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); len(got) != 4096 {
		t.Errorf("truncated while mapped: %d bytes read through the mount, want 4096", len(got))
	}
	if err := syscall.Munmap(m); err != nil {
		t.Fatalf("munmap: %v", err)
	}

	// O_DIRECT: a page-aligned buffer, written past what the cache holds.
	buf, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(buf)
	copy(buf, bytes.Repeat([]byte("d"), 4096))
	df, err := os.OpenFile(p, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := df.WriteAt(buf, 4096); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(host); len(got) != 8192 || got[8191] != 'd' {
		t.Errorf("after an O_DIRECT write the disk has %d bytes, want 8192 ending in d", len(got))
	}
	df.Close()
	if got, _ := os.ReadFile(p); len(got) != 8192 || string(got[:6]) != "aaaaaa" || got[8191] != 'd' {
		t.Errorf("read through the mount after O_DIRECT: %d bytes, want 8192 from a to d", len(got))
	}
}

// TestWritebackOwnWritesAndOutside: the pages of a file the mount wrote
// stay cached (the watch's reports of the mount's own writes drop
// nothing), yet a change made on the disk afterwards shows through the
// mount, also while the writer holds the file open, and the writer's
// next write lands beside it.
func TestWritebackOwnWritesAndOutside(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	p := d.Path("workspaces/f")
	host := filepath.Join(d.Root, "workspaces", "f")
	o := outside{t: t, d: d}
	// Of one length, so that only the content tells the versions apart.
	a, b := "written through the mount\n", "rewritten outside, 26 by.\n"

	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(a); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	o.expect("written", a, "cat", p)
	if err := os.WriteFile(host, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	o.eventually("a rewrite outside while the writer holds the file", b, "cat", p)
	if _, err := f.WriteAt([]byte("c"), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(host); string(got) != b+"c" {
		t.Errorf("the disk after the writer's next write: %q, want %q", got, b+"c")
	}
	o.expect("read back", b+"c", "cat", p)
	if err := os.WriteFile(host, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	o.eventually("a rewrite outside after the mount's own writes", a, "cat", p)
}

// TestWritebackGeneratedSizes: under the writeback cache the kernel keeps
// a regular file's size unless told, and a session's output grows with no
// change reported; stat and tail -f through the mount still see it grow.
func TestWritebackGeneratedSizes(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	s := d.Path("proc/wb")
	if err := os.Mkdir(s, 0o755); err != nil {
		t.Fatal(err)
	}
	o := outside{t: t, d: d}
	o.expect("output before", "0\n", "stat", "-c", "%s", filepath.Join(s, "stdout"))
	if err := os.WriteFile(filepath.Join(s, "ctl"), []byte("exec echo hello\n"), 0); err != nil {
		t.Fatal(err)
	}
	o.eventually("a session's output", "6\n", "stat", "-c", "%s", filepath.Join(s, "stdout"))
}

// TestWritebackKeepsEveryWrite runs the user mount's checks of writes
// beside a change on the disk on root's mount with --no-passthrough,
// the same writeback cache: no write-back is dropped, a held file is on
// the disk within a second, and a change on the disk shows to a writer
// holding the file.
func TestWritebackKeepsEveryWrite(t *testing.T) {
	d := startMount(t, "--no-passthrough")
	for _, c := range []struct {
		name string
		run  func(t *testing.T, dir, host string)
	}{
		{"WritesBesideADiskChange", ucWritesBesideDiskChange},
		{"HeldFileOnDisk", ucHeldFileOnDisk},
		{"DiskChangeWhileHeldForWriting", ucDiskChangeWhileHeld},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := smWorkdir(t, d)
			c.run(t, dir, smHost(t, d, dir))
		})
	}
}
