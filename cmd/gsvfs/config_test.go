//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/devices"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
)

// /sys/config: a write applies at once and outlives a restart; a bad
// value is EINVAL, a read-only key EACCES; and the join token, a secret,
// is never readable anywhere in the tree.
func TestSysConfig(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	// A token for a gateway that is not there: the daemon keeps trying.
	token := devices.Token{Addr: "127.0.0.1:1", Gateway: strings.Repeat("0", 64), Secret: "topsecretsecret"}.String()
	serve := func() *daemon {
		d := launch(t, &daemon{Root: root}, "serve", "--root", root, "--device", "cfgtest", "--join", token)
		t.Cleanup(func() { d.stop(t) })
		return d
	}
	srv := serve()
	m := mountServer(t, "unix:"+gsvfsd.Socket(root).Addr)
	cfg := m.Path("sys/config")
	if err := os.WriteFile(filepath.Join(cfg, "session-retention"), []byte("7m\n"), 0o644); err != nil {
		t.Fatalf("writing session-retention: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "max-sessions"), []byte("many\n"), 0o644); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a bad value: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "device"), []byte("other\n"), 0o644); !errors.Is(err, syscall.EACCES) {
		t.Errorf("a read-only key: %v, want EACCES", err)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg, "join")); string(b) != "********\n" {
		t.Errorf("join reads %q, want it masked", b)
	}
	if out, _ := exec.Command("grep", "-r", "topsecret", m.Path("sys"), m.Path("etc"), m.Path("proc")).CombinedOutput(); strings.Contains(string(out), "topsecret") {
		t.Errorf("the token's secret is readable in the tree:\n%s", out)
	}
	if out, _ := exec.Command("grep", "-rl", "topsecret", m.Path("sys"), m.Path("etc")).Output(); len(out) > 0 {
		t.Errorf("files holding the token: %s", out)
	}

	// A restart keeps the value written.
	m.stop(t)
	srv.stop(t)
	serve()
	m = mountServer(t, "unix:"+gsvfsd.Socket(root).Addr)
	if b, _ := os.ReadFile(m.Path("sys/config/session-retention")); string(b) != "7m0s\n" {
		t.Errorf("session-retention after a restart: %q, want 7m0s", b)
	}
}

// A value written without a newline is applied when its writer closes the
// file, and close(2) says when it was refused.
func TestSysConfigValueAtClose(t *testing.T) {
	d := startMount(t)
	f, err := os.OpenFile(filepath.Join(d.Mnt, "sys/config/max-sessions"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("many"); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := f.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close after a bad value without a newline: %v, want EINVAL", err)
	}
	if err := os.WriteFile(filepath.Join(d.Mnt, "sys/config/max-sessions"), []byte("7"), 0o644); err != nil {
		t.Errorf("a good value without a newline: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Mnt, "sys/config/max-sessions")); string(b) != "7\n" {
		t.Errorf("max-sessions reads %q, want 7", b)
	}
}
