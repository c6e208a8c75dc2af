//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// `ls -l` through `gsvfs mount --server` shows each file as the disk has
// it (size, mode, mtime). Listing and stating every file (find -printf,
// the stat half of `ls -l`) costs the daemon about as many requests for
// 300 files as for 10: the listing brings the attributes (Treaddirplus),
// the kernel's READDIRPLUS is answered from them, and no entry costs a
// walk or a getattr of its own. (`ls -l` also asks each file for two
// extended attributes, which the cache of misses answers, not this.)
func TestLsLOverServerMount(t *testing.T) {
	d, addr := startServe(t)
	m := mountServer(t, addr.String())
	var costs []int
	for _, n := range []int{10, 300} {
		name := fmt.Sprintf("ls%d", n)
		host := filepath.Join(d.Root, "workspaces", name)
		makeFiles(t, host, n)
		before := edgeRequests(t, m)
		out := testenv.Run(t, "", "find", m.Path("workspaces/"+name), "-mindepth", "1", "-printf", "%M 1 0 0 %s %T@ %f\n")
		costs = append(costs, edgeRequests(t, m)-before)
		checkLsL(t, out, host, n)
		checkLsL(t, testenv.Run(t, "", "ls", "-ln", "--time-style=+%s", m.Path("workspaces/"+name)), host, n)
	}
	t.Logf("listing and stating 10 files: %d requests; 300 files: %d", costs[0], costs[1])
	// Reading /sys/stats itself and the kernel's readdir rhythm cost a
	// few requests; one per entry would be hundreds.
	if costs[1] > costs[0]+20 {
		t.Errorf("listing and stating 300 files cost %d requests, 10 files %d: want about the same", costs[1], costs[0])
	}
}

// makeFiles makes n files in dir, each of its own size, mode and mtime.
func makeFiles(t *testing.T, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	modes := []os.FileMode{0o644, 0o600, 0o755, 0o640}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, make([]byte, i*13), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, modes[i%len(modes)]); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1_500_000_000+int64(i)*86_400, 0)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLsL checks `ls -ln --time-style=+%s` output (or find's, in its
// form) against the disk.
func checkLsL(t *testing.T, out, host string, n int) {
	t.Helper()
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 7 { // "total N" and the empty last line
			continue
		}
		seen++
		st, err := os.Lstat(filepath.Join(host, f[6]))
		if err != nil {
			t.Errorf("ls -l shows %q, which the disk does not have: %v", f[6], err)
			continue
		}
		want := []string{st.Mode().String(), strconv.FormatInt(st.Size(), 10), strconv.FormatInt(st.ModTime().Unix(), 10)}
		mtime, _, _ := strings.Cut(f[5], ".") // find's has a fraction
		if got := []string{f[0], f[4], mtime}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("ls -l of %s: mode, size, mtime %q; the disk has %q", f[6], got, want)
		}
	}
	if seen != n {
		t.Errorf("ls -l showed %d files, want %d:\n%s", seen, n, out)
	}
}

// edgeRequests reads, through the mount, how many requests the daemon's
// 9P edge has served.
func edgeRequests(t *testing.T, m *daemon) int {
	t.Helper()
	stats := testenv.Run(t, "", "cat", m.Path("sys/stats"))
	for _, line := range strings.Split(stats, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[0] == "edge" && f[1] == "9p" && f[5] == "requests" {
			n, err := strconv.Atoi(f[6])
			if err != nil {
				t.Fatalf("/sys/stats: %q", line)
			}
			return n
		}
	}
	t.Fatalf("/sys/stats has no 9p edge line:\n%s", stats)
	return 0
}
