//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// The gateway's /sys/stats counts the requests it sends each device over
// the link: reading a file the device exports, which no cache can answer
// the first time, moves the count. bench/remotebench.sh reads this line
// for the round trips of its workloads.
func TestDeviceRequestsInStats(t *testing.T) {
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	src := filepath.Join(base, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("on the device\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gw, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	devRoot := filepath.Join(base, "device")
	dev := launch(t, &daemon{Root: devRoot}, "serve", "--root", devRoot, "--device", "lap",
		"--join", joinToken(t, gw.Root, "lap", "127.0.0.1:"+gatewayPort(t, gw.Root)),
		"--bind", src+":/workspaces/src")
	t.Cleanup(func() { dev.stop(t) })
	m := mountServer(t, sock.String())
	waitOnline(t, m.Mnt, "lap", true, 10*time.Second)

	line := regexp.MustCompile(`(?m)^device lap online yes requests sent (\d+)$`)
	sent := func() int64 {
		t.Helper()
		stats := output("cat", m.Path("sys/stats"))
		got := line.FindStringSubmatch(stats)
		if got == nil {
			t.Fatalf("/sys/stats has no line like %s:\n%s", line, stats)
		}
		n, _ := strconv.ParseInt(got[1], 10, 64)
		return n
	}
	before := sent()
	if got := output("cat", m.Path("mnt/lap/workspaces/src/f")); got != "on the device\n" {
		t.Fatalf("the device's file through the gateway: %q", got)
	}
	if now := sent(); now <= before {
		t.Errorf("reading the device's file counted no requests (%d before, %d after)", before, now)
	}
}
