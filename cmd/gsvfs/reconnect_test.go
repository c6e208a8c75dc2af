//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// longCut is how long TestDeviceBackAfterLongCut cuts a device's link:
// longer than the longest wait between dials to a gateway that answers
// and fails (30 s), so a device that backed off from a gateway it could
// not reach would be seen waiting.
const longCut = 35 * time.Second

// backAfterCut bounds how long a device takes to be online again once a
// cut link is restored: it tries to connect about every second, each try
// bounded by 3 s, so it is back within about 4 s plus a handshake; the
// bound is generous, against a loaded machine.
const backAfterCut = 10 * time.Second

// After a long cut the device is back soon after the network is, not at
// its next try of a long backoff; while it is away, /mnt/ID stats as its
// root last did online.
func TestDeviceBackAfterLongCut(t *testing.T) {
	host := newNetHost(t, 4)
	gw, sock := startServe(t, "--listen", "tls:0.0.0.0:0")
	port := gatewayPort(t, gw.Root)
	root := filepath.Join(t.TempDir(), "dev")
	dev := startDevice(t, host, root, "alpha", joinToken(t, gw.Root, "alpha", host.hostIP+":"+port))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("device's log:\n%s\ngateway's log:\n%s", dev.log, gw.log)
		}
	})
	m := mountServer(t, sock.String())
	waitOnline(t, m.Mnt, "alpha", true, 10*time.Second)
	mnt := filepath.Join(m.Mnt, "mnt/alpha")
	var online syscall.Stat_t
	if err := syscall.Stat(mnt, &online); err != nil {
		t.Fatal(err)
	}

	host.blackhole(t)
	cut := time.Now()
	waitOnline(t, m.Mnt, "alpha", false, 6*time.Second)
	var away syscall.Stat_t
	if err := syscall.Stat(mnt, &away); err != nil {
		t.Fatalf("stat /mnt/alpha while alpha is offline: %v", err)
	}
	if away.Mode != online.Mode || away.Mtim != online.Mtim {
		t.Errorf("stat /mnt/alpha while offline: mode %o, mtime %v; want %o, %v as last seen online",
			away.Mode, time.Unix(away.Mtim.Unix()), online.Mode, time.Unix(online.Mtim.Unix()))
	}
	out, err := exec.Command("ls", "-ld", mnt).CombinedOutput()
	if err != nil || strings.HasPrefix(string(out), "d---------") || strings.Contains(string(out), "1970") {
		t.Errorf("ls -ld /mnt/alpha while offline: %s (%v); want its last mode and date", out, err)
	}

	time.Sleep(longCut - time.Since(cut)) // time is tested: a cut of longCut
	host.restore(t)
	took := waitOnline(t, m.Mnt, "alpha", true, backAfterCut)
	t.Logf("alpha back online %v after a %v cut ended (bound %v)", took, longCut, backAfterCut)
	if _, err := os.ReadDir(filepath.Join(mnt, "workspaces")); err != nil {
		t.Errorf("ls /mnt/alpha/workspaces once alpha is back: %v", err)
	}
}
