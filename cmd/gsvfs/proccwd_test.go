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
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// The working directory of /proc sessions (gsvfs-proc(7), cwd): a ctl
// write is all or nothing, and cwd takes the tree's paths, relative
// paths and ~.

// procPwd runs `pwd -P` in a fresh session after the ctl lines set and
// returns what it printed, without its newline.
func procPwd(t *testing.T, d *daemon, name, set string) string {
	t.Helper()
	dir := procNew(t, d, name)
	procMustWrite(t, filepath.Join(dir, "ctl"), set)
	procMustWrite(t, filepath.Join(dir, "ctl"), "exec pwd -P\n")
	if st := procWaitEnd(t, dir); st.Status != "completed" {
		t.Fatalf("%q then pwd: %s (%s), lastError %q", set, st.Status, st.exit(), st.LastError)
	}
	return strings.TrimSuffix(procOutput(t, dir), "\n")
}

// realPath is p with its symbolic links resolved, as pwd -P prints it.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A ctl write whose cwd fails runs nothing: not the exec of the same
// write, even when the writer (printf) sends each line as a write of its
// own, nor a later exec until a cwd succeeds.
func TestProcCtlAllOrNothing(t *testing.T) {
	d := procMount(t, nil)
	mark := filepath.Join(t.TempDir(), "ran")
	dir := procNew(t, d, "printf")
	ctl := filepath.Join(dir, "ctl")
	// printf(1) writes a line at a time: two writes on one open ctl.
	out, err := exec.Command("bash", "-c", `printf "cwd /workspaces/nope\nexec touch $2\n" > "$1"`, "bash", ctl, mark).CombinedOutput()
	if err == nil {
		t.Errorf("printf of a failing cwd and an exec to ctl succeeded: %s", out)
	}
	st := procReadStatus(t, dir)
	if st.Status != "idle" || !strings.Contains(st.LastError, "nope") {
		t.Errorf("after printf 'cwd /workspaces/nope\\nexec …': %s, lastError %q; want idle and why", st.Status, st.LastError)
	}

	// One write: no line of it takes effect.
	dir = procNew(t, d, "one-write")
	ctl = filepath.Join(dir, "ctl")
	err = procWrite(ctl, "env H19=set\ncwd /workspaces/nope\nexec touch "+mark+"\n")
	if vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("env, a failing cwd and exec in one write: %s (%v), want ENOENT", procErrno(err), err)
	}
	if env := string(smReadFile(t, filepath.Join(dir, "env"))); strings.Contains(env, "H19=") {
		t.Errorf("the env line of a failed write took effect:\n%s", env)
	}
	// A later exec on its own does not run in a directory it was not
	// given either.
	err = procWrite(ctl, "exec touch "+mark+"\n")
	if st := procReadStatus(t, dir); err == nil || st.Status != "idle" || !strings.Contains(st.LastError, "cwd") {
		t.Errorf("exec after a failed cwd: %v, %s, lastError %q; want an error, idle and why", err, st.Status, st.LastError)
	}
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a command ran after its cwd failed: %v", err)
	}
	// A cwd that works lets it run.
	procMustWrite(t, ctl, "cwd /workspaces\nexec touch "+mark+"\n")
	if st := procWaitEnd(t, dir); st.Status != "completed" || st.Workdir != filepath.Join(d.Root, "workspaces") {
		t.Errorf("after a good cwd: %s in %s, lastError %q", st.Status, st.Workdir, st.LastError)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the command did not run after a good cwd: %v", err)
	}
}

