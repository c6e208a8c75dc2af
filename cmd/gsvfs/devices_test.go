//go:build linux

package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// The devices tests run a gateway in this network namespace and devices
// in namespaces of their own, joined by veth pairs, so links cross a
// real (virtual) network that nft rules inside a device's namespace can
// cut without a FIN.

// netHost is a network namespace joined to this one by a veth pair.
type netHost struct {
	name, hostIP, nsIP string
}

func newNetHost(t *testing.T, n int) *netHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: network namespaces need root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: %s is missing (.ci/run installs iproute2 and nftables): %v", tool, err)
		}
	}
	tag := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	h := &netHost{name: "gsvt" + tag}
	net := fmt.Sprintf("10.%d.%d", 180+n, os.Getpid()%250)
	h.hostIP, h.nsIP = net+".1", net+".2"
	hostIf, nsIf := "gh"+tag, "gd"+tag
	steps := [][]string{
		{"netns", "add", h.name},
		{"link", "add", hostIf, "type", "veth", "peer", "name", nsIf},
		{"link", "set", nsIf, "netns", h.name},
		{"addr", "add", h.hostIP + "/24", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", h.name, "addr", "add", h.nsIP + "/24", "dev", nsIf},
		{"-n", h.name, "link", "set", nsIf, "up"},
		{"-n", h.name, "link", "set", "lo", "up"},
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostIf).Run()
		exec.Command("ip", "netns", "del", h.name).Run()
	})
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			t.Skipf("SKIPPED: cannot make network namespaces here: ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return h
}

// nft runs an nft command inside the namespace.
func (h *netHost) nft(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", h.name, "nft"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("nft %s in %s: %v: %s", strings.Join(args, " "), h.name, err, out)
	}
}

// blackhole drops every packet in and out of the namespace: the link
// goes silent, with no FIN or reset.
func (h *netHost) blackhole(t *testing.T) {
	h.nft(t, "add", "table", "inet", "gsvtest")
	h.nft(t, "add chain inet gsvtest in { type filter hook input priority 0; policy drop; }")
	h.nft(t, "add chain inet gsvtest out { type filter hook output priority 0; policy drop; }")
}

func (h *netHost) restore(t *testing.T) { h.nft(t, "delete", "table", "inet", "gsvtest") }

// startDevice runs `gsvfs serve --join` for device id inside h.
func startDevice(t *testing.T, h *netHost, root, id, token string, extra ...string) *daemon {
	t.Helper()
	d := launch(t, &daemon{Root: root, prefix: []string{"ip", "netns", "exec", h.name}},
		append([]string{"serve", "--root", root, "--device", id, "--join", token}, extra...)...)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// joinToken asks the gateway of root for a token for device id, dialled
// at addr (extra: --for-gateway, for a gateway's token).
func joinToken(t *testing.T, root, id, addr string, extra ...string) string {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"device", "token", "--root", root, "--device", id, "--addr", addr}, extra...)...).Output()
	if err != nil {
		t.Fatalf("gsvfs device token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// gatewayPort is the port the gateway of root listens on for devices.
func gatewayPort(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "private", "listen"))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.Fields(string(b))[0]
	return addr[strings.LastIndex(addr, ":")+1:]
}

type deviceDesc struct {
	DeviceID, Platform, Address, Mount, Description string
	Online                                          bool
	Implements                                      []string
}

func readDesc(t *testing.T, mnt, id string) deviceDesc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, "sys/devices", id))
	if err != nil {
		t.Fatalf("cat /sys/devices/%s: %v", id, err)
	}
	var d deviceDesc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("/sys/devices/%s is no JSON object: %v: %s", id, err, b)
	}
	return d
}

// waitOnline waits until the descriptor says online is want, and says
// how long that took.
func waitOnline(t *testing.T, mnt, id string, want bool, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testenv.WaitFor(t, limit, fmt.Sprintf("/sys/devices/%s says online is %v", id, want), func() bool {
		return readDesc(t, mnt, id).Online == want
	})
	return time.Since(start)
}

