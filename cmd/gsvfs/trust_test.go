//go:build linux

package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// The trust tests run real daemons over real TLS, as the owners of a
// gateway and a device would, and as someone who got hold of a token.

// gsvfsRun runs the gsvfs binary to its end and returns what it printed.
func gsvfsRun(args ...string) (stdout, stderr string, err error) {
	var out, errOut strings.Builder
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// tokenOf runs `gsvfs device token --root root args...` and returns the
// token it printed.
func tokenOf(t *testing.T, root string, args ...string) string {
	t.Helper()
	out, stderr, err := gsvfsRun(append([]string{"device", "token", "--root", root}, args...)...)
	if err != nil {
		t.Fatalf("gsvfs device token: %v: %s", err, stderr)
	}
	return strings.TrimSpace(out)
}

// tokenFields decodes a token's fields as JSON, as anyone holding the
// token can.
func tokenFields(t *testing.T, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, "gsvfs1."))
	var f map[string]any
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		t.Fatalf("token %q: %v", tok, err)
	}
	return f
}

// editToken is tok with one field changed, as its holder may change it.
func editToken(t *testing.T, tok, field, value string) string {
	t.Helper()
	f := tokenFields(t, tok)
	f[field] = value
	b, _ := json.Marshal(f)
	return "gsvfs1." + base64.RawURLEncoding.EncodeToString(b)
}

