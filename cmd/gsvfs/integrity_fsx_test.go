//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The model checker (internal/fsmodel, run by its command fsx in a child
// process) on every data path the tree is served by: random writes,
// reads, truncates, mmap, copy_file_range, fallocate and hole punching,
// each checked against a model of the file; then a second actor changes
// the file on the disk behind the path between operations, and a fresh
// open must read the new content at once and a held descriptor within a
// second.
//
// GSVFS_FSX_OPS sets the operations per path (20,000 by default; the
// actor's variant runs a tenth of them, each fourth a change on the
// disk), GSVFS_FSX_SEED the seed (random by default; a failure prints
// it, the last operations and the command line that replays it). A
// soak: GSVFS_FSX_OPS=1000000 go test -timeout 4h -run TestIntegrityFsx
// ./cmd/gsvfs.

// ixPath is where one data path shows a directory, and where that
// directory is on the disk the path serves.
type ixPath struct {
	mnt, disk string
	cred      *syscall.Credential // whom the checker runs as; nil: this process's
	bin       string              // the checker, where cred may run it
	testBin   string              // this test binary, where cred may run it
	// openWithin is how long a fresh open may show a file as it was
	// before a change on the disk: 0 where close-to-open is exact (one
	// machine), the notice's delay across a device's link.
	openWithin time.Duration
	// share, if set, runs 1/share of the test's operations here: a path
	// a round trip of internet delay away does some 5 a second (each
	// operation and its checks a few round trips).
	share int
}

// ixPaths are the data paths, each set up afresh by its function.
var ixPaths = []struct {
	name  string
	setup func(t *testing.T, fsx string) ixPath
}{
	{"passthrough", func(t *testing.T, fsx string) ixPath { return ixMount(t, fsx) }},
	{"no-passthrough", func(t *testing.T, fsx string) ixPath { return ixMount(t, fsx, "--no-passthrough") }},
	{"user", ixUserMount},
	{"server", ixServerMount},
	{"device", func(t *testing.T, fsx string) ixPath { return ixDeviceMount(t, fsx, 8, 0) }},
	// The device at internet delay: what the gateway answers without a
	// round trip (opens, lookups, listings) is as true there.
	{"device-25ms", func(t *testing.T, fsx string) ixPath { return ixDeviceMount(t, fsx, 9, 25*time.Millisecond) }},
}

// ixMount is a mount of root's, with extra flags.
func ixMount(t *testing.T, fsx string, extra ...string) ixPath {
	d := startMount(t, extra...)
	return ixPath{mnt: d.Path("workspaces"), disk: filepath.Join(d.Root, "workspaces"), bin: fsx, testBin: os.Args[0]}
}

// ixUserMount is an ordinary user's mount; the checker runs as the user.
func ixUserMount(t *testing.T, fsx string) ixPath {
	u := startUserMount(t)
	p := ixPath{mnt: u.Path("workspaces"), disk: filepath.Join(u.Root, "workspaces"), cred: userCred(), testBin: u.testBin}
	if fsx != "" {
		p.bin = filepath.Join(u.base, "fsx")
		copyExecutable(t, fsx, p.bin)
	}
	return p
}

// ixServerMount is `gsvfs serve` mounted by `gsvfs mount --server`.
func ixServerMount(t *testing.T, fsx string) ixPath {
	srv, addr := startServe(t)
	m := mountServer(t, "unix:"+addr.Addr)
	return ixPath{mnt: m.Path("workspaces"), disk: filepath.Join(srv.Root, "workspaces"), bin: fsx, testBin: os.Args[0]}
}

// ixDeviceMount is a device's tree at /mnt/ID of a gateway, the device
// in a network namespace of its own and joined over TLS; the directory
// is one the device binds from its disk.
// A delay adds that much each way on the link (bench/delayproxy).
func ixDeviceMount(t *testing.T, fsx string, net int, delay time.Duration) ixPath {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	share := 0
	if delay > 0 {
		share = 50
	}
	_, m, _ := joinedDevice(t, net, delay, "--bind", src+":/workspaces/src")
	return ixPath{mnt: m.Path("mnt/alpha/workspaces/src"), disk: src, bin: fsx, testBin: os.Args[0], openWithin: time.Second, share: share}
}

