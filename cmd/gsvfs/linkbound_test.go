//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/fusefs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// A device whose tree holds an endless directory cannot wedge the
// gateway: `ls` of it through the gateway's mount fails with EFBIG
// instead of running for ever, the gateway's memory and threads stay
// bounded, the rest of the tree answers meanwhile, the gateway logs it
// with the device's id, and the device's other files keep working.
//
// The endless directory is a FUSE mount this test serves, bound into the
// device's export; only the device daemon reads it.
func TestEndlessDeviceDirectory(t *testing.T) {
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	endless := filepath.Join(base, "endless")
	if err := os.MkdirAll(endless, 0o755); err != nil {
		t.Fatal(err)
	}
	fm, err := fusefs.New(endless, vfs.NewStaticDir(map[string]vfs.Node{"dir": vfstest.NewEndlessDir()}), fusefs.Options{})
	if err != nil {
		t.Fatalf("mounting the endless directory: %v", err)
	}
	t.Cleanup(func() { fm.Unmount() })

	gw, m := gatewayWithDevice(t, "bad", endless, "/workspaces/endless")
	pid := gw.cmd.Process.Pid
	rss, threads := statusField(t, pid, "VmRSS"), statusField(t, pid, "Threads")

	stop, others := make(chan struct{}), make(chan error, 1)
	go func() { others <- readUntilStopped(filepath.Join(m.Mnt, "sys/devices/gsv"), stop) }()
	var out []byte
	took := failsWithin(t, "ls of the endless directory", 2*time.Minute, func() error {
		var err error
		ls := exec.Command("sh", "-c", `ls -f "$1" >/dev/null`, "ls", m.Path("mnt/bad/workspaces/endless/dir"))
		out, err = ls.CombinedOutput()
		return err
	})
	close(stop)
	if !strings.Contains(string(out), "File too large") {
		t.Errorf("ls of the endless directory said %q, want EFBIG's message", out)
	}
	if err := <-others; err != nil {
		t.Errorf("the rest of the tree while the device was listed: %v", err)
	}
	peak, threadsAfter := statusField(t, pid, "VmHWM"), statusField(t, pid, "Threads")
	t.Logf("ls failed after %v; gateway: VmRSS %d kB before, VmHWM %d kB after; threads %d before, %d after",
		took.Round(time.Millisecond), rss, peak, threads, threadsAfter)
	if grew := peak - rss; grew > 256<<10 {
		t.Errorf("the gateway's resident memory grew by %d MB, want under 256", grew>>10)
	}
	if threadsAfter > threads+16 {
		t.Errorf("the gateway's threads went from %d to %d", threads, threadsAfter)
	}
	if n := strings.Count(gw.log.String(), "device listing cut short"); n != 1 || !strings.Contains(gw.log.String(), "device=bad") {
		t.Errorf("the bound should be logged once with the device's id; log:\n%s", gw.log)
	}
	if !readDesc(t, m.Mnt, "bad").Online {
		t.Errorf("the device went offline for a listing too long")
	}
	if _, err := os.ReadDir(m.Path("mnt/bad/workspaces")); err != nil {
		t.Errorf("the device's other directories after the listing: %v", err)
	}
}

// readUntilStopped reads path until stop is closed, failing on the first
// error.
func readUntilStopped(path string, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		if _, err := os.ReadFile(path); err != nil {
			return err
		}
	}
}

// The gateway's /sys/stats counts the requests it sends each device over
// the link: reading a file the device exports, which no cache can answer
// the first time, moves the count. bench/remotebench.sh reads this line
// for the round trips of its workloads.
func TestDeviceRequestsInStats(t *testing.T) {
	vfstest.NeedFUSE(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("on the device\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, m := gatewayWithDevice(t, "lap", src, "/workspaces/src")

	line := regexp.MustCompile(`(?m)^device lap online yes requests sent (\d+) notices \d+$`)
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

// gatewayWithDevice starts a gateway and a device ID that joins it and
// binds the host directory dir at path of its tree, and mounts the
// gateway's tree once the device is online.
func gatewayWithDevice(t *testing.T, id, dir, path string) (gw, m *daemon) {
	t.Helper()
	gw, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	devRoot := filepath.Join(t.TempDir(), "device")
	dev := launch(t, &daemon{Root: devRoot}, "serve", "--root", devRoot, "--device", id,
		"--join", joinToken(t, gw.Root, id, "127.0.0.1:"+gatewayPort(t, gw.Root)),
		"--bind", dir+":"+path)
	t.Cleanup(func() { dev.stop(t) })
	m = mountServer(t, sock.String())
	waitOnline(t, m.Mnt, id, true, 10*time.Second)
	return gw, m
}
