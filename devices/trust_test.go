package devices

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// A device's token in other hands: a second daemon that calls itself
// the device and dials the gateway as a gateway, with the device token
// (its role forged to get past gsvfs device add), is refused for good.
// The gateway serves it nothing, pins nothing, and the attacker's
// /mnt/victim never comes online.
func TestDeviceTokenMakesNoGateway(t *testing.T) {
	victim := startGateway(t)
	served := make(chan struct{}, 1)
	victim.ServeGateways(func(c net.Conn) { served <- struct{}{}; c.Close() })
	tok := victim.token(t, "laptop")

	attacker := startGateway(t)
	attacker.o.Self = "laptop"
	if err := attacker.store.AddDialed("victim", tok); err == nil {
		t.Fatalf("gsvfs device add took a device token")
	}
	forged := tok
	forged.Role = RoleGateway
	if err := attacker.store.AddDialed("victim", forged); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the attacker's dial refused for good", func() bool {
		return strings.Contains(attacker.log.String(), "refused this gateway for good")
	})
	if !strings.Contains(victim.log.String(), "is a device token") {
		t.Errorf("the victim's log does not say why:\n%s", victim.log)
	}
	select {
	case <-served:
		t.Errorf("the victim served its tree to a device token's holder")
	default:
	}
	if ps, _ := victim.store.Peers(); len(ps) != 0 {
		t.Errorf("the victim pinned %+v", ps)
	}
	if attacker.describeOf(t, "victim").Online {
		t.Errorf("the victim is online at the attacker's /mnt/victim")
	}
}

// gsvfs device rm forgets a device entirely: its link is closed, it is
// gone from /sys/devices and /mnt, and the device, refused for good,
// stops dialling.
func TestForgetDropsDevice(t *testing.T) {
	gw := startGateway(t)
	_, _, ended := startDeviceEnded(t, gw.token(t, "lap"), "lap")
	eventually(t, "lap online", func() bool { return gw.describeOf(t, "lap").Online })
	if err := gw.store.Forget("lap"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "lap gone from /sys/devices", func() bool { return !gw.known("lap") })
	if ids := gw.ids(); strings.Join(ids, ",") != "gw" {
		t.Errorf("devices listed after rm: %v", ids)
	}
	if gw.mount("lap") != nil {
		t.Errorf("/mnt/lap still mounted after rm")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, ErrRefused) {
			t.Errorf("the removed device's joining ended with %v, want a final refusal", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("a removed device still dials after 20s")
	}
}

// gsvfs device rm of a gateway that dials this daemon closes its link
// and unpins it: it cannot come back with its key.
func TestForgetDropsGateway(t *testing.T) {
	gw := startGateway(t)
	dev := startGateway(t)
	srv := ninep.NewServer(vfs.NewStaticDir(nil), ninep.ServerOptions{})
	defer srv.Close(context.Background())
	dev.ServeGateways(srv.ServeConn)
	if err := gw.store.AddDialed("desk", dev.tokenFor(t, "gw", RoleGateway)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "desk online", func() bool { return gw.describeOf(t, "desk").Online })
	if ps, _ := dev.store.Peers(); len(ps) != 1 || ps[0].ID != "gw" || ps[0].Role != RoleGateway {
		t.Fatalf("the device's pins: %+v, want gw as a gateway", ps)
	}
	if err := dev.store.Forget("gw"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "desk offline at the gateway", func() bool { return !gw.describeOf(t, "desk").Online })
	eventually(t, "the gateway refused for good", func() bool {
		return strings.Contains(gw.log.String(), "refused this gateway for good")
	})
	if ps, _ := dev.store.Peers(); len(ps) != 0 {
		t.Errorf("pins after rm: %+v", ps)
	}
}

// Join ends with the refusal when the gateway refuses for good, and
// keeps dialling, with backoff, when the gateway cannot be reached.
func TestJoinFinalOrRetried(t *testing.T) {
	gw := startGateway(t)
	revoked := gw.token(t, "")
	toks, _ := gw.store.Tokens()
	gw.store.Revoke(toks[0].ID)
	expired, err := gw.store.Issue(gw.addr, gw.id.Fingerprint, "", RoleDevice, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	forged := gw.token(t, "")
	forged.Secret = strings.Repeat("2", 64)
	wrongRole := gw.tokenFor(t, "", RoleGateway)
	wrongRole.Role = RoleDevice // as if edited to get past the check
	for name, c := range map[string]struct {
		tok  Token
		want string
	}{
		"revoked": {revoked, "revoked"}, "expired": {expired, "expired"},
		"unknown": {forged, "unknown token"}, "gateway-role": {wrongRole, "is a gateway token"},
	} {
		_, log, ended := startDeviceEnded(t, c.tok, "d-"+strings.ReplaceAll(name, " ", "-"))
		select {
		case err := <-ended:
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s token: Join ended with %v, want a refusal saying %q", name, err, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s token: still dialling after 20s:\n%s", name, log)
		}
	}

	// Nobody listens: a network error, retried (logged at debug level
	// after the first).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := gw.token(t, "")
	gone.Addr = l.Addr().String()
	l.Close()
	ident, _ := LoadIdentity(filepath.Join(t.TempDir(), "p"))
	log := &testenv.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		ended <- Join(ctx, JoinOptions{Token: gone, Device: "far", Identity: ident, Serve: func(net.Conn) {},
			Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	eventually(t, "two failed dials", func() bool { return strings.Count(log.String(), "join failed") >= 2 })
	select {
	case err := <-ended:
		t.Fatalf("Join gave up on a network error: %v", err)
	default:
	}
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("Join ended by its context: %v, want nil", err)
	}
}
