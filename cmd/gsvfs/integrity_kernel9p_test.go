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
)

// TestIntegrityFsxKernel9P runs the model checker (internal/fsmodel's
// fsx, built static) inside the vm9p guest, on a file of the kernel's 9P
// client mounting `gsvfs serve` (see TestKernel9P) with cache=mmap, so
// that reads and writes go to the server as without a cache and mappings
// work (without a cache v9fs refuses shared mappings of a file open for
// writing). It runs a tenth of GSVFS_FSX_OPS (2,000 by default): the
// emulated guest does some 100 operations a second, and 20,000 took
// 3 min 17 s here. GSVFS_FSX_SEED sets the seed.
//
// Only the plain variant runs here: the guest has no path to the served
// disk but the mount under test, so no second actor changes the file on
// the host between the guest's operations.
func TestIntegrityFsxKernel9P(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; vm9p runs qemu as root and installs it with apt-get on first use")
	}
	runner := k9Runner(t)
	base := t.TempDir()
	files := filepath.Join(base, "guestfsx") // shipped whole to /vm9p/files/guestfsx
	if err := os.Mkdir(files, 0o755); err != nil {
		t.Fatal(err)
	}
	ixBuildFsx(t, files)
	ops, seed := max(ixOps(t)/10, 1), ixSeed(t)
	env := fmt.Sprintf("FSX_SEED=%d\nFSX_OPS=%d\n", seed, ops)
	if err := os.WriteFile(filepath.Join(files, "fsx.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "guestfsx", "guest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	k9TrackInputs(t, filepath.Dir(script), runner)
	srv := k9StartServer(t, "gsvfs", base)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "--socket", srv.Sock, "--msize", "1048576",
		"--timeout", "540", "--opts", srv.Opts+",cache=mmap", script, "--", files)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil || !strings.Contains(string(out), "guestfsx: PASS") {
		t.Fatalf("fsx in the vm9p guest on the kernel's 9P client, after %v: %v\n%s\n--- gsvfs serve log ---\n%s", took, err, out, srv.log)
	}
	t.Logf("fsx in the vm9p guest: %v\n%s", took, out)
}
