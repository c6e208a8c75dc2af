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

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// submounts lists the mounts below mnt, as paths inside it, with their
// mount options.
func submounts(t *testing.T, mnt string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	eachMountLine(t, func(f []string) {
		if strings.HasPrefix(f[4], mnt+"/") {
			out[strings.TrimPrefix(f[4], mnt)] = f[5]
		}
	})
	return out
}

// mountsAtOrBelow lists the mount points at dir or below it, once for
// every mount (stacked mounts repeat their point).
func mountsAtOrBelow(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	eachMountLine(t, func(f []string) {
		if f[4] == dir || strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	})
	return out
}

// loggedRefusal reports whether d logged that it refused the kernel bind
// at p.
func loggedRefusal(d *daemon, p string) bool {
	for _, line := range strings.Split(d.log.String(), "\n") {
		if strings.Contains(line, "refused") && strings.Contains(line, p+":") {
			return true
		}
	}
	return false
}

// eachMountLine calls fn with the fields of each line of this process's
// /proc/self/mountinfo (the daemons under test share its namespace).
func eachMountLine(t *testing.T, fn func(fields []string)) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			fn(f)
		}
	}
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
	ok := testenv.Poll(15*time.Second, func() bool {
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
	if got := output("stat", "-c", "%F %t:%T", d.Path("dev/null")); got != "character special file 1:3\n" {
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

// --kernel-binds never lays a bind where a user's symlink points: an
// ordinary user makes workspaces/team a symlink to a directory of the
// host, root's namespace binds a directory at /workspaces/team/data, and
// nothing may be mounted over the host's team/data, now or at any later
// re-check. A bind at a legitimate place is laid once, not again at
// every re-check, and it goes with its line even when the way to it has
// become a symlink since; gsvfs umount leaves nothing behind.
func TestKernelBindsRefuseSymlinks(t *testing.T) {
	needRootForBinds(t)
	d := smSharedMount(t, "--kernel-binds")
	waitBinds(t, d, "/home", "/workspaces")
	victim := t.TempDir()
	if err := os.Mkdir(filepath.Join(victim, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // what a failure left there, so the test can clean up
		for _, p := range mountsAtOrBelow(t, victim) {
			syscall.Unmount(p, syscall.MNT_DETACH)
		}
	})
	ws := d.Path("workspaces")
	if out := smAsOther(t, ws, "ln -s "+victim+" team && mkdir -p proj/data && echo ok"); out != "ok\n" {
		t.Fatalf("as uid %d in %s: %q", smOther, ws, out)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "s.txt"), []byte("bound\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := "bind " + src + " /workspaces/team/data\nbind " + src + " /workspaces/proj/data\n"
	if err := os.WriteFile(d.Path("etc/namespace"), []byte(ns), 0o644); err != nil {
		t.Fatal(err)
	}
	waitBinds(t, d, "/home", "/workspaces/proj/data")
	// Several re-checks: each one laid the bind again over the victim.
	// Time is what is tested: the re-checks come on a timer
	// (kernelBindCheck) and leave no trace when they lay nothing.
	time.Sleep(2*kernelBindCheck + time.Second)
	if got := mountsAtOrBelow(t, victim); len(got) != 0 {
		t.Errorf("mounted over the target of a user's symlink: %q\n%s", got, d.log)
	}
	if got := mountsAtOrBelow(t, d.Path("workspaces/proj/data")); len(got) != 1 {
		t.Errorf("mounts at the legitimate bind after two re-checks: %q, want one", got)
	}
	if got := output("cat", d.Path("workspaces/proj/data/s.txt")); got != "bound\n" {
		t.Errorf("the legitimate bind reads %q", got)
	}
	if !loggedRefusal(d, "/workspaces/team/data") {
		t.Errorf("the refused bind at /workspaces/team/data is not in the log:\n%s", d.log)
	}

	// The user turns the way to the bind into a symlink to the victim,
	// in the state directory: the daemon sees it and tells the kernel,
	// which drops the bind; it is not laid again over the victim, and
	// whatever of it is left goes with its line.
	// (The state directory is root's; a session's shell works there.)
	if err := os.Chmod(d.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	stateWS := filepath.Join(d.Root, "workspaces")
	if out := smAsOther(t, stateWS, "mv proj proj.old && ln -s "+victim+" proj && echo ok"); out != "ok\n" {
		t.Fatalf("as uid %d in %s: %q", smOther, stateWS, out)
	}
	// Two re-checks on their timer, as above: nothing may be laid again.
	time.Sleep(2*kernelBindCheck + time.Second)
	if got := mountsAtOrBelow(t, victim); len(got) != 0 {
		t.Errorf("after workspaces/proj became a symlink, mounted over its target: %q\n%s", got, d.log)
	}
	if !loggedRefusal(d, "/workspaces/proj/data") {
		t.Errorf("the refused bind at /workspaces/proj/data is not in the log:\n%s", d.log)
	}
	if err := os.WriteFile(d.Path("etc/namespace"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitBinds(t, d, "/home", "/workspaces")
	if got := mountsAtOrBelow(t, victim); len(got) != 0 {
		t.Errorf("after the lines went, mounted over the victim: %q", got)
	}

	if out, err := exec.Command(binary, "umount", d.Mnt).CombinedOutput(); err != nil {
		t.Fatalf("gsvfs umount: %v: %s", err, out)
	}
	if got := mountsAtOrBelow(t, d.Mnt); len(got) != 0 {
		t.Errorf("after gsvfs umount, still mounted: %q", got)
	}
}
