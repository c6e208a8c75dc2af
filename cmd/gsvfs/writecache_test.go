//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
