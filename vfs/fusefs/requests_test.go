//go:build linux

package fusefs

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// requestCounter is a log handler that counts the FUSE requests of
// go-fuse's request trace (Options.Debug: "rx ID: OPCODE ..."), by
// opcode: what the kernel asked the daemon, exactly.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *requestCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *requestCounter) WithGroup(string) slog.Handler            { return c }

func (c *requestCounter) Handle(_ context.Context, r slog.Record) error {
	f := strings.Fields(r.Message)
	if len(f) < 3 || f[0] != "rx" {
		return nil
	}
	c.mu.Lock()
	c.n[f[2]]++
	c.mu.Unlock()
	return nil
}

// take returns the counts since the last take and starts again.
func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// settled waits until every directory opened has been released (the
// kernel sends RELEASEDIR after close(2) returns, in the background),
// then takes the counts.
func (c *requestCounter) settled() map[string]int {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		done := c.n["OPENDIR"] == c.n["RELEASEDIR"]
		c.mu.Unlock()
		if done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a straggler would show as a difference
	return c.take()
}

// mountCounted mounts a watched disk tree (diskfs, as a device's tree
// reaches a gateway with change notices) and counts the requests the
// kernel sends for it.
func mountCounted(t *testing.T, disk string) (string, *requestCounter) {
	t.Helper()
	vfstest.NeedFUSE(t)
	fs, err := diskfs.New(disk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	c := &requestCounter{n: map[string]int{}}
	dir := t.TempDir()
	m, err := New(dir, fs.Root(), Options{Debug: true, Log: slog.New(c)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			Detach(dir)
		}
	})
	if !m.WatchStats().Watching {
		t.Skip("the disk tree is not watched here (no inotify): listings are not kept")
	}
	return dir, c
}

// A warm `ls -lR` asks the daemon only what the kernel cannot answer
// from its caches: the security label once (answered EOPNOTSUPP, after
// which ls asks no more), and an open and a release of each directory
// (OPENDIR is never cached; the listing and the entries are). Every
// attribute, entry, and "no ACL" of the 4 directories and 40 files comes
// from the kernel: a POSIX ACL the kernel read once (FUSE_POSIX_ACL)
// stays in its ACL cache until it next fetches the file's attributes.
func TestWarmLsLRRequests(t *testing.T) {
	disk := t.TempDir()
	for d := range 3 {
		for f := range 10 {
			p := filepath.Join(disk, "tree", fmt.Sprint("d", d), fmt.Sprint("f", f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for f := range 10 {
		if err := os.WriteFile(filepath.Join(disk, "tree", fmt.Sprint("g", f)), []byte("y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, c := mountCounted(t, disk)
	tree := filepath.Join(dir, "tree")
	// The first run lists (READDIRPLUS), which marks each directory's
	// atime stale in the kernel; the second fetches the attributes of
	// each directory it opens (glibc's opendir stats the directory),
	// which drops the kernel's cached ACLs of it; the third reads those
	// again, its access and default ACLs. From the fourth on a run is
	// warm. The kernel does this after every listing it fetches.
	const dirs = 4
	for i := range 3 {
		if out, err := child(30*time.Second, "ls", "-lR", tree); err != nil {
			t.Fatalf("ls -lR, run %d: %v\n%s", i+1, err, out)
		}
		got := c.settled()
		if i == 0 {
			continue
		}
		// Runs 2 and 3 list nothing and look nothing up; they fetch
		// at most each directory's attributes and its two ACLs.
		for op, n := range got {
			limit := map[string]int{"GETXATTR": 1 + 2*dirs, "GETATTR": dirs, "OPENDIR": dirs, "RELEASEDIR": dirs}[op]
			if n > limit {
				t.Errorf("ls -lR run %d sent %d %s (of %v); want at most %d", i+1, n, op, got, limit)
			}
		}
	}
	for run := range 3 {
		if out, err := child(30*time.Second, "ls", "-lR", tree); err != nil {
			t.Fatalf("ls -lR: %v\n%s", err, out)
		}
		got := c.settled()
		want := map[string]int{"GETXATTR": 1, "OPENDIR": dirs, "RELEASEDIR": dirs}
		if !maps.Equal(got, want) {
			t.Errorf("warm ls -lR %d sent %v; want %v", run+1, got, want)
		}
	}
	// ls -l of one file: the label, nothing else.
	file := filepath.Join(tree, "d1", "f3")
	if out, err := child(30*time.Second, "ls", "-l", file); err != nil {
		t.Fatalf("ls -l: %v\n%s", err, out)
	}
	if got, want := c.settled(), map[string]int{"GETXATTR": 1}; !maps.Equal(got, want) {
		t.Errorf("warm ls -l FILE sent %v; want %v", got, want)
	}
}
