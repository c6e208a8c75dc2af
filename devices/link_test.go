package devices

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// testGateway is a gateway listening on loopback with its own identity
// and store, recording what it mounts.
type testGateway struct {
	*Gateway
	store   *Store
	id      *Identity
	addr    string
	log     *testenv.LogBuffer
	mu      sync.Mutex
	mounted map[string]vfs.Node
	stop    func()
}

func startGateway(t *testing.T) *testGateway {
	t.Helper()
	return startGatewayAt(t, filepath.Join(t.TempDir(), "private"), "127.0.0.1:0")
}

// startGatewayAt starts a gateway keeping its state in dir and listening
// on addr; its cleanup stops it as a killed daemon would stop.
func startGatewayAt(t *testing.T, dir, addr string) *testGateway {
	t.Helper()
	id, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{store: store, id: id, log: &testenv.LogBuffer{}, mounted: map[string]vfs.Node{}}
	tg.Gateway, err = NewGateway(store, GatewayOptions{
		Self: "gw", Identity: id, Log: slog.New(slog.NewTextHandler(tg.log, nil)),
		Mount: func(id string, n vfs.Node) {
			tg.mu.Lock()
			tg.mounted[id] = n
			tg.mu.Unlock()
		},
		Unmount: func(id string, _ vfs.Node) {
			tg.mu.Lock()
			delete(tg.mounted, id)
			tg.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tg.stop = func() { cancel(); l.Close(); tg.Close() }
	t.Cleanup(tg.stop)
	go tg.Serve(l)
	go tg.Watch(ctx)
	tg.addr = l.Addr().String()
	return tg
}

func (tg *testGateway) mount(id string) vfs.Node {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.mounted[id]
}

// online waits until id is online and its tree spliced in (which comes
// just after the link), and returns the tree.
func (tg *testGateway) online(t *testing.T, id string) vfs.Node {
	t.Helper()
	eventually(t, id+" online and mounted", func() bool { return tg.describeOf(t, id).Online && tg.mount(id) != nil })
	return tg.mount(id)
}

func (tg *testGateway) token(t *testing.T, device string) Token {
	t.Helper()
	return tg.tokenFor(t, device, RoleDevice)
}

func (tg *testGateway) tokenFor(t *testing.T, device string, role Role) Token {
	t.Helper()
	tok, err := tg.store.Issue(tg.addr, tg.id.Fingerprint, device, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// describeOf is the gateway's descriptor of id, decoded.
func (tg *testGateway) describeOf(t *testing.T, id string) descriptor {
	t.Helper()
	var d descriptor
	if err := json.Unmarshal(tg.describe(id), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// startDevice joins a device serving a one-file tree; its context ends
// the joining.
func startDevice(t *testing.T, tok Token, id string) (cancel func(), log *testenv.LogBuffer) {
	t.Helper()
	cancel, log, _ = startDeviceEnded(t, tok, id)
	return cancel, log
}

// startDeviceEnded is startDevice that also yields what Join returned,
// once it returns.
func startDeviceEnded(t *testing.T, tok Token, id string) (cancel func(), log *testenv.LogBuffer, ended <-chan error) {
	t.Helper()
	tree := vfs.NewStaticDir(map[string]vfs.Node{"hello": vfs.NewTextFile([]byte("hi from " + id + "\n"))})
	return startDeviceServing(t, tok, id, tree)
}

// startDeviceServing joins a device serving tree; ended yields what Join
// returned, once it returns.
func startDeviceServing(t *testing.T, tok Token, id string, tree vfs.Node) (cancel func(), log *testenv.LogBuffer, ended <-chan error) {
	t.Helper()
	ident, err := LoadIdentity(filepath.Join(t.TempDir(), "private"))
	if err != nil {
		t.Fatal(err)
	}
	srv := ninep.NewServer(tree, ninep.ServerOptions{})
	ctx, stop := context.WithCancel(context.Background())
	log = &testenv.LogBuffer{}
	done, result := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(done)
		result <- Join(ctx, JoinOptions{Token: tok, Device: id, Identity: ident, Serve: srv.ServeConn,
			Facts: Facts{Platform: "plan9", Arch: "mips", Implements: []string{"fs.*"}},
			Log:   slog.New(slog.NewTextHandler(log, nil))})
	}()
	cancel = func() {
		stop()
		srv.Close(context.Background())
		<-done
	}
	t.Cleanup(cancel)
	return cancel, log, result
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 5*time.Second, what, cond)
}

func readAll(t *testing.T, root vfs.Node, name string) (string, error) {
	t.Helper()
	ctx := context.Background()
	n, err := root.Lookup(ctx, name)
	if err != nil {
		return "", err
	}
	h, err := n.Open(ctx, os.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer h.Close()
	buf := make([]byte, 256)
	k, err := h.ReadAt(ctx, buf, 0)
	if err == io.EOF {
		err = nil
	}
	return string(buf[:k]), err
}

func TestJoinServeAndLeave(t *testing.T) {
	gw := startGateway(t)
	stop, _ := startDevice(t, gw.token(t, "lap"), "lap")
	root := gw.online(t, "lap")
	d := gw.describeOf(t, "lap")
	if d.Platform != "plan9" || d.Arch != "mips" || d.Mount != "/mnt/lap" || len(d.Implements) != 1 {
		t.Errorf("descriptor: %+v", d)
	}
	if root == nil {
		t.Fatalf("lap not mounted; mounted: %v", gw.mounted)
	}
	if got, err := readAll(t, root, "hello"); err != nil || got != "hi from lap\n" {
		t.Errorf("reading the device's file through the gateway: %q, %v", got, err)
	}
	if ids := gw.ids(); strings.Join(ids, ",") != "gw,lap" {
		t.Errorf("ids: %v", ids)
	}

	stop()
	eventually(t, "lap offline", func() bool { return !gw.describeOf(t, "lap").Online })
	start := time.Now()
	_, err := readAll(t, root, "hello")
	if vfs.Errno(err) != syscall.EHOSTDOWN || time.Since(start) > time.Second {
		t.Errorf("reading from an offline device: %v after %v, want EHOSTDOWN at once", err, time.Since(start))
	}
	if gw.mount("lap") == nil {
		t.Errorf("an offline device must stay listed at /mnt/lap")
	}
}

func TestNewerLinkWins(t *testing.T) {
	gw := startGateway(t)
	tok := gw.token(t, "")
	// Two daemons with one identity: a copy of a device's state started
	// twice, or a restart the old link has not noticed yet.
	ident, err := LoadIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	join := func(log *testenv.LogBuffer) (stopped chan error, cancel func()) {
		srv := ninep.NewServer(vfs.NewStaticDir(nil), ninep.ServerOptions{})
		t.Cleanup(func() { srv.Close(context.Background()) })
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		stopped = make(chan error, 1)
		go func() {
			stopped <- Join(ctx, JoinOptions{Token: tok, Device: "lap", Identity: ident, Serve: srv.ServeConn,
				Log: slog.New(slog.NewTextHandler(log, nil))})
		}()
		return stopped, cancel
	}
	oldLog, newLog := &testenv.LogBuffer{}, &testenv.LogBuffer{}
	oldDone, _ := join(oldLog)
	eventually(t, "the first daemon online", func() bool { return gw.describeOf(t, "lap").Online })
	newDone, _ := join(newLog)
	select {
	case err := <-oldDone:
		if !isFinal(err) || !strings.Contains(err.Error(), "newer one wins") {
			t.Errorf("the older daemon ended with %v, want told that the newer one wins", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the older daemon still joins:\n%s", oldLog)
	}
	if !strings.Contains(gw.log.String(), "closing its older link") {
		t.Errorf("gateway log does not say why the older link went:\n%s", gw.log)
	}
	eventually(t, "the newer daemon online", func() bool { return gw.describeOf(t, "lap").Online })
	select {
	case <-newDone:
		t.Errorf("the newer daemon stopped joining:\n%s", newLog)
	case <-time.After(500 * time.Millisecond):
	}
}

func TestRevokeClosesLink(t *testing.T) {
	gw := startGateway(t)
	_, devLog, ended := startDeviceEnded(t, gw.token(t, "lap"), "lap")
	eventually(t, "lap online", func() bool { return gw.describeOf(t, "lap").Online })
	toks, _ := gw.store.Tokens()
	if err := gw.store.Revoke(toks[0].ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, "lap offline after revocation", func() bool { return !gw.describeOf(t, "lap").Online })
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("link closed %v after revocation, want within 2s", d)
	}
	// Refused for good: the device stops dialling, and says why.
	select {
	case err := <-ended:
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "revoked") {
			t.Errorf("the device's joining ended with %v, want a final refusal saying revoked", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("a revoked device still dials after 20s:\n%s", devLog)
	}
	if gw.describeOf(t, "lap").Online {
		t.Errorf("a revoked device came back")
	}
}

// Peers that are not devices with a live token get nothing of the tree:
// no certificate, a plain 9P client, a look-alike gateway, another
// device's id.
func TestRefusedPeers(t *testing.T) {
	gw := startGateway(t)

	// A plain 9P client speaks to the TLS port: the handshake fails and
	// nothing of 9P is answered.
	nc, err := net.Dial("tcp", gw.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte{19, 0, 0, 0, 100, 0xff, 0xff, 0, 32, 0, 0, 6, 0, '9', 'P', '2', '0', '0', '0'})
	nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	reply, _ := io.ReadAll(nc)
	nc.Close()
	if bytes.Contains(reply, []byte("9P2000")) {
		t.Errorf("a plain 9P client got a 9P answer: %q", reply)
	}

	// A TLS client without a certificate.
	c, err := tls.Dial("tcp", gw.addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err == nil {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil {
		t.Errorf("a client without a certificate was let in")
	}

	// A device whose token names another gateway key dials a look-alike.
	tok := gw.token(t, "")
	forged := tok
	forged.Gateway = keyB
	ident, _ := LoadIdentity(t.TempDir())
	if _, err := dialOnce(context.Background(), JoinOptions{Token: forged, Device: "lap", Identity: ident,
		Serve: func(net.Conn) { t.Errorf("served a look-alike gateway") }}); err == nil || !strings.Contains(err.Error(), "not the one the token names") {
		t.Errorf("dialing a gateway with another key: %v", err)
	}

	// Forged token, and a pinned id with another key.
	bad := tok
	bad.Secret = strings.Repeat("1", 64)
	if _, err := dialOnce(context.Background(), JoinOptions{Token: bad, Device: "lap", Identity: ident, Serve: func(net.Conn) {}}); err == nil {
		t.Errorf("a forged token joined")
	}
	if _, err := dialOnce(context.Background(), JoinOptions{Token: tok, Device: "lap", Identity: ident, Serve: func(nc net.Conn) { nc.Close() }}); err != nil {
		t.Fatalf("a real token: %v", err)
	}
	other, _ := LoadIdentity(t.TempDir())
	tok2 := gw.token(t, "")
	if _, err := dialOnce(context.Background(), JoinOptions{Token: tok2, Device: "lap", Identity: other, Serve: func(net.Conn) {}}); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("another key for lap: %v", err)
	}
	if _, err := dialOnce(context.Background(), JoinOptions{Token: tok2, Device: "gw", Identity: other, Serve: func(net.Conn) {}}); err == nil {
		t.Errorf("a device took the gateway's own id")
	}
	for _, want := range []string{"TLS handshake failed", "unknown token", "another key", "own id"} {
		if !strings.Contains(gw.log.String(), want) {
			t.Errorf("gateway log lacks %q:\n%s", want, gw.log)
		}
	}
}

// A gateway dials a device that listens, with a token the device issued:
// the device serves it, and revoking that token on the device cuts it.
func TestGatewayDialsDevice(t *testing.T) {
	gw := startGateway(t)
	dev := startGateway(t) // a daemon listening for links, as a device
	srv := ninep.NewServer(vfs.NewStaticDir(map[string]vfs.Node{"hello": vfs.NewTextFile([]byte("served\n"))}), ninep.ServerOptions{})
	defer srv.Close(context.Background())
	dev.ServeGateways(srv.ServeConn)
	dev.o.Self, dev.o.Facts = "desk", Facts{Platform: "linux", Arch: "riscv64"}

	tok := dev.tokenFor(t, "gw", RoleGateway)
	if err := gw.store.AddDialed("desk", tok); err != nil {
		t.Fatal(err)
	}
	root := gw.online(t, "desk")
	if d := gw.describeOf(t, "desk"); d.Arch != "riscv64" {
		t.Errorf("the dialled device's facts: %+v", d)
	}
	if root == nil {
		t.Fatal("desk not mounted")
	}
	if got, err := readAll(t, root, "hello"); err != nil || got != "served\n" {
		t.Errorf("reading from the dialled device: %q, %v", got, err)
	}
	// The device knows the gateway as a gateway, not as a device of its own.
	if ids := dev.ids(); strings.Join(ids, ",") != "desk" {
		t.Errorf("the device's own device list: %v", ids)
	}
	toks, _ := dev.store.Tokens()
	if err := dev.store.Revoke(toks[0].ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "desk offline after the device revoked the gateway", func() bool { return !gw.describeOf(t, "desk").Online })
	eventually(t, "the gateway refused on redial, for good", func() bool { return strings.Contains(gw.log.String(), "refused this gateway for good") })
}

// The edges forget /mnt/ID as they forget any node; the device's tree
// must stay reachable after that, on the same link.
func TestForgottenRootStaysUsable(t *testing.T) {
	gw := startGateway(t)
	startDevice(t, gw.token(t, "lap"), "lap")
	root := gw.online(t, "lap")
	if _, err := readAll(t, root, "hello"); err != nil {
		t.Fatal(err)
	}
	root.(vfs.Forgetter).Forget()
	if got, err := readAll(t, root, "hello"); err != nil || got != "hi from lap\n" {
		t.Errorf("after the root was forgotten: %q, %v", got, err)
	}
}

// A gateway that goes away and comes back (same state, same address)
// finds its devices again: they redial, and join by their pinned keys.
func TestGatewayRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "private")
	gw := startGatewayAt(t, dir, "127.0.0.1:0")
	addr := gw.addr
	startDevice(t, gw.token(t, "lap"), "lap")
	eventually(t, "lap online", func() bool { return gw.describeOf(t, "lap").Online })
	gw.stop()

	gw2 := startGatewayAt(t, dir, addr)
	root := gw2.online(t, "lap")
	if root == nil {
		t.Fatal("lap not mounted after the restart")
	}
	if got, err := readAll(t, root, "hello"); err != nil || got != "hi from lap\n" {
		t.Errorf("reading from lap after the gateway restarted: %q, %v", got, err)
	}
}

// The requests the gateway sends a device are counted per device, kept
// when its link ends, so /sys/stats can say what a workload under /mnt/ID cost in
// round trips.
func TestLinkCountsRequests(t *testing.T) {
	const reads = 5
	files := map[string]vfs.Node{}
	for i := range reads {
		files["f"+strconv.Itoa(i)] = vfs.NewTextFile([]byte("data"))
	}
	gw := startGateway(t)
	stop, _, _ := startDeviceServing(t, gw.token(t, "lap"), "lap", vfs.NewStaticDir(files))
	gw.online(t, "lap")
	sent := func() LinkCount {
		for _, c := range gw.LinkRequests() {
			if c.Device == "lap" {
				return c
			}
		}
		t.Fatalf("no count for lap in %+v", gw.LinkRequests())
		return LinkCount{}
	}
	before := sent()
	if !before.Online || before.Requests < 2 { // Tversion and Tattach at least
		t.Fatalf("after joining: %+v, want online with the version and attach counted", before)
	}
	for name := range files {
		if _, err := readAll(t, gw.mount("lap"), name); err != nil {
			t.Fatal(err)
		}
	}
	// No cache can answer the first read of a file: each one asks the
	// device at least once.
	during := sent()
	if during.Requests-before.Requests < reads {
		t.Errorf("%d first reads counted %d requests, want at least %d", reads, during.Requests-before.Requests, reads)
	}
	if during.ByType["read"] < reads || during.ByType["version"] != 1 {
		t.Errorf("by type %v, want a version and at least %d reads", during.ByType, reads)
	}
	stop()
	eventually(t, "lap offline", func() bool { return !gw.describeOf(t, "lap").Online })
	if after := sent(); after.Online || after.Requests < during.Requests {
		t.Errorf("after the link ended: %+v, want offline and still at least %d", after, during.Requests)
	}
}
