//go:build linux

package main

// What lives in the runtime directory rather than the state directory
// (issue 29, items 7 and 9).

import (
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
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// TestServerMountLogsInRuntimeDir mounts a server's tree twice in the
// background with --server: such a mount has no state directory here,
// so each logs in its own runtime directory, never in the default state
// directory that every such mount on the machine would share.
func TestServerMountLogsInRuntimeDir(t *testing.T) {
	vfstest.NeedFUSE(t)
	_, sock := startServe(t)
	base := t.TempDir()
	logs := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		mnt := filepath.Join(base, name)
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		r := lcGsvfs(t, "", "mount", "--server", "unix:"+sock.Addr, mnt)
		m := lcServingLine.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			t.Fatalf("gsvfs mount --server: exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		log := m[4]
		if base := gsvfsd.RuntimeBase() + "/"; !strings.HasPrefix(log, base) {
			t.Errorf("mount --server at %s logs to %s, want a file under %s", mnt, log, base)
		}
		if logs[log] {
			t.Errorf("mount --server at %s logs to %s, which another mount uses too", mnt, log)
		}
		logs[log] = true
		if data, err := os.ReadFile(log); err != nil || !strings.Contains(string(data), "msg=serving") {
			t.Errorf("log %s of mount --server: %v, %q, want it to say serving", log, err, data)
		}
		if err := lcGsvfs(t, "", "umount", mnt); err.code != 0 {
			t.Errorf("gsvfs umount %s: %s", mnt, err.stderr)
		}
	}
}

// startSSHFS serves a fresh directory over sshfs from an sshd of the
// test's own on loopback (its own keys and configuration) and returns the
// sshfs mount's path, unmounted when the test ends.
func startSSHFS(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"sshfs", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/run installs it): %v", tool, err)
		}
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	dir := t.TempDir()
	exported, mnt := filepath.Join(dir, "exported"), filepath.Join(dir, "sshfs")
	for _, d := range []string{exported, mnt, "/run/sshd"} { // /run/sshd: its privilege separation directory
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"host_key", "client_key"} {
		testenv.Run(t, dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key))
	}
	port := freePort(t)
	config := fmt.Sprintf(`ListenAddress 127.0.0.1
Port %s
HostKey %s/host_key
PidFile none
AuthorizedKeysFile %s/client_key.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
`, port, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	server := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var log testenv.LogBuffer
	server.Stderr = &log
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	testenv.WaitFor(t, 10*time.Second, "sshd listening on 127.0.0.1:"+port, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	out, err := exec.Command("sshfs", "-p", port, "-o", "IdentityFile="+filepath.Join(dir, "client_key"),
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
		"root@127.0.0.1:"+exported, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("sshfs: %v: %s\nsshd: %s", err, out, log.String())
	}
	t.Cleanup(func() { exec.Command("fusermount3", "-uz", mnt).Run() })
	return mnt
}

// freePort is a TCP port of loopback that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// TestStateDirOnSSHFS keeps the state directory on sshfs, which makes no
// sockets: a mount serves it (files, a session), a second mount attaches
// to it, and a gateway serving it has a device join.
func TestStateDirOnSSHFS(t *testing.T) {
	vfstest.NeedFUSE(t)
	root := filepath.Join(startSSHFS(t), "state")
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := lcBackground(t, "", root, a)
	second, _ := lcBackground(t, "", root, b)
	if err := os.WriteFile(filepath.Join(a, "workspaces", "f"), []byte("on sshfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(b, "workspaces", "f"), filepath.Join(root, "workspaces", "f")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != "on sshfs" {
			t.Errorf("%s: got %q, %v, want \"on sshfs\"", p, got, err)
		}
	}
	sshfsSession(t, b)
	lcUmount(t, b, second)
	lcUmount(t, a, first)

	gw := launch(t, &daemon{Root: root}, "serve", "--root", root, "--listen", "tls:127.0.0.1:0")
	t.Cleanup(func() { gw.stop(t) })
	first, _ = lcBackground(t, "", root, a)
	token := joinToken(t, root, "lap", "127.0.0.1:"+gatewayPort(t, root))
	devRoot := filepath.Join(t.TempDir(), "dev")
	if err := os.MkdirAll(filepath.Join(devRoot, "workspaces"), 0o755); err != nil {
		t.Fatal(err)
	}
	dev := launch(t, &daemon{Root: devRoot}, "serve", "--root", devRoot, "--device", "lap", "--join", token)
	t.Cleanup(func() { dev.stop(t) })
	if err := os.WriteFile(filepath.Join(devRoot, "workspaces", "g"), []byte("on the device"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "the device lap in /sys/devices", func() bool {
		_, err := os.Stat(filepath.Join(a, "sys", "devices", "lap"))
		return err == nil
	})
	waitOnline(t, a, "lap", true, 20*time.Second)
	if got, err := os.ReadFile(filepath.Join(a, "mnt", "lap", "workspaces", "g")); err != nil || string(got) != "on the device" {
		t.Errorf("the device's file through a mount of the sshfs state directory: got %q, %v, want \"on the device\"", got, err)
	}
	lcUmount(t, a, first)
}

// sshfsSession runs a command in a session of the mount at mnt.
func sshfsSession(t *testing.T, mnt string) {
	t.Helper()
	s := filepath.Join(mnt, "proc", "sshfs")
	if err := os.Mkdir(s, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", s, err)
	}
	if err := os.WriteFile(filepath.Join(s, "ctl"), []byte("exec echo session on sshfs\n"), 0o644); err != nil {
		t.Fatalf("exec in a session: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(s, "wait")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(s, "stdout")); err != nil || strings.TrimSpace(string(got)) != "session on sshfs" {
		t.Errorf("a session's output: got %q, %v, want \"session on sshfs\"", got, err)
	}
}