// cwd takes relative paths, against the session's directory (in the tree
// when that is a path of the tree), and ~ for the session user's home.
func TestProcCwdRelativeAndHome(t *testing.T) {
	d := procMount(t, nil)
	home := filepath.Join(filepath.Dir(d.Root), "home") // procMount's HOME
	for _, p := range []string{d.Path("workspaces/app/src"), filepath.Join(home, "sub")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(d.Root, "workspaces")
	for i, tc := range []struct{ set, want string }{
		{"cwd /workspaces/app\ncwd src\n", filepath.Join(ws, "app", "src")},
		{"cwd /workspaces/app/src\ncwd ../..\n", ws},
		{"cwd /workspaces\ncwd ./app/src/\n", filepath.Join(ws, "app", "src")},
		{"cwd ~\n", home},
		{"cwd ~/sub\n", filepath.Join(home, "sub")},
		{"cwd sub\n", filepath.Join(home, "sub")}, // the home is where a session starts
		{"cwd ~\ncwd sub/..\n", home},
	} {
		if got := procPwd(t, d, "rel-"+string(rune('a'+i)), tc.set); got != realPath(t, tc.want) {
			t.Errorf("%q: pwd %q, want %q", tc.set, got, realPath(t, tc.want))
		}
	}
	// Across writes too: the second cwd is taken against the first.
	dir := procNew(t, d, "rel-writes")
	procMustWrite(t, filepath.Join(dir, "ctl"), "cwd /workspaces/app\n")
	procMustWrite(t, filepath.Join(dir, "ctl"), "cwd src\n")
	if got, err := os.Readlink(filepath.Join(dir, "cwd")); got != filepath.Join(ws, "app", "src") {
		t.Errorf("cwd after `cwd /workspaces/app` and `cwd src`: %q (%v)", got, err)
	}
	dir = procNew(t, d, "rel-bad")
	for _, bad := range []string{"cwd ~nobody\n", "cwd missing\n"} {
		if err := procWrite(filepath.Join(dir, "ctl"), bad); err == nil {
			t.Errorf("%q succeeded", bad)
		}
	}
}

// cwd takes every path of the tree that a host directory serves: a
// namespace bind of a host directory, a union (its creation layer), and
// tells a path no host directory serves (/sys, /proc) with EINVAL.
func TestProcCwdTreePaths(t *testing.T) {
	d := procMount(t, nil)
	srv := t.TempDir()
	if err := os.MkdirAll(filepath.Join(srv, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"home/agent/.skills/mine", "home/agent/skills", "etc/skills/pdf"} {
		if err := os.MkdirAll(d.Path(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ns := "bind " + srv + " /workspaces/data\n" +
		"bind -c /home/agent/.skills /home/agent/skills\nbind -a /etc/skills /home/agent/skills\n"
	if err := os.WriteFile(d.Path("etc/namespace"), []byte(ns), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, procBound, "the namespace applied", func() (bool, string) {
		_, err1 := os.Stat(d.Path("workspaces/data/sub"))
		_, err2 := os.Stat(d.Path("home/agent/skills/pdf"))
		return err1 == nil && err2 == nil, "stat workspaces/data/sub, home/agent/skills/pdf"
	})
	for i, tc := range []struct{ set, want string }{
		{"cwd /workspaces/data\n", srv},
		{"cwd /workspaces/data/sub\n", filepath.Join(srv, "sub")},
		{"cwd /workspaces/data\ncwd sub\n", filepath.Join(srv, "sub")},
		{"cwd /workspaces/data/sub\ncwd ..\n", srv},
		{"cwd /home/agent/skills\n", filepath.Join(d.Root, "home/agent/.skills")},
		{"cwd /home/agent/skills/mine\n", filepath.Join(d.Root, "home/agent/.skills/mine")},
		// Only the other layer has it: that layer's directory.
		{"cwd /home/agent/skills/pdf\n", filepath.Join(d.Root, "etc/skills/pdf")},
	} {
		if got := procPwd(t, d, "tree-"+string(rune('a'+i)), tc.set); got != realPath(t, tc.want) {
			t.Errorf("%q: pwd %q, want %q", tc.set, got, realPath(t, tc.want))
		}
	}
	dir := procNew(t, d, "tree-none")
	for _, p := range []string{"/sys", "/proc", "/sys/config", "/mnt"} {
		err := procWrite(filepath.Join(dir, "ctl"), "cwd "+p+"\n")
		if st := procReadStatus(t, dir); vfs.Errno(err) != syscall.EINVAL || !strings.Contains(st.LastError, "no host directory") {
			t.Errorf("cwd %s: %s (%v), lastError %q; want EINVAL and why", p, procErrno(err), err, st.LastError)
		}
	}
}

// A device's --bind serves its sessions as its files: `cwd
// /workspaces/src` through the gateway runs in the bound directory.
func TestProcCwdDeviceBind(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("SKIPPED: bash is not installed here: %v", err)
	}
	gw, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	port := gatewayPort(t, gw.Root)
	base := t.TempDir()
	src := filepath.Join(base, "src")
	if err := os.MkdirAll(filepath.Join(src, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "dev")
	dev := launch(t, &daemon{Root: root, env: procEnviron("HOME=" + base)}, "serve", "--root", root,
		"--device", "h19dev", "--join", joinToken(t, gw.Root, "h19dev", "127.0.0.1:"+port),
		"--bind", src+":/workspaces/src", "--session-shell", bash)
	t.Cleanup(func() { dev.stop(t) })
	m := mountServer(t, sock.String())
	waitOnline(t, m.Mnt, "h19dev", true, 10*time.Second)
	dir := filepath.Join(m.Mnt, "mnt/h19dev/proc/src")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	procMustWrite(t, filepath.Join(dir, "ctl"), "cwd /workspaces/src\ncwd pkg\nexec pwd -P\n")
	if st := procWaitEnd(t, dir); st.Status != "completed" {
		t.Fatalf("cwd /workspaces/src on the device: %s, lastError %q", st.Status, st.LastError)
	}
	if got, want := procOutput(t, dir), realPath(t, filepath.Join(src, "pkg"))+"\n"; got != want {
		t.Errorf("pwd on the device after cwd /workspaces/src/pkg: %q, want %q", got, want)
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED the rest: tree paths in commands take a mount namespace, which takes root")
	}
	// gsvfs-devices(7)'s example: the --bind's tree path in a command.
	dir = filepath.Join(m.Mnt, "mnt/h19dev/proc/make")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	procMustWrite(t, filepath.Join(dir, "ctl"), "exec cd /workspaces/src/pkg && pwd\n")
	if st := procWaitEnd(t, dir); st.Status != "completed" || procOutput(t, dir) != "/workspaces/src/pkg\n" {
		t.Errorf("cd /workspaces/src/pkg in a command on the device: %s, output %q", st.Status, procOutput(t, dir))
	}
}

// Commands take the tree's paths as written, as gsvfs(7)'s quick start
// does: `exec make -C /workspaces/app` and, in an interactive shell,
// `cd /workspaces/app && …`, binds below /workspaces included; /etc stays
// the host's, and $GSVFS_TREE names the mount.
func TestProcTreePathsInCommands(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: sessions see the tree's paths in a mount namespace of their own, which takes root; elsewhere they see the host's (paths: host)")
	}
	d := procMount(t, nil)
	srv := t.TempDir()
	if err := os.WriteFile(filepath.Join(srv, "x"), []byte("bound\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{
		"workspaces/app/Makefile": "all:\n\t@echo made in $(CURDIR)\n",
		"workspaces/app/f":        "in the tree\n",
	} {
		if err := os.MkdirAll(filepath.Dir(d.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.Path(p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(d.Path("workspaces/data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Path("etc/namespace"), []byte("bind "+srv+" /workspaces/data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, procBound, "the namespace applied", func() (bool, string) {
		_, err := os.Stat(d.Path("workspaces/data/x"))
		return err == nil, "stat workspaces/data/x"
	})

	dir, st := procExec(t, d, "make", "make -C /workspaces/app && cat /workspaces/data/x && echo tree=$GSVFS_TREE && test -e /etc/passwd && echo host-etc")
	out := procOutput(t, dir)
	for _, want := range []string{"made in /workspaces/app\n", "bound\n", "tree=" + d.Mnt + "\n", "host-etc\n"} {
		if st.Status != "completed" || !strings.Contains(out, want) {
			t.Errorf("tree paths in an exec: %s (%s), output %q; want it to hold %q", st.Status, st.exit(), out, want)
		}
	}
	var paths struct {
		Paths string `json:"paths"`
	}
	procJSON(t, filepath.Join(dir, "status"), &paths)
	if paths.Paths != "tree" {
		t.Errorf("status paths: %q, want tree", paths.Paths)
	}

	sh := procNew(t, d, "shell")
	if c := procRun(t, sh, "cd /workspaces/app && cat f"); c.Status != "completed" || !strings.Contains(procLines(c.Output), "in the tree\n") {
		t.Errorf("cd /workspaces/app && cat f in a shell: %s (%s), output %q", c.Status, procExit(c.ExitCode), c.Output)
	}
	// The cwd link is the host's directory, which the tree serves there.
	if got, err := os.Readlink(filepath.Join(sh, "cwd")); got != filepath.Join(d.Root, "workspaces", "app") {
		t.Errorf("cwd link after cd /workspaces/app: %q (%v), want %s", got, err, filepath.Join(d.Root, "workspaces", "app"))
	}
	procMustWrite(t, filepath.Join(sh, "ctl"), "kill\n")
}

// A session's namespace binds follow no symlink (issue 29, item 4): a
// user's symlink /workspaces/team -> a host directory (/workspaces is
// 1777), then an administrator's `bind SRV /workspaces/team/proj`, must
// make nothing in that host directory and bind nothing there in root's
// sessions; the bind without a symlink on its way is still laid.
func TestProcBindsFollowNoSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: sessions get binds in a mount namespace of their own, which takes root")
	}
	d := procMount(t, nil)
	for _, p := range []string{filepath.Dir(filepath.Dir(d.Mnt)), filepath.Dir(d.Mnt)} {
		smMust(t, "chmod", os.Chmod(p, 0o755)) // the user reaches the mount
	}
	target := smSharedTempDir(t) // a host directory of someone's
	srv, plain := t.TempDir(), t.TempDir()
	smMust(t, "write", os.WriteFile(filepath.Join(srv, "x"), []byte("bound\n"), 0o644))
	smMust(t, "write", os.WriteFile(filepath.Join(plain, "y"), []byte("plain\n"), 0o644))
	if out := smAsOther(t, d.Path("workspaces"), "ln -s "+target+" team && echo ok"); out != "ok\n" {
		t.Fatalf("a user's symlink in /workspaces: %q", out)
	}
	smMust(t, "mkdir", os.Mkdir(d.Path("workspaces/plain"), 0o755))
	ns := "bind " + srv + " /workspaces/team/proj\nbind " + plain + " /workspaces/plain\n"
	smMust(t, "write namespace", os.WriteFile(d.Path("etc/namespace"), []byte(ns), 0o644))
	testenv.Eventually(t, procBound, "the namespace applied", func() (bool, string) {
		b, _ := os.ReadFile(d.Path("sys/mounts"))
		return strings.Contains(string(b), "/workspaces/team/proj") && strings.Contains(string(b), "/workspaces/plain"), string(b)
	})

	dir, st := procExec(t, d, "binds", "cat /workspaces/plain/y; grep -c -F "+target+" /proc/self/mountinfo; ls -A "+target+"; true")
	if got, want := procOutput(t, dir), "plain\n0\n"; st.Status != "completed" || got != want {
		t.Errorf("in root's session: %q; want the plain bind laid, no mount on %s and nothing in it", got, target)
	}
	if names, err := os.ReadDir(target); err != nil || len(names) != 0 {
		t.Errorf("%s after root's session: %v (%v); want it left empty", target, names, err)
	}
}

// Another daemon's FUSE mount inside a bound host directory is not kept
// in a session's namespace (its daemon could not exit while the session
// runs): the bind's tree, cloned with what is mounted in it, leaves it
// out, as the host's namespace copy does.
func TestProcBindsLeaveOtherMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: sessions get binds in a mount namespace of their own, which takes root")
	}
	d := procMount(t, nil)
	host := t.TempDir()
	other := mountAt(t, filepath.Join(t.TempDir(), "state"), filepath.Join(host, "other"))
	defer other.stop(t)
	smMust(t, "mkdir", os.Mkdir(d.Path("workspaces/data"), 0o755))
	smMust(t, "write namespace", os.WriteFile(d.Path("etc/namespace"), []byte("bind "+host+" /workspaces/data\n"), 0o644))
	testenv.Eventually(t, procBound, "the namespace applied", func() (bool, string) {
		_, err := os.Stat(d.Path("workspaces/data/other/proc"))
		return err == nil, "stat workspaces/data/other/proc"
	})
	dir, st := procExec(t, d, "mounts", "test -d /workspaces/data/other && grep -c ' /workspaces/data/other ' /proc/self/mountinfo; true")
	if got := procOutput(t, dir); st.Status != "completed" || got != "0\n" {
		t.Errorf("mounts at /workspaces/data/other in the session: %q (%s); want the bind laid and the other daemon's mount left out", got, st.Status)
	}
}
