//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/fsmodel"
)

// TestIntegrityFsxKernel9P runs the model checker (internal/fsmodel's
// fsx, built static) inside the vm9p guest, on a file of the kernel's 9P
// client mounting `gsvfs serve` (see TestKernel9P) with cache=mmap, so
// that reads and writes go to the server as without a cache and mappings
// work (without a cache v9fs refuses shared mappings of a file open for
// writing). It runs GSVFS_FSX_OPS operations, 2,000 by default: the
// emulated guest does some 100 operations a second (20,000 took 3 min
// 17 s here). GSVFS_FSX_SEED sets the seed; GSVFS_KERNEL9P_SERVER=diod
// runs it against the reference server instead (see TestKernel9P).
//
// Then the second actor's variant (a tenth of those operations again):
// the guest has no path to the served disk but the mount under test, so
// fsx asks for each change in a directory of the mount and this test
// answers on the host (fsmodel.Answer), changing the file on the served
// disk while the guest holds it. That run leaves mappings out: the
// guest's kernel keeps a mapping's pages across a change on the server
// under cache=mmap, which diod's mount shows too (guest.sh).
func TestIntegrityFsxKernel9P(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; vm9p runs qemu as root and installs it with apt-get on first use")
	}
	runner := k9Runner(t)
	// Mostly the emulated guest's time, on a CPU of its own: in
	// parallel with the other parallel tests.
	t.Parallel()
	base := t.TempDir()
	files := filepath.Join(base, "guestfsx") // shipped whole to /vm9p/files/guestfsx
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	ixBuildFsx(t, files)
	ops, seed := 2000, ixSeed(t)
	if os.Getenv("GSVFS_FSX_OPS") != "" {
		ops = ixOps(t)
	}
	env := fmt.Sprintf("FSX_SEED=%d\nFSX_OPS=%d\nFSX_ACTOR_OPS=%d\nFSX_REPLAY='%s'\n",
		seed, ops, max(ops/10, 1), ixReplay(t, seed, ops))
	if err := os.WriteFile(filepath.Join(files, "fsx.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "guestfsx", "guest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	k9TrackInputs(t, filepath.Dir(script), runner)
	kind := os.Getenv("GSVFS_KERNEL9P_SERVER") // diod, to compare with the reference
	if kind == "" {
		kind = "gsvfs"
	}
	srv := k9StartServer(t, kind, base)
	dir := filepath.Join(srv.Host, "workspaces", "fsx")
	if err := os.MkdirAll(filepath.Join(dir, "ask"), 0o755); err != nil {
		t.Fatal(err)
	}
	stop, answered := make(chan struct{}), make(chan error, 1)
	go func() {
		answered <- fsmodel.Answer(filepath.Join(dir, "ask"), fsmodel.PathDisk(filepath.Join(dir, "g")), stop)
	}()
	defer func() {
		close(stop)
		if err := <-answered; err != nil {
			t.Errorf("answering the guest's changes: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "--socket", srv.Sock, "--msize", "1048576",
		"--timeout", "540", "--opts", srv.Opts+",cache=mmap", script, "--", files)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil || !strings.Contains(string(out), "guestfsx: PASS") {
		t.Fatalf("fsx in the vm9p guest on the kernel's 9P client, after %v: %v\n%s\n--- %s log ---\n%s", took, err, out, srv.Name, srv.log)
	}
	t.Logf("fsx in the vm9p guest against %s: %v\n%s", srv.Name, took, out)
}
