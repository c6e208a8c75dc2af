//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// submounts lists the mounts below mnt, as paths inside it, with their
// mount options.
func submounts(t *testing.T, mnt string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && strings.HasPrefix(f[4], mnt+"/") {
			out[strings.TrimPrefix(f[4], mnt)] = f[5]
		}
	}
	return out
}

func needRootForBinds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: --kernel-binds needs root (bind mounts); run the tests as root to cover it")
	}
}

// waitBinds waits until the mounts below d's mount point are want.
func waitBinds(t *testing.T, d *daemon, want ...string) {
	t.Helper()
	var got []string
	ok := waitFor(15*time.Second, func() bool {
		got = got[:0]
		for p := range submounts(t, d.Mnt) {
			got = append(got, p)
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	if !ok {
		t.Fatalf("kernel binds: got %q, want %q\n%s", got, want, d.log)
	}
}

// --kernel-binds: the state directory's disk trees are served by the
// kernel (another device number, the host's files), with the FUSE
// mount's nosuid,nodev; the rest of the tree still through FUSE; binds
// follow the namespace and come back when the kernel drops one.
func TestKernelBinds(t *testing.T) {
	needRootForBinds(t)
	d := startMount(t, "--kernel-binds")
	waitBinds(t, d, "/home", "/workspaces")
	for p, opts := range submounts(t, d.Mnt) {
		if !strings.Contains(opts, "nosuid") || !strings.Contains(opts, "nodev") {
			t.Errorf("bind %s has options %s, want nosuid and nodev as the FUSE mount", p, opts)
		}
	}

	if err := os.WriteFile(d.Path("workspaces/f"), []byte("through the bind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d.Root, "workspaces/f")); err != nil || string(b) != "through the bind\n" {
		t.Errorf("state directory has %q, %v; want what was written through the mount", b, err)
	}
	dev := func(p string) string { return strings.TrimSpace(output("stat", "-c", "%d", p)) }
	if dev(d.Path("workspaces")) == dev(d.Mnt) {
		t.Errorf("workspaces has the FUSE mount's device %s: not served by the kernel", dev(d.Mnt))
	}
	if dev(d.Path("workspaces")) != dev(d.Root) {
		t.Errorf("workspaces has device %s, the state directory %s", dev(d.Path("workspaces")), dev(d.Root))
	}
	if got := output("cat", d.Path("sys/config/kernel-binds")); got != "true\n" {
		t.Errorf("/sys/config/kernel-binds = %q, want true", got)
	}
	if got := output("cat", d.Path("dev/null")); got != "" {
		t.Errorf("/dev/null through FUSE: %q", got)
	}

	// A mount below /workspaces: the kernel would hide it, so /workspaces
	// goes back to FUSE and the new host directory gets a bind of its own.
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "d.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Path("etc/namespace"), []byte("bind "+host+" /workspaces/data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitBinds(t, d, "/home", "/workspaces/data")
	if got := output("cat", d.Path("workspaces/data/d.txt")); got != "data\n" {
		t.Errorf("the bound directory reads %q", got)
	}
	if got := output("cat", d.Path("workspaces/f")); got != "through the bind\n" {
		t.Errorf("/workspaces through FUSE again reads %q", got)
	}
	if err := os.WriteFile(d.Path("etc/namespace"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitBinds(t, d, "/home", "/workspaces")

	// The kernel drops a bind whose mount point the tree invalidates;
	// here it is taken off by hand, and laid again.
	if err := syscall.Unmount(d.Path("home"), 0); err != nil {
		t.Fatal(err)
	}
	waitBinds(t, d, "/home", "/workspaces")

	d.stop(t)
	if left := submounts(t, d.Mnt); len(left) != 0 {
		t.Errorf("after the daemon stopped, still mounted below it: %v", left)
	}
}

// gsvfs umount takes the binds off first (the mount is busy until they
// go), and clears them as well when the daemon was killed.
func TestKernelBindsUmount(t *testing.T) {
	needRootForBinds(t)
	for _, killed := range []bool{false, true} {
		d := startMount(t, "--kernel-binds")
		waitBinds(t, d, "/home", "/workspaces")
		if killed {
			d.cmd.Process.Kill()
			<-d.done
		}
		out, err := exec.Command(binary, "umount", d.Mnt).CombinedOutput()
		if err != nil {
			t.Fatalf("gsvfs umount (daemon killed: %v): %v: %s", killed, err, out)
		}
		if left := submounts(t, d.Mnt); len(left) != 0 {
			t.Errorf("after gsvfs umount (daemon killed: %v), still mounted: %v", killed, left)
		}
		if _, ok := mountPointType(d.Mnt); ok {
			t.Errorf("after gsvfs umount (daemon killed: %v), %s is still a mount point", killed, d.Mnt)
		}
		if !killed {
			select {
			case <-d.done:
			case <-time.After(10 * time.Second):
				t.Errorf("the daemon did not exit after gsvfs umount\n%s", d.log)
			}
		}
	}
}

// mountPointType reports what is mounted at dir, if anything.
func mountPointType(dir string) (string, bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	typ, found := "", false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == dir {
			if i := slices.Index(f, "-"); i > 0 && i+1 < len(f) {
				typ, found = f[i+1], true
			}
		}
	}
	return typ, found
}

// --kernel-binds where it cannot work says why.
func TestKernelBindsRefused(t *testing.T) {
	mnt := t.TempDir()
	out, err := exec.Command(binary, "mount", "--kernel-binds", "--server", "unix:/nonexistent.sock", mnt).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--kernel-binds") {
		t.Errorf("--kernel-binds with --server: %v, %q; want a refusal naming the flag", err, out)
	}
}