// failsWithin runs fn, which must fail, and reports how long it took;
// it fails the test if fn has not returned by limit.
func failsWithin(t *testing.T, what string, limit time.Duration, fn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	switch err := waitWithin(limit, fn); err {
	case errStillWaiting:
		t.Fatalf("%s: still waiting after %v", what, limit)
	case nil:
		t.Errorf("%s: no error from a device whose link is cut", what)
	}
	return time.Since(start)
}

func TestDevicesAcrossNamespaces(t *testing.T) {
	hostA, hostB := newNetHost(t, 1), newNetHost(t, 2)
	gw, sock := startServe(t, "--listen", "tls:0.0.0.0:0")
	port := gatewayPort(t, gw.Root)
	base := t.TempDir()
	rootA, rootB := filepath.Join(base, "a"), filepath.Join(base, "b")
	// alpha exports a host directory of its own, less what it refuses.
	src := filepath.Join(base, "src")
	for p, data := range map[string]string{"go.mod": "module x\n", "secrets/token": "hidden\n", "keep/.ssh/id": "key\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exportA := []string{"--bind", src + ":/workspaces/src", "--refuse", "**/secrets/**"}
	devA := startDevice(t, hostA, rootA, "alpha", joinToken(t, gw.Root, "alpha", hostA.hostIP+":"+port), exportA...)
	// beta listens, and the gateway dials it with a token beta issued.
	devB := launch(t, &daemon{Root: rootB, prefix: []string{"ip", "netns", "exec", hostB.name}},
		"serve", "--root", rootB, "--device", "beta", "--listen", "tls:0.0.0.0:0")
	t.Cleanup(func() { devB.stop(t) })
	betaTok := joinToken(t, rootB, "gsv", hostB.nsIP+":"+gatewayPort(t, rootB), "--for-gateway")
	if out, err := exec.Command(binary, "device", "add", "--root", gw.Root, "beta", betaTok).CombinedOutput(); err != nil {
		t.Fatalf("gsvfs device add: %v: %s", err, out)
	}
	m := mountServer(t, sock.String())
	waitOnline(t, m.Mnt, "alpha", true, 10*time.Second)
	waitOnline(t, m.Mnt, "beta", true, 10*time.Second)

	d := readDesc(t, m.Mnt, "alpha")
	if d.Mount != "/mnt/alpha" || d.Platform != "linux" || !strings.HasPrefix(d.Address, hostA.nsIP+":") {
		t.Errorf("descriptor of alpha: %+v", d)
	}
	if got := strings.Fields(testenv.Run(t, m.Mnt, "ls", "sys/devices")); strings.Join(got, " ") != "alpha beta gsv" {
		t.Errorf("ls /sys/devices: %q", got)
	}
	if d := readDesc(t, m.Mnt, "beta"); !strings.HasPrefix(d.Address, hostB.nsIP+":") {
		t.Errorf("descriptor of the dialled beta: %+v", d)
	}
	if got := testenv.Run(t, m.Mnt, binary, "device", "ls", "--root", gw.Root); !strings.Contains(got, "beta") || !strings.Contains(got, "true") {
		t.Errorf("gsvfs device ls:\n%s", got)
	}

	// What alpha exports: its bound directory, less the refused paths.
	if b, err := os.ReadFile(filepath.Join(m.Mnt, "mnt/alpha/workspaces/src/go.mod")); err != nil || string(b) != "module x\n" {
		t.Errorf("alpha's bound directory through the gateway: %q, %v", b, err)
	}
	for _, p := range []string{"secrets", "secrets/token", "keep/.ssh", "keep/.ssh/id"} {
		if _, err := os.Stat(filepath.Join(m.Mnt, "mnt/alpha/workspaces/src", p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused %s through the gateway: %v, want ENOENT", p, err)
		}
	}
	if got := strings.Fields(testenv.Run(t, m.Mnt, "ls", "-A", "mnt/alpha/workspaces/src")); strings.Join(got, " ") != "go.mod keep" {
		t.Errorf("ls of alpha's bound directory: %q", got)
	}
	if err := os.Mkdir(filepath.Join(m.Mnt, "mnt/alpha/workspaces/src/secrets"), 0o755); !errors.Is(err, syscall.EACCES) {
		t.Errorf("mkdir of a refused name through the gateway: %v, want EACCES", err)
	}

	// The owner describes a device; its own facts are not the owner's.
	descPath := filepath.Join(m.Mnt, "sys/devices/alpha")
	if err := os.WriteFile(descPath, []byte(`{"description":"the alpha box"}`+"\n"), 0o644); err != nil {
		t.Errorf("writing alpha's description: %v", err)
	}
	if got := readDesc(t, m.Mnt, "alpha").Description; got != "the alpha box" {
		t.Errorf("alpha's description: %q", got)
	}
	if err := os.WriteFile(descPath, []byte(`{"platform":"windows"}`), 0o644); !errors.Is(err, syscall.EPERM) {
		t.Errorf("writing alpha's platform: %v, want EPERM", err)
	}
	if err := os.WriteFile(descPath, []byte(`{platform`), 0o644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("writing malformed JSON: %v, want EINVAL", err)
	}

	// Files both ways, and a device-to-device copy.
	a := filepath.Join(m.Mnt, "mnt/alpha/workspaces")
	if err := os.WriteFile(filepath.Join(a, "from-gateway"), []byte("written at the gateway\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(rootA, "workspaces/from-gateway")); err != nil || string(b) != "written at the gateway\n" {
		t.Errorf("the file on alpha's disk: %q, %v", b, err)
	}
	big := make([]byte, 16<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(rootA, "workspaces/big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, m.Mnt, "cp", "mnt/alpha/workspaces/big", "mnt/beta/workspaces/big")
	got, err := os.ReadFile(filepath.Join(rootB, "workspaces/big"))
	if err != nil || sha256.Sum256(got) != sha256.Sum256(big) {
		t.Errorf("copy alpha -> beta through the gateway: %d bytes, %v; checksums differ", len(got), err)
	}

	// A session on alpha runs in alpha's network namespace.
	testenv.Run(t, m.Mnt, "mkdir", "mnt/alpha/proc/where")
	if err := os.WriteFile(filepath.Join(m.Mnt, "mnt/alpha/proc/where/ctl"), []byte("exec ip -o -4 addr show\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := waitCommand(t, filepath.Join(m.Mnt, "mnt/alpha/proc/where"))
	if !strings.Contains(out, hostA.nsIP) {
		t.Errorf("a session on alpha does not run there: %q", out)
	}

	// Over 9P too.
	_, tree := attach(t, sock)
	if got := readTree(t, tree, "mnt/alpha/workspaces/from-gateway"); got != "written at the gateway\n" {
		t.Errorf("over 9P: %q", got)
	}

	// Cut alpha's link without a FIN, mid-read of a session's stream.
	testenv.Run(t, m.Mnt, "mkdir", "mnt/alpha/proc/follow")
	stream := exec.Command("cat", filepath.Join(m.Mnt, "mnt/alpha/proc/follow/stream"))
	if err := stream.Start(); err != nil {
		t.Fatal(err)
	}
	// The cut comes once cat is blocked in its read, in the daemon.
	testenv.Eventually(t, 10*time.Second, "cat blocked in a read of alpha's stream", func() (bool, string) {
		w := testenv.KernelWait(stream.Process.Pid)
		return w == testenv.FUSEWait, "cat asleep in " + w
	})
	hostA.blackhole(t)
	took := failsWithin(t, "cat of alpha's session stream", 4*time.Second, stream.Wait)
	t.Logf("a blocked read on alpha failed %v after the cut (spec: 2s)", took)
	took = failsWithin(t, "cat of a file on alpha", 4*time.Second, func() error {
		_, err := os.ReadFile(filepath.Join(a, "from-gateway"))
		return err
	})
	t.Logf("a new read on alpha failed %v after it began (spec: 2s)", took)
	took = waitOnline(t, m.Mnt, "alpha", false, 6*time.Second)
	t.Logf("alpha offline %v after the last check (spec: 3s)", took)
	start := time.Now()
	if _, err := os.ReadFile(filepath.Join(m.Mnt, "mnt/beta/workspaces/big")); err != nil {
		t.Errorf("beta while alpha is cut: %v", err)
	}
	if _, err := os.ReadDir(filepath.Join(m.Mnt, "workspaces")); err != nil {
		t.Errorf("the gateway's own tree while alpha is cut: %v", err)
	}
	t.Logf("16 MiB from beta and ls of /workspaces while alpha is cut: %v", time.Since(start))
	if _, err := os.ReadDir(filepath.Join(m.Mnt, "mnt")); err != nil {
		t.Errorf("ls /mnt while alpha is offline: %v", err)
	}

	// Back: alpha redials, paths resolve again.
	hostA.restore(t)
	took = waitOnline(t, m.Mnt, "alpha", true, 40*time.Second)
	t.Logf("alpha back online %v after the link was restored", took)
	if b, err := os.ReadFile(filepath.Join(a, "from-gateway")); err != nil || string(b) != "written at the gateway\n" {
		t.Errorf("alpha's file after it came back: %q, %v", b, err)
	}

	// An idle link cut: only the link's own liveness can tell.
	held, err := os.Open(filepath.Join(rootA, "workspaces/big"))
	if err != nil {
		t.Fatal(err)
	}
	held.Close()
	f, first := openHead(t, filepath.Join(m.Mnt, "mnt/alpha/workspaces/big"), 1<<20)
	// Time is what is tested here: a link is idle once it has carried
	// nothing for linkIdle (a second), and then only its probes can find
	// the cut.
	time.Sleep(time.Second)
	hostA.blackhole(t)
	took = waitOnline(t, m.Mnt, "alpha", false, 6*time.Second)
	t.Logf("an idle alpha offline %v after its link was cut (spec: 3s)", took)
	hostA.restore(t)
	waitOnline(t, m.Mnt, "alpha", true, 40*time.Second)
	// The file held open across the outage goes on where it was.
	rest, err := io.ReadAll(f)
	if err != nil {
		t.Errorf("reading on from a file held open across the outage: %v", err)
	} else if !bytes.Equal(append(first, rest...), big) {
		t.Errorf("a file held open across the outage: %d bytes, not the file's", len(first)+len(rest))
	}

	// A device that stops answering without closing its link.
	devA.cmd.Process.Signal(syscall.SIGSTOP)
	failsWithin(t, "cat of a file on a stopped alpha", 4*time.Second, func() error {
		_, err := os.ReadFile(filepath.Join(a, "from-gateway"))
		return err
	})
	waitOnline(t, m.Mnt, "alpha", false, 6*time.Second)
	devA.cmd.Process.Signal(syscall.SIGCONT)
	waitOnline(t, m.Mnt, "alpha", true, 40*time.Second)

	// Killed and restarted.
	devA.cmd.Process.Kill()
	<-devA.done
	waitOnline(t, m.Mnt, "alpha", false, 6*time.Second)
	if _, err := os.ReadFile(filepath.Join(a, "from-gateway")); err == nil {
		t.Errorf("a read on a killed device worked")
	}
	startDevice(t, hostA, rootA, "alpha", joinToken(t, gw.Root, "", hostA.hostIP+":"+port), exportA...)
	waitOnline(t, m.Mnt, "alpha", true, 10*time.Second)
	if b, err := os.ReadFile(filepath.Join(a, "from-gateway")); err != nil || string(b) != "written at the gateway\n" {
		t.Errorf("alpha's file after a restart: %q, %v", b, err)
	}
}

// waitCommand waits for the last command of a session and returns its
// output.
func waitCommand(t *testing.T, session string) string {
	t.Helper()
	if _, err := os.ReadFile(filepath.Join(session, "wait")); err != nil {
		t.Fatalf("wait: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(session, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readTree reads a file of a 9P tree by its path.
func readTree(t *testing.T, root vfs.Node, p string) string {
	t.Helper()
	ctx := t.Context()
	dir, err := vfs.Walk(ctx, root, path.Dir(p))
	if err != nil {
		t.Fatalf("walk %s: %v", p, err)
	}
	b, err := readNode(ctx, dir, path.Base(p))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}
