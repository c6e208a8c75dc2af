//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// A device's tree through the gateway, mounted with `gsvfs mount
// --server`: a warm `ls -lR` is answered by the caches (the kernel's and
// the links') at a few round trips to the device, and what other
// programs change on the device's disk still shows through /mnt/ID at
// once, by the change notices the device streams, with and without
// delay on the link.
func TestDeviceChangesShow(t *testing.T) {
	// With delay, a smaller tree: its cold walk costs round trips.
	for _, tc := range []struct {
		delay time.Duration
		dirs  int
	}{{0, 10}, {2 * time.Millisecond, 2}} {
		t.Run(fmt.Sprint("delay=", tc.delay), func(t *testing.T) { testDeviceChangesShow(t, tc.delay, tc.dirs) })
	}
}

func testDeviceChangesShow(t *testing.T, delay time.Duration, dirs int) {
	src := filepath.Join(t.TempDir(), "src")
	makeTree(t, src, dirs, 100, func(int, int) string { return "x" })
	_, m, host := joinedDevice(t, 7, delay, "--bind", src+":/workspaces/src")
	tree := filepath.Join(m.Mnt, "mnt/alpha/workspaces/src")
	stats := filepath.Join(m.Mnt, "mnt/alpha/sys/stats")

	// Warm: the second `ls -lR` of 100 files a directory costs the
	// device at most 50 requests (the stats file's own read included).
	start := time.Now()
	testenv.Run(t, m.Mnt, "ls", "-lR", tree)
	cold := time.Since(start)
	before := linkRequests(t, stats)
	start = time.Now()
	testenv.Run(t, m.Mnt, "ls", "-lR", tree)
	t.Logf("ls -lR: cold %v, warm %v (for the record; the bench measures)", cold.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if n := linkRequests(t, stats) - before; n > 50 {
		t.Errorf("a warm ls -lR of %d files sent %d requests to the device, want at most 50", dirs*100, n)
	} else {
		t.Logf("a warm ls -lR of %d files sent %d requests to the device", dirs*100, n)
	}

	o := outside{t: t, d: m}
	f := filepath.Join(tree, "d0", "f0")
	o.expect("content", "x", "cat", f)
	o.write(filepath.Join(src, "d0", "f0"), "written on the device\n")
	o.eventually("a write on the device", "written on the device\n", "cat", f)
	o.expect("miss", "no\n", "sh", "-c", `test -e "$1" && echo yes || echo no`, "sh", filepath.Join(tree, "new"))
	o.write(filepath.Join(src, "new"), "made on the device\n")
	o.eventually("a file made on the device", "made on the device\n", "cat", filepath.Join(tree, "new"))
	o.expect("listing", "f0\nf1\n", "sh", "-c", `ls "$1" | head -2`, "sh", filepath.Join(tree, "d1"))
	if err := os.Remove(filepath.Join(src, "d1", "f0")); err != nil {
		t.Fatal(err)
	}
	o.eventually("a removal on the device", "f1\nf10\n", "sh", "-c", `ls "$1" | head -2`, "sh", filepath.Join(tree, "d1"))
	o.eventually("a removal on the device", "no\n", "sh", "-c", `test -e "$1" && echo yes || echo no`, "sh", filepath.Join(tree, "d1", "f0"))
	o.listingHeldAcross(filepath.Join(src, "d1"), filepath.Join(tree, "d1"), "f1")
	if delay == 0 {
		cachesDroppedOnReconnect(t, host, m, o, src, tree)
	}
}

// cachesDroppedOnReconnect: what the caches held of a device is dropped
// when its link comes back, since no notice could tell of the changes
// made while it was cut. The kernel would keep a watched file's
// attributes for a minute, far past the wait here.
func cachesDroppedOnReconnect(t *testing.T, host *netHost, m *daemon, o outside, src, tree string) {
	f := filepath.Join(tree, "d2", "f2")
	o.expect("size before the cut", "1\n", "stat", "-c", "%s", f)
	host.blackhole(t)
	waitOnline(t, m.Mnt, "alpha", false, 10*time.Second)
	o.write(filepath.Join(src, "d2", "f2"), "changed while cut off\n")
	host.restore(t)
	took := waitOnline(t, m.Mnt, "alpha", true, 40*time.Second)
	t.Logf("alpha back %v after the link was restored", took)
	o.eventually("a change made while cut off", "22\n", "stat", "-c", "%s", f)
}

// joinedDevice is a gateway (`serve --listen tls:`), device alpha
// joined to it from the network namespace numbered net (through
// bench/delayproxy adding delay each way, if any) with extra flags,
// and a FUSE mount of the gateway's socket, returned once alpha is
// online there.
func joinedDevice(t *testing.T, net int, delay time.Duration, extra ...string) (gw, m *daemon, host *netHost) {
	t.Helper()
	host = newNetHost(t, net)
	gw, sock := startServe(t, "--listen", "tls:0.0.0.0:0")
	port := gatewayPort(t, gw.Root)
	dial := host.hostIP + ":" + port
	if delay > 0 {
		dial = startDelayProxy(t, host.hostIP+":0", "127.0.0.1:"+port, delay)
	}
	startDevice(t, host, filepath.Join(t.TempDir(), "dev"), "alpha", joinToken(t, gw.Root, "alpha", dial), extra...)
	m = mountServer(t, sock.String())
	// The device is listed once it joined (through the proxy, later).
	if !testenv.Poll(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(m.Mnt, "sys/devices/alpha")); return err == nil }) {
		t.Fatalf("alpha did not join within 20s\n%s", gw.log)
	}
	waitOnline(t, m.Mnt, "alpha", true, 20*time.Second)
	return gw, m, host
}

// makeTree makes dirs directories d0, d1 ... under root, each with files
// files f0, f1 ..., file f of directory d holding text(d, f).
func makeTree(t *testing.T, root string, dirs, files int, text func(d, f int) string) {
	t.Helper()
	for d := range dirs {
		for f := range files {
			p := filepath.Join(root, fmt.Sprint("d", d), fmt.Sprint("f", f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text(d, f)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// linkRequests reads the requests a device's links to its gateways
// served, from its /sys/stats.
func linkRequests(t *testing.T, stats string) int64 {
	t.Helper()
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^edge 9p links to gateways connections \d+ requests (\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no link edge in the device's /sys/stats:\n%s", b)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// startDelayProxy runs bench/delayproxy listening on listen and
// forwarding to to with delay added each way; it returns its address.
func startDelayProxy(t *testing.T, listen, to string, delay time.Duration) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "delayproxy")
	if out, err := exec.Command("go", "build", "-o", bin, "../../bench/delayproxy").CombinedOutput(); err != nil {
		t.Fatalf("building delayproxy: %v: %s", err, out)
	}
	cmd := exec.Command(bin, "-listen", listen, "-to", to, "-delay", delay.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("delayproxy said no address: %v", err)
	}
	return strings.TrimSpace(addr)
}