// ixMkdir makes directory name in p's: through the path, or where this
// process cannot reach it (a user's mount has no allow_other), on the
// disk for p's user.
func ixMkdir(t *testing.T, p ixPath, name string) {
	t.Helper()
	if p.cred == nil {
		if err := os.Mkdir(filepath.Join(p.mnt, name), 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	disk := filepath.Join(p.disk, name)
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(disk, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		t.Fatal(err)
	}
}

// ixBuildFsx builds the checker's command, static (it also runs in the
// vm9p guest), into dir.
func ixBuildFsx(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "fsx")
	build := exec.Command("go", "build", "-o", bin, "../../internal/fsmodel/fsx")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fsx: %v\n%s", err, out)
	}
	return bin
}

// ixOps is the operations per path: $GSVFS_FSX_OPS, else 20,000.
func ixOps(t *testing.T) int {
	if v := os.Getenv("GSVFS_FSX_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("GSVFS_FSX_OPS=%q: want a positive number", v)
		}
		return n
	}
	return 20000
}

// ixSeed is the run's seed: $GSVFS_FSX_SEED, else a random one.
func ixSeed(t *testing.T) uint64 {
	if v := os.Getenv("GSVFS_FSX_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("GSVFS_FSX_SEED=%q: want a number", v)
		}
		return s
	}
	return rand.Uint64()
}

// ixReplay is the command line that runs test t again with seed and
// ops as GSVFS_FSX_SEED and GSVFS_FSX_OPS.
func ixReplay(t *testing.T, seed uint64, ops int) string {
	run := ""
	for _, part := range strings.Split(t.Name(), "/") {
		run += "/^" + part + "$"
	}
	return fmt.Sprintf("GSVFS_FSX_SEED=%#x GSVFS_FSX_OPS=%d go test -count=1 -run \"%s\" ./cmd/gsvfs", seed, ops, run[1:])
}

// ixParallel runs the paths' subtests in parallel, each mostly waiting on
// round trips between the checker, the kernel and a daemon, but for the
// device's, which runs before them all: its daemons run in network
// namespaces (ip netns exec), whose mount namespaces copy every mount
// there is as they start, privately, so another path's FUSE mount made
// before would stay alive in them after its unmount, and its daemon's
// exit wait on theirs.
func ixParallel(t *testing.T, path string) {
	if !strings.HasPrefix(path, "device") {
		t.Parallel()
	}
}

// TestIntegrityFsx runs the checker on each data path, the paths in
// parallel (ixParallel): plain, then with the second actor on the disk.
func TestIntegrityFsx(t *testing.T) {
	fsx := ixBuildFsx(t, t.TempDir())
	ops, seed := ixOps(t), ixSeed(t)
	for _, path := range ixPaths {
		t.Run(path.name, func(t *testing.T) {
			ixParallel(t, path.name)
			p := path.setup(t, fsx)
			here := ops / max(p.share, 1)
			t.Run("plain", func(t *testing.T) { ixRun(t, p, "fsx-plain", seed, ops, max(here, 1), false) })
			t.Run("actor", func(t *testing.T) { ixRun(t, p, "fsx-actor", seed, ops, max(here/10, 1), true) })
		})
	}
}

// ixRun runs the checker on file name of p's directory, as p's user,
// for ops operations of the test's count (GSVFS_FSX_OPS) of all.
func ixRun(t *testing.T, p ixPath, name string, seed uint64, all, ops int, actor bool) {
	t.Helper()
	out, took, err := ixRunOnce(t, p, name, seed, all, ops, actor)
	if err != nil {
		t.Fatalf("fsx after %v: %v\n%s", took, err, out)
	}
	t.Logf("%v: %s", took, strings.TrimSpace(string(out)))
}

// ixRunOnce runs the checker on file name of p and returns what it said.
func ixRunOnce(t *testing.T, p ixPath, name string, seed uint64, all, ops int, actor bool) ([]byte, time.Duration, error) {
	args := []string{"-file", filepath.Join(p.mnt, name), "-seed", fmt.Sprint(seed), "-ops", fmt.Sprint(ops),
		"-replay", ixReplay(t, seed, all)}
	if actor {
		args = append(args, "-disk", filepath.Join(p.disk, name), "-open-within", p.openWithin.String())
	}
	// A bound for a hung mount, not a measure: 20,000 operations take
	// 10-20 s here, a soak's million 7-50 minutes a path (a device's
	// over TLS the longest; 3 ms an operation on a machine loaded 20
	// deep), so 10 ms an operation (go test's -timeout must allow it too).
	ctx, cancel := context.WithTimeout(context.Background(), max(10*time.Minute, time.Duration(ops)*10*time.Millisecond))
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, args...)
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		out = append([]byte("fsx "+strings.Join(args, " ")+"\n"), out...)
	}
	return out, time.Since(start).Round(time.Millisecond), err
}
