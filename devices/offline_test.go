package devices

import (
	"context"
	"path/filepath"
	"testing"
)

// An offline device's /mnt/ID stats as its root last did online, not as
// a mode-0 directory of 1970, and still does after the gateway restarts.
func TestOfflineRootKeepsLastAttr(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "private")
	gw := startGatewayAt(t, dir, "127.0.0.1:0")
	stop, _ := startDevice(t, gw.token(t, "lap"), "lap")
	online, err := gw.online(t, "lap").Attr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if online.Mode&0o777 == 0 || online.Mtime.Unix() == 0 {
		t.Fatalf("the device's root online: mode %o, mtime %v; the test needs a real one", online.Mode, online.Mtime)
	}
	stop()
	eventually(t, "lap offline", func() bool { return !gw.describeOf(t, "lap").Online })
	check := func(when string) {
		t.Helper()
		a, err := gw.mount("lap").Attr(ctx)
		if err != nil {
			t.Fatalf("stat /mnt/lap %s: %v", when, err)
		}
		if a.Mode != online.Mode || !a.Mtime.Equal(online.Mtime) || !a.Ctime.Equal(online.Ctime) {
			t.Errorf("stat /mnt/lap %s: mode %o, mtime %v, ctime %v; want %o, %v, %v as last seen online",
				when, a.Mode, a.Mtime, a.Ctime, online.Mode, online.Mtime, online.Ctime)
		}
		if !a.Volatile {
			t.Errorf("stat /mnt/lap %s: not volatile; edges would cache an offline device's root", when)
		}
	}
	check("while offline")
	gw.stop()
	gw = startGatewayAt(t, dir, "127.0.0.1:0")
	eventually(t, "lap mounted by the restarted gateway", func() bool { return gw.mount("lap") != nil })
	check("offline, after a gateway restart")
}
