//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// A device's uid and gid numbers mean nothing on its gateway (issue 29,
// items 1 and 2): what the device's user owns shows as the gateway
// owner's, other numbers as nobody, and only the gateway's owner and root
// reach /mnt/ID unless the owner grants a local user or group.

// The local users of the reproduction: bob has the number of the
// device daemon's user (uid 1000 on both machines, the common case),
// alice is anyone else.
const (
	idBob   = smOther
	idAlice = smOther + 1
	nobody  = 65534
)

// sharedGateway is a root gateway whose FUSE mount every local user can
// reach (allow_other, in a directory all may enter), and a device on it
// served by bob: the reproduction of issue 29, item 1, as written.
type sharedGateway struct {
	gw      *daemon // gsvfs serve --root G --listen tls:127.0.0.1:0
	mnt     string  // gsvfs mount (of G's daemon) /gw
	src     string  // /home/bob/src, bound at /workspaces/src of the device
	devRoot string
	dev     *daemon // runuser -u bob -- gsvfs serve --root D --device lap ...
}

func startSharedGateway(t *testing.T) *sharedGateway {
	t.Helper()
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: a root gateway and users of its mount need root")
	}
	gw, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	base, home, bin := ordinaryUser(t)
	s := &sharedGateway{gw: gw, mnt: filepath.Join(base, "gw"), src: filepath.Join(home, "src"), devRoot: filepath.Join(home, "state")}
	if err := os.Mkdir(s.mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	m := launch(t, &daemon{Mnt: s.mnt}, "mount", "--foreground", "--server", sock.String(), s.mnt)
	t.Cleanup(func() { m.stop(t) })

	userDir(t, s.src)
	for name, mode := range map[string]os.FileMode{"world-readable": 0o644, "secret600": 0o600, "others": 0o644} {
		p := filepath.Join(s.src, name)
		if err := os.WriteFile(p, []byte(name+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		owner := idBob
		if name == "others" {
			owner = idAlice // a number of the device's that is not its user's
		}
		if err := os.Chown(p, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	join := filepath.Join(home, "join")
	tok := joinToken(t, gw.Root, "lap", "127.0.0.1:"+gatewayPort(t, gw.Root))
	if err := os.WriteFile(join, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(join, idBob, idBob); err != nil {
		t.Fatal(err)
	}
	dev := launch(t, &daemon{Root: s.devRoot, bin: bin, cred: userCred(), env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}},
		"serve", "--root", s.devRoot, "--device", "lap", "--join-file", join, "--bind", s.src+":/workspaces/src")
	t.Cleanup(func() { dev.stop(t) })
	s.dev = dev
	if !testenv.Poll(15*time.Second, exists(filepath.Join(s.mnt, "sys/devices/lap"))) {
		t.Fatalf("device lap never joined\n%s", dev.log)
	}
	waitOnline(t, s.mnt, "lap", true, 15*time.Second)
	return s
}

// at is the gateway mount's path of p on the device.
func (s *sharedGateway) at(p string) string { return filepath.Join(s.mnt, "mnt/lap", p) }

// asUser runs the shell command script as uid (in its own group and the
// groups given), and returns its output and error.
func asUser(uid uint32, groups []uint32, script string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: groups}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDeviceFilesAreTheOwners is the reproduction of issue 29, item 1:
// alice reads nothing of the device, and bob, whose uid number is the
// device daemon's, reads nothing of its 0600 files and cannot start its
// shell.
func TestDeviceFilesAreTheOwners(t *testing.T) {
	s := startSharedGateway(t)
	if b, err := os.ReadFile(s.at("workspaces/src/secret600")); err != nil || string(b) != "secret600\n" {
		t.Fatalf("the gateway's owner reads the device's 0600 file: %q, %v", b, err)
	}
	for _, c := range []struct {
		who    string
		uid    uint32
		script string
	}{
		{"alice", idAlice, "cat " + s.at("workspaces/src/world-readable")},
		{"alice", idAlice, "ls " + s.at("")},
		{"bob", idBob, "cat " + s.at("workspaces/src/secret600")},
		{"bob", idBob, "cat " + s.at("workspaces/src/world-readable")},
		{"bob", idBob, "cat " + s.at("proc/clone")},
		{"bob", idBob, "echo x > " + s.at("workspaces/src/new")},
	} {
		if out, err := asUser(c.uid, nil, c.script); err == nil {
			t.Errorf("%s: %s: worked (%q), want it refused", c.who, c.script, out)
		}
	}
	if _, err := os.Stat(filepath.Join(s.src, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bob's refused write left %s on the device: %v", filepath.Join(s.src, "new"), err)
	}
	// What the device's user owns is the gateway owner's (root's here);
	// any other number of the device's is nobody.
	for _, c := range []struct {
		path     string
		uid, gid uint32
	}{
		{"", 0, 0},
		{"workspaces/src", 0, 0},
		{"workspaces/src/secret600", 0, 0},
		{"workspaces/src/others", nobody, nobody},
		{"proc/clone", 0, 0},
	} {
		var st syscall.Stat_t
		if err := syscall.Stat(s.at(c.path), &st); err != nil {
			t.Errorf("stat /mnt/lap/%s: %v", c.path, err)
			continue
		}
		if st.Uid != c.uid || st.Gid != c.gid {
			t.Errorf("stat /mnt/lap/%s: owner %d:%d, want %d:%d", c.path, st.Uid, st.Gid, c.uid, c.gid)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(s.at(""), &st); err != nil || st.Mode&0o077 != 0 {
		t.Errorf("stat /mnt/lap: mode %#o, %v; want nothing for group and others", st.Mode&0o7777, err)
	}
	// Offline, the root kept in the store follows the same rule.
	s.dev.stop(t)
	waitOnline(t, s.mnt, "lap", false, 15*time.Second)
	if err := syscall.Stat(s.at(""), &st); err != nil || st.Mode&0o077 != 0 || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("stat /mnt/lap offline: mode %#o owner %d:%d, %v; want the owner's (0:0), nothing for group and others", st.Mode&0o7777, st.Uid, st.Gid, err)
	}
}

// TestDeviceGrant: a user or group the owner grants a device with
// gsvfs device grant reaches /mnt/ID, as a user who is not the files'
// owner; taken back with ungrant, they reach nothing again.
func TestDeviceGrant(t *testing.T) {
	s := startSharedGateway(t)
	world, secret := s.at("workspaces/src/world-readable"), s.at("workspaces/src/secret600")
	grant := func(verb, who string) {
		t.Helper()
		if _, errOut, err := gsvfsRun("device", verb, "--root", s.gw.Root, "lap", who); err != nil {
			t.Fatalf("gsvfs device %s lap %s: %v: %s", verb, who, err, errOut)
		}
	}
	const staff = 4242 // a group alice is in
	for _, c := range []struct {
		step   string
		who    string // granted before the step ("" for none)
		verb   string
		groups []uint32
		want   string // what alice reads of world-readable; "" for refused
	}{
		{step: "nothing granted"},
		{step: "alice granted", verb: "grant", who: fmt.Sprint(idAlice), want: "world-readable\n"},
		{step: "alice ungranted", verb: "ungrant", who: fmt.Sprint(idAlice)},
		{step: "her group granted", verb: "grant", who: fmt.Sprintf(":%d", staff), groups: []uint32{staff}, want: "world-readable\n"},
		{step: "not in the group", groups: nil},
		{step: "her group ungranted", verb: "ungrant", who: fmt.Sprintf(":%d", staff), groups: []uint32{staff}},
	} {
		if c.verb != "" {
			grant(c.verb, c.who)
		}
		// A change to the store applies within a second (gsvfs-device(1)):
		// what the mount attached to the gateway holds of /mnt/ID lasts
		// that long.
		testenv.WaitFor(t, 10*time.Second, c.step+": alice reads world-readable as wanted", func() bool {
			out, err := asUser(idAlice, c.groups, "cat "+world)
			return c.want == "" && err != nil || c.want != "" && out == c.want
		})
		// Granted or not, a 0600 file stays its owner's.
		if out, err := asUser(idAlice, c.groups, "cat "+secret); err == nil {
			t.Errorf("%s: alice reads secret600 (%q), want it refused", c.step, out)
		}
		if out, err := asUser(idBob, nil, "cat "+world); err == nil {
			t.Errorf("%s: bob, never granted, reads world-readable (%q)", c.step, out)
		}
	}
	if out, _, err := gsvfsRun("device", "grant", "--root", s.gw.Root, "nosuch", "1"); err == nil {
		t.Errorf("gsvfs device grant of an unknown device worked: %q", out)
	}
	if out, _, err := gsvfsRun("device", "grant", "--root", s.gw.Root, "lap", "no-such-user-here"); err == nil {
		t.Errorf("gsvfs device grant of an unknown user worked: %q", out)
	}
}

// TestDeviceRefusedCreateLeavesNothing is issue 29, item 2: a create
// through /mnt/ID that fails leaves nothing on the device. The mount
// attached to the gateway (as root) gives each new file to its maker; the
// device cannot give a file to a user of the gateway's, so the create by
// a granted user fails (EPERM), and what it made is removed again.
func TestDeviceRefusedCreateLeavesNothing(t *testing.T) {
	s := startSharedGateway(t)
	if _, errOut, err := gsvfsRun("device", "grant", "--root", s.gw.Root, "lap", fmt.Sprint(idAlice)); err != nil {
		t.Fatalf("gsvfs device grant: %v: %s", err, errOut)
	}
	for _, c := range []struct{ what, script, made string }{
		{"create", "echo hi > " + s.at("workspaces/made"), "made"},
		{"create O_EXCL", "set -C; echo hi > " + s.at("workspaces/excl"), "excl"},
		{"mkdir", "mkdir " + s.at("workspaces/dir"), "dir"},
		{"symlink", "ln -s target " + s.at("workspaces/link"), "link"},
	} {
		testenv.WaitFor(t, 10*time.Second, "alice granted", func() bool {
			_, err := asUser(idAlice, nil, "ls "+s.at("workspaces"))
			return err == nil
		})
		out, err := asUser(idAlice, nil, c.script)
		if err == nil {
			t.Errorf("%s as alice: worked, want EPERM: the device has no user of hers", c.what)
		} else if !strings.Contains(out, "not permitted") {
			t.Errorf("%s as alice: %q, want EPERM", c.what, out)
		}
		if _, err := os.Lstat(filepath.Join(s.devRoot, "workspaces", c.made)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s as alice failed and left %s on the device (%v), want nothing", c.what, c.made, err)
		}
	}
	// The owner's creates work, and what they make is the device user's.
	if out, err := exec.Command("sh", "-c", "echo hi > "+s.at("workspaces/owners")).CombinedOutput(); err != nil {
		t.Fatalf("create as the gateway's owner: %v: %s", err, out)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(s.devRoot, "workspaces/owners"), &st); err != nil || st.Uid != idBob {
		t.Errorf("the owner's new file on the device: uid %d, %v; want the device's user %d", st.Uid, err, idBob)
	}
}
