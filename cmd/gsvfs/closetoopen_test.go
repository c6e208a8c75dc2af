//go:build linux

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Close-to-open: a descriptor opened through the mount after another
// program changed the file on the disk reads the change, at once,
// whether or not the daemon's watch has reported it yet, on every data
// path where the kernel caches pages (gsvfs-mount(1)).

// TestCloseToOpen runs the rounds of c2oRounds on root's mount (by
// passthrough, and with --no-passthrough, the writeback cache), checking
// the test itself on ext4 first.
func TestCloseToOpen(t *testing.T) {
	t.Run("native", func(t *testing.T) {
		dir := t.TempDir()
		c2oRounds(t, dir, dir, 60)
	})
	for _, mode := range smModes {
		t.Run(mode.name, func(t *testing.T) {
			d := startMount(t, mode.flags...)
			dir := smWorkdir(t, d)
			c2oRounds(t, dir, smHost(t, d, dir), 100)
		})
	}
}

// TestCloseToOpenServer runs the rounds through `gsvfs mount --server`:
// FUSE in front of the 9P client of a daemon on the same machine, whose
// state directory is the disk.
func TestCloseToOpenServer(t *testing.T) {
	d, addr := startServe(t)
	m := mountServer(t, "unix:"+addr.Addr)
	name := smName(t)
	smMust(t, "mkdir", os.Mkdir(m.Path(filepath.Join("workspaces", name)), 0o755))
	c2oRounds(t, m.Path(filepath.Join("workspaces", name)), filepath.Join(d.Root, "workspaces", name), 100)
}

// TestUserMountCloseToOpen runs the rounds on an ordinary user's mount,
// as that user (writeback cache, no passthrough).
func TestUserMountCloseToOpen(t *testing.T) {
	startUserMount(t).runChild(t, "closetoopen")
}

// c2oWays are the ways a program on the disk changes a file: each takes
// the file's host path and the new content.
var c2oWays = []struct {
	name   string
	change func(host string, data []byte) error
}{
	{"rewrite in place", c2oPwrite}, // of the same size (c2oRounds)
	{"truncate and write", func(h string, b []byte) error { return os.WriteFile(h, b, 0o644) }},
	{"write and truncate", c2oPwrite},
	{"rename over", func(h string, b []byte) error {
		if err := os.WriteFile(h+".new", b, 0o644); err != nil {
			return err
		}
		return os.Rename(h+".new", h)
	}},
}

// c2oPwrite writes b at the start of the file h and cuts it to len(b):
// in place when b is as long as the file, written then truncated when
// shorter.
func c2oPwrite(h string, b []byte) error {
	f, err := os.OpenFile(h, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// c2oVersion is version i of the file: its size drawn from r (across
// page boundaries, shrinking and growing), every byte saying which
// version it is.
func c2oVersion(r *rand.Rand, i int) []byte {
	sizes := []int{1, 3, 100, 4095, 4096, 4097, 10000, 70000}
	n := sizes[r.IntN(len(sizes))]
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// c2oRounds runs rounds of: the file set on the disk (host) to one
// version, read through the mount (dir) so that the kernel caches its
// pages and size, changed on the disk to the next version, then opened
// and read through the mount at once. The open must read the new version
// and fstat must give its size; a descriptor opened before the change
// and still held by a reader may keep the kernel's inode, and the new
// open's reads and size must still be the new version's. The seed is
// printed, and GSVFS_C2O_SEED replays it.
func c2oRounds(t *testing.T, dir, host string, rounds int) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GSVFS_C2O_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	p, h := filepath.Join(dir, "f"), filepath.Join(host, "f")
	var bad []string
	for i := 0; i < rounds; i++ {
		way := c2oWays[r.IntN(len(c2oWays))]
		held := r.IntN(3) == 0
		old, next := c2oVersion(r, 2*i), c2oVersion(r, 2*i+1)
		if way.name == "rewrite in place" {
			next = bytes.Repeat(next[:1], len(old))
		}
		smMust(t, "write on the disk", os.WriteFile(h, old, 0o644))
		hold, err := os.Open(p)
		smMust(t, "open through the mount", err)
		if got := c2oRead(t, hold); !bytes.Equal(got, old) {
			bad = append(bad, fmt.Sprintf("round %d: the version before the change: %s", i, smDescribe(got, old)))
		}
		if !held {
			hold.Close()
		}
		smMust(t, way.name, way.change(h, next))
		f, err := os.Open(p)
		smMust(t, "open after the change", err)
		var st unix.Stat_t
		smMust(t, "fstat", unix.Fstat(int(f.Fd()), &st))
		got := c2oRead(t, f)
		f.Close()
		if held {
			hold.Close()
		}
		what := fmt.Sprintf("round %d (%s, %d to %d bytes, a reader holding it: %v)", i, way.name, len(old), len(next), held)
		if !bytes.Equal(got, next) {
			bad = append(bad, what+": read "+smDescribe(got, next))
		} else if st.Size != int64(len(next)) {
			bad = append(bad, fmt.Sprintf("%s: fstat size %d, want %d", what, st.Size, len(next)))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d opens after a change on the disk were wrong (seed %d; GSVFS_C2O_SEED replays):\n%s",
			len(bad), rounds, seed, strings.Join(bad[:min(len(bad), 12)], "\n"))
	}
}

// c2oRead reads f from its start to its end.
func c2oRead(t *testing.T, f *os.File) []byte {
	t.Helper()
	var b bytes.Buffer
	buf := make([]byte, 1<<17)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		b.Write(buf[:n])
		off += int64(n)
		if n == 0 || err != nil {
			return b.Bytes()
		}
	}
}