// joinAs runs `gsvfs serve --join token` for device id on root, on this
// machine's loopback.
func joinAs(t *testing.T, root, id, token string) *daemon {
	t.Helper()
	d := launch(t, &daemon{Root: root}, "serve", "--root", root, "--device", id, "--join", token)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// waitLog waits until the daemon's log says want.
func waitLog(t *testing.T, d *daemon, want string, limit time.Duration) {
	t.Helper()
	testenv.Eventually(t, limit, fmt.Sprintf("the log of gsvfs on %s says %q", d.Root, want), func() (bool, string) {
		return strings.Contains(d.log.String(), want), d.log.String()
	})
}

// wantFinalExit waits for the daemon to exit, which it must do by itself,
// with the status of a final refusal (78), its last line saying why.
func wantFinalExit(t *testing.T, d *daemon, why string) {
	t.Helper()
	var err error
	select {
	case err = <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("gsvfs serve --join still runs 30s after a final refusal (%s):\n%s", why, d.log)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitRefused {
		t.Errorf("gsvfs serve --join ended with %v, want exit status %d", err, exitRefused)
	}
	lines := strings.Split(strings.TrimSpace(d.log.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "gsvfs: --join") || !strings.Contains(last, why) {
		t.Errorf("last line %q, want one line from --join saying %q; the log:\n%s", last, why, d.log)
	}
	if strings.Contains(d.log.String(), "panic") {
		t.Errorf("the device panicked:\n%s", d.log)
	}
}

// Issue 17's reproduction: a device's join token in someone else's hands
// makes them no gateway of the gateway. Their `gsvfs device add` is
// refused; with the token edited to claim the gateway role, the gateway
// itself refuses the dial for good. The holder's /mnt/victim shows
// nothing of the gateway, nothing runs there, and nothing is pinned.
func TestDeviceTokenIsNotAGateway(t *testing.T) {
	g, gSock := startServe(t, "--listen", "tls:127.0.0.1:0")
	if err := os.WriteFile(filepath.Join(g.Root, "workspaces", "secret"), []byte("the gateway's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := tokenOf(t, g.Root, "--device", "laptop") // the real laptop joins with it
	// Anyone who holds tok:
	r, rSock := startServe(t, "--device", "laptop")
	if _, stderr, err := gsvfsRun("device", "add", "--root", r.Root, "victim", tok); err == nil {
		t.Errorf("gsvfs device add took a device token")
	} else if !strings.Contains(stderr, "device token") || !strings.Contains(stderr, "--for-gateway") {
		t.Errorf("gsvfs device add with a device token says: %s", stderr)
	}
	forged := editToken(t, tok, "r", "gateway")
	if _, stderr, err := gsvfsRun("device", "add", "--root", r.Root, "victim", forged); err != nil {
		t.Fatalf("gsvfs device add of the edited token: %v: %s", err, stderr)
	}
	waitLog(t, r, "refused this gateway for good", 20*time.Second)
	waitLog(t, g, "is a device token", 5*time.Second)

	m := mountServer(t, rSock.String())
	if b, err := os.ReadFile(m.Path("mnt/victim/workspaces/secret")); err == nil {
		t.Errorf("the token's holder read the gateway's 0600 file: %q", b)
	}
	if ents, err := os.ReadDir(m.Path("mnt/victim")); len(ents) > 0 {
		t.Errorf("the holder's /mnt/victim lists %d entries of the gateway (%v)", len(ents), err)
	}
	if err := os.Mkdir(m.Path("mnt/victim/proc/x"), 0o755); err == nil {
		t.Errorf("the token's holder made a session on the gateway")
	}
	_, tree := attach(t, gSock)
	proc, err := vfs.Walk(t.Context(), tree, "proc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proc.Lookup(t.Context(), "x"); err == nil {
		t.Errorf("a session x runs on the gateway")
	}
	if ls := testenv.Run(t, "", binary, "device", "ls", "--root", g.Root); strings.Contains(ls, "laptop") {
		t.Errorf("the gateway pinned the holder:\n%s", ls)
	}
}

// gsvfs device rm forgets a device entirely: /sys/devices/ID, /mnt/ID
// and its line in device ls go, and the device, refused for good, exits.
func TestDeviceRmForgets(t *testing.T) {
	g, gSock := startServe(t, "--listen", "tls:127.0.0.1:0")
	lap := joinAs(t, filepath.Join(t.TempDir(), "lap"), "lap", tokenOf(t, g.Root, "--device", "lap"))
	m := mountServer(t, gSock.String())
	waitOnline(t, m.Mnt, "lap", true, 10*time.Second)
	if ls := testenv.Run(t, "", binary, "device", "ls", "--root", g.Root); !strings.Contains(ls, "lap") || !strings.Contains(ls, "ROLE") {
		t.Errorf("gsvfs device ls before rm:\n%s", ls)
	}
	testenv.Run(t, "", binary, "device", "rm", "--root", g.Root, "lap")
	testenv.Eventually(t, 10*time.Second, "/sys/devices/lap gone after gsvfs device rm", func() (bool, string) {
		_, err := os.Stat(m.Path("sys/devices/lap"))
		return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
	})
	if _, err := os.Stat(m.Path("mnt/lap")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/mnt/lap after rm: %v, want ENOENT", err)
	}
	if ls := testenv.Run(t, "", binary, "device", "ls", "--root", g.Root); strings.Contains(ls, "lap") {
		t.Errorf("gsvfs device ls after rm:\n%s", ls)
	}
	wantFinalExit(t, lap, "revoked")
}

// A refused join is final: the device exits non-zero with one line that
// says why. A gateway that cannot be reached is dialled again.
func TestRefusedJoinExits(t *testing.T) {
	g, _ := startServe(t, "--listen", "tls:127.0.0.1:0")
	base := t.TempDir()
	revoked := tokenOf(t, g.Root)
	toks := strings.Split(strings.TrimSpace(testenv.Run(t, "", binary, "device", "tokens", "--root", g.Root)), "\n")
	testenv.Run(t, "", binary, "device", "revoke", "--root", g.Root, strings.Fields(toks[len(toks)-1])[0])
	joinAs(t, filepath.Join(base, "first"), "twin", tokenOf(t, g.Root))
	waitLog(t, g, "device online", 10*time.Second)
	for _, c := range []struct{ name, token, why string }{
		{"unknown", editToken(t, tokenOf(t, g.Root), "s", strings.Repeat("1", 64)), "unknown token"},
		{"expired", tokenOf(t, g.Root, "--expires", "1ns"), "expired"},
		{"revoked", revoked, "revoked"},
		{"twin", tokenOf(t, g.Root), "another key"}, // another daemon holds twin's place
	} {
		t.Run(c.name, func(t *testing.T) {
			wantFinalExit(t, joinAs(t, filepath.Join(base, c.name), c.name, c.token), c.why)
		})
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	// Tries after the first that reach nothing are logged at debug level.
	farRoot := filepath.Join(base, "far")
	far := launch(t, &daemon{Root: farRoot}, "--log-level", "debug",
		"serve", "--root", farRoot, "--device", "far", "--join", editToken(t, tokenOf(t, g.Root), "a", closed))
	t.Cleanup(func() { far.stop(t) })
	testenv.Eventually(t, 10*time.Second, "a second dial of an unreachable gateway", func() (bool, string) {
		return strings.Count(far.log.String(), "join failed") >= 2, far.log.String()
	})
	select {
	case err := <-far.done:
		t.Errorf("a device gave up on a network error: %v\n%s", err, far.log)
	default:
	}
}

// The token names an address its device can dial: with the gateway
// listening on every address of its own network namespace, the token
// carries that namespace's address (not a host name that resolves to
// loopback elsewhere), and a device outside joins with it. A gateway
// that knows only loopback says so, naming --addr.
func TestTokenAddressRoutable(t *testing.T) {
	h := newNetHost(t, 3)
	root := filepath.Join(t.TempDir(), "gw")
	g := launch(t, &daemon{Root: root, prefix: []string{"ip", "netns", "exec", h.name}},
		"serve", "--root", root, "--listen", "tls:0.0.0.0:0")
	t.Cleanup(func() { g.stop(t) })
	tok := tokenOf(t, root, "--device", "lap")
	if addr, _ := tokenFields(t, tok)["a"].(string); !strings.HasPrefix(addr, h.nsIP+":") {
		t.Errorf("the token names %q, want the gateway's address %s", addr, h.nsIP)
	}
	joinAs(t, filepath.Join(t.TempDir(), "lap"), "lap", tok)
	m := mountServer(t, "unix:"+gsvfsd.Socket(root).Addr)
	waitOnline(t, m.Mnt, "lap", true, 15*time.Second)

	lo, _ := startServe(t, "--listen", "tls:127.0.0.1:0")
	_, stderr, err := gsvfsRun("device", "token", "--root", lo.Root)
	if err != nil || !strings.Contains(stderr, "loopback") || !strings.Contains(stderr, "--addr") {
		t.Errorf("a token of a loopback-only gateway: %v, warning %q; want a warning naming --addr", err, stderr)
	}
}

func TestAdvertised(t *testing.T) {
	lan, v6 := net.ParseIP("10.1.2.3"), net.ParseIP("2001:db8::5")
	for _, c := range []struct {
		bound    string
		ips      []net.IP
		want     string
		loopback bool
	}{
		{"0.0.0.0:7070", []net.IP{lan, v6}, "10.1.2.3:7070", false},
		{"[::]:7070", []net.IP{v6}, "[2001:db8::5]:7070", false},
		{"192.0.2.9:7070", []net.IP{lan}, "192.0.2.9:7070", false},
		{"0.0.0.0:7070", nil, "127.0.0.1:7070", true},
		{"[::]:7070", nil, "[::1]:7070", true},
		{"127.0.0.1:7070", []net.IP{lan}, "127.0.0.1:7070", true},
	} {
		got, loopback := advertised(c.bound, c.ips)
		if got != c.want || loopback != c.loopback {
			t.Errorf("advertised(%s, %v) = %s, %v; want %s, %v", c.bound, c.ips, got, loopback, c.want, c.loopback)
		}
	}
}

// A gateway that starts with a device to dial (gsvfs device add done
// before it runs) dials it with its own key: it neither panics nor
// waits for a listener to set its identity.
func TestDialledDeviceAtStart(t *testing.T) {
	base := t.TempDir()
	deskRoot, gRoot := filepath.Join(base, "desk"), filepath.Join(base, "gw")
	desk := launch(t, &daemon{Root: deskRoot}, "serve", "--root", deskRoot, "--device", "desk", "--listen", "tls:127.0.0.1:0")
	t.Cleanup(func() { desk.stop(t) })
	tok := tokenOf(t, deskRoot, "--for-gateway")
	if _, stderr, err := gsvfsRun("device", "add", "--root", gRoot, "desk", tok); err != nil {
		t.Fatalf("gsvfs device add: %v: %s", err, stderr)
	}
	g := launch(t, &daemon{Root: gRoot}, "serve", "--root", gRoot, "--listen", "tls:127.0.0.1:0")
	t.Cleanup(func() { g.stop(t) })
	m := mountServer(t, "unix:"+gsvfsd.Socket(gRoot).Addr)
	waitOnline(t, m.Mnt, "desk", true, 15*time.Second)
	if ls := testenv.Run(t, "", binary, "device", "ls", "--root", deskRoot); !strings.Contains(ls, "gsv") || !strings.Contains(ls, "gateway") {
		t.Errorf("the device does not list the gateway it serves:\n%s", ls)
	}
	if g.cmd.ProcessState != nil || strings.Contains(g.log.String(), "panic") {
		t.Errorf("the gateway died:\n%s", g.log)
	}
}
