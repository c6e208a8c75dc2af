//go:build linux

package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// What a device exports to its gateway, tried from the gateway's side as
// its owner would: a real gateway, devices joined to it over TLS on
// loopback, the gateway's tree mounted with FUSE and walked over 9P.

// gateway is a gateway daemon, its 9P socket and its FUSE mount.
type gateway struct {
	d    *daemon
	sock ninep.Address
	m    *daemon
}

func startGateway(t *testing.T) *gateway {
	t.Helper()
	d, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	return &gateway{d: d, sock: sock, m: mountServer(t, sock.String())}
}

// token is a join token for device id, dialled on loopback.
func (g *gateway) token(t *testing.T, id string) string {
	return joinToken(t, g.d.Root, id, "127.0.0.1:"+gatewayPort(t, g.d.Root))
}

// join starts a device on root that joins g as id by the token given in
// args (or env), and waits until the gateway has it online.
func (g *gateway) join(t *testing.T, root, id string, env []string, args ...string) *daemon {
	t.Helper()
	d := launch(t, &daemon{Root: root, env: env}, append([]string{"serve", "--root", root, "--device", id}, args...)...)
	t.Cleanup(func() { d.stop(t) })
	if !testenv.Poll(15*time.Second, exists(filepath.Join(g.m.Mnt, "sys/devices", id))) {
		t.Fatalf("device %s never joined\n%s", id, d.log)
	}
	waitOnline(t, g.m.Mnt, id, true, 15*time.Second)
	return d
}

// at is the gateway mount's path of p on device id.
func (g *gateway) at(id, p string) string { return filepath.Join(g.m.Mnt, "mnt", id, p) }

// walk9p walks p afresh over a new 9P connection to the gateway and reads
// the file there.
func (g *gateway) walk9p(t *testing.T, p string) ([]byte, error) {
	t.Helper()
	_, root := attach(t, g.sock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := vfs.Walk(ctx, root, path.Dir(p))
	if err != nil {
		return nil, err
	}
	return readNode(ctx, dir, path.Base(p))
}

// exists is a condition for waitFor: p is there.
func exists(p string) func() bool {
	return func() bool { _, err := os.Stat(p); return err == nil }
}

// writeFiles makes each file (and its directories) under dir.
func writeFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("secret of "+f+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Item 3: binding a parent of the device's own state directory exports
// neither the state directory nor its private part, by any name.
func TestExportHidesPrivateState(t *testing.T) {
	g := startGateway(t)
	home := filepath.Join(t.TempDir(), "home", "me")
	root := filepath.Join(home, ".local", "share", "gsvfs")
	writeFiles(t, home, "notes.txt")
	if err := os.Symlink(".local/share/gsvfs/private", filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	g.join(t, root, "laptop", nil, "--join", g.token(t, "laptop"),
		"--bind", home+":/workspaces/home", "--bind", filepath.Join(home, ".local")+":/workspaces/dot")
	key := filepath.Join(root, "private", "key.pem")
	if _, err := os.Stat(key); err != nil {
		t.Fatalf("the device made no key: %v", err)
	}
	// The owner's second name for the key, made on the device's disk.
	if err := os.Link(key, filepath.Join(home, "key-copy.pem")); err != nil {
		t.Fatal(err)
	}

	if b, err := os.ReadFile(g.at("laptop", "workspaces/home/notes.txt")); err != nil || string(b) != "secret of notes.txt\n" {
		t.Fatalf("the bound home through the gateway: %q, %v", b, err)
	}
	entries, err := os.ReadDir(g.at("laptop", "workspaces/home/.local/share"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("ls .local/share through the gateway lists %q, want nothing", e.Name())
	}
	for _, p := range []string{
		"workspaces/home/.local/share/gsvfs",
		"workspaces/home/.local/share/gsvfs/private/key.pem",
		"workspaces/dot/share/gsvfs",
		"workspaces/dot/share/gsvfs/private/key.pem",
		"workspaces/home/keys/key.pem", // the symlink, resolved on the gateway's side
	} {
		if _, err := os.ReadFile(g.at("laptop", p)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("read %s through the gateway: %v, want ENOENT", p, err)
		}
	}
	if _, err := g.walk9p(t, "mnt/laptop/workspaces/home/.local/share/gsvfs/private/key.pem"); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("a 9P walk to the key: %v, want ENOENT", err)
	}
	// A second name of the key is not there, listed or looked up.
	if _, err := os.ReadFile(g.at("laptop", "workspaces/home/key-copy.pem")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("read of a hard link to the key through the gateway: %v, want ENOENT", err)
	}
	if ls, err := os.ReadDir(g.at("laptop", "workspaces/home")); err != nil || slices.ContainsFunc(ls, func(e fs.DirEntry) bool { return e.Name() == "key-copy.pem" }) {
		t.Errorf("ls through the gateway lists a hard link to the key (%v)", err)
	}
	// Moving a directory that holds the state away from under the daemon.
	err = os.Rename(g.at("laptop", "workspaces/home/.local"), g.at("laptop", "workspaces/home/.local2"))
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("rename of .local, which holds the state, through the gateway: %v, want EACCES", err)
	}

	// The gateway's own tree: a namespace line binding a parent of its
	// state directory.
	up := filepath.Dir(g.d.Root)
	if err := os.WriteFile(filepath.Join(g.d.Root, "etc/namespace"), []byte("bind "+up+" /workspaces/up\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !testenv.Poll(10*time.Second, exists(filepath.Join(g.m.Mnt, "workspaces/up"))) {
		t.Fatalf("the namespace bind never came")
	}
	if err := os.WriteFile(filepath.Join(up, "beside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := testenv.Run(t, g.m.Mnt, "ls", "-A", "workspaces/up"); got != "beside\n" {
		t.Errorf("ls of the gateway's bind of its state's parent: %q, want only beside", got)
	}
	if _, err := os.ReadFile(filepath.Join(g.m.Mnt, "workspaces/up/state/private/key.pem")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("the gateway's key through its own namespace bind: %v, want ENOENT", err)
	}

	// A bind of the private part itself is refused with a clear error
	// (of a state directory no daemon serves: a second daemon of one is
	// refused before it looks at its binds).
	other := filepath.Join(t.TempDir(), "state")
	for _, bind := range []string{filepath.Join(other, "private"), other} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, binary, "serve", "--root", other, "--listen", "unix:"+filepath.Join(t.TempDir(), "s"),
			"--bind", bind+":/workspaces/p").CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "private state") {
			t.Errorf("serve --bind %s: %v, %q; want refused, saying why", bind, err, out)
		}
	}
}

// Item 4: refusals hold whatever name reaches a path, the rename of the
// reproduction included, and the default list covers the usual
// credentials.
func TestExportRefusalRename(t *testing.T) {
	g := startGateway(t)
	root := filepath.Join(t.TempDir(), "state")
	me := filepath.Join(root, "home", "me")
	writeFiles(t, me, "secrets/s.txt", "open.txt")
	defaults := []string{".git-credentials", ".kube/config", ".docker/config.json", ".config/gh/hosts.yml",
		".pgpass", ".npmrc", ".pypirc", ".netrc", ".aws/credentials", ".gnupg/pubring.kbx", ".ssh/config",
		"keys/id_rsa", "keys/id_dsa", "keys/id_ecdsa", "keys/id_ecdsa_sk", "keys/id_ed25519", "keys/id_ed25519_sk"}
	shown := []string{".docker/daemon.json", ".config/git/config", "keys/id_ed25519.pub"}
	writeFiles(t, me, append(defaults, shown...)...)
	g.join(t, root, "dev4", nil, "--join", g.token(t, "dev4"), "--refuse", "home/me/secrets/**",
		"--bind", me+":/workspaces/me")

	// The reproduction: rename the parent of the refused tree, then walk
	// afresh to the new name.
	err := os.Rename(g.at("dev4", "home/me"), g.at("dev4", "home/me2"))
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("rename of home/me, which holds a refused tree: %v, want EACCES", err)
	}
	for _, p := range []string{"home/me/secrets/s.txt", "home/me2/secrets/s.txt", "workspaces/me/secrets/s.txt"} {
		if b, err := g.walk9p(t, "mnt/dev4/"+p); err == nil {
			t.Errorf("a fresh 9P walk read %s: %q", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "home/me/secrets/s.txt")); err != nil {
		t.Errorf("the refused file on the device's disk: %v", err)
	}
	// Of a refused tree, by its name over 9P (FUSE finds no such name
	// to rename), and onto one.
	_, tree := attach(t, g.sock)
	dir, err := vfs.Walk(t.Context(), tree, "mnt/dev4/home/me")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Rename(t.Context(), "secrets", dir, "open"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("rename of the refused tree: %v, want EACCES", err)
	}
	if err := os.Rename(g.at("dev4", "home/me/open.txt"), g.at("dev4", "home/me/secrets")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("rename onto the refused tree: %v, want EACCES", err)
	}
	if err := dir.Rename(t.Context(), "open.txt", dir, ".netrc"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("rename onto a refused name over 9P: %v, want EACCES", err)
	}
	if err := os.Rename(g.at("dev4", "workspaces/me/.docker"), g.at("dev4", "workspaces/me/docker")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("rename of .docker, which holds config.json: %v, want EACCES", err)
	}
	// A directory holding nothing refused renames as ever.
	if err := os.Rename(g.at("dev4", "home/me/.config/git"), g.at("dev4", "home/me/.config/git2")); err != nil {
		t.Errorf("rename of a plain directory through the gateway: %v", err)
	}

	for _, p := range defaults {
		for _, top := range []string{"home/me/", "workspaces/me/"} {
			if _, err := os.ReadFile(g.at("dev4", top+p)); !errors.Is(err, syscall.ENOENT) {
				t.Errorf("default refusal: read %s through the gateway: %v, want ENOENT", top+p, err)
			}
		}
	}
	for _, p := range []string{".docker/daemon.json", ".config/git2/config", "keys/id_ed25519.pub"} {
		if _, err := os.ReadFile(g.at("dev4", "home/me/"+p)); err != nil {
			t.Errorf("read %s, which nothing refuses: %v", p, err)
		}
	}
}

// Item 5: a device serving no sessions exports no /proc and says so.
func TestExportNoSessions(t *testing.T) {
	g := startGateway(t)
	root := filepath.Join(t.TempDir(), "state")
	g.join(t, root, "files", nil, "--join", g.token(t, "files"), "--no-sessions")
	if impl := readDesc(t, g.m.Mnt, "files").Implements; slices.Contains(impl, "shell.exec") || !slices.Contains(impl, "fs.*") {
		t.Errorf("implements of a device without sessions: %v", impl)
	}
	if _, err := os.Stat(g.at("files", "proc")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat /mnt/files/proc: %v, want ENOENT", err)
	}
	if err := os.Mkdir(g.at("files", "proc/x"), 0o755); err == nil {
		t.Errorf("mkdir /mnt/files/proc/x made a session")
	}
	if _, err := g.walk9p(t, "mnt/files/proc/clone"); err == nil {
		t.Errorf("a 9P walk to /mnt/files/proc/clone worked")
	}
	if b, err := os.ReadFile(g.at("files", "sys/capabilities")); err != nil || strings.Contains(string(b), "shell.exec") {
		t.Errorf("the device's /sys/capabilities: %q, %v", b, err)
	}
	// Nor a way round: the crontab and the namespace file.
	for _, p := range []string{"etc/crontab", "etc/namespace"} {
		if err := os.WriteFile(g.at("files", p), []byte("* * * * * id\n"), 0o644); !errors.Is(err, syscall.EACCES) {
			t.Errorf("writing %s through the gateway: %v, want EACCES", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/crontab")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a crontab reached the device: %v", err)
	}
	// Files still go both ways.
	if err := os.WriteFile(g.at("files", "workspaces/f"), []byte("x"), 0o644); err != nil {
		t.Errorf("a file through the gateway: %v", err)
	}
}

// Item 6: the join token comes from the environment or a private file,
// and is never in the daemon's command line.
func TestJoinTokenSources(t *testing.T) {
	g := startGateway(t)
	base := t.TempDir()
	cmdline := func(d *daemon) string {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	tok := g.token(t, "byenv")
	d := g.join(t, filepath.Join(base, "env"), "byenv", append(os.Environ(), "GSVFS_JOIN="+tok))
	if strings.Contains(cmdline(d), tok) {
		t.Errorf("the token from GSVFS_JOIN is in the daemon's command line")
	}

	tok = g.token(t, "byfile")
	file := filepath.Join(base, "join")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = g.join(t, filepath.Join(base, "file"), "byfile", nil, "--join-file", file)
	if strings.Contains(cmdline(d), tok) {
		t.Errorf("the token from --join-file is in the daemon's command line")
	}

	// A file other users can read is refused, with the fix in the error.
	loose := filepath.Join(base, "loose")
	if err := os.WriteFile(loose, []byte(g.token(t, "loose")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "serve", "--root", filepath.Join(base, "loose-root"), "--device", "loose",
		"--join-file", loose).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "chmod 600") {
		t.Errorf("serve --join-file with a 0644 file: %v, %q; want it refused, saying chmod 600", err, out)
	}
}

// A device that is itself a gateway exports none of its own devices, nor
// what it keeps about them, nor its settings: G, the gateway D joins,
// does not reach X, D's device (and a shell on it), through D, even with
// D's sessions on, nor change D's descriptions of its devices.
func TestExportHidesOtherDevices(t *testing.T) {
	g := startGateway(t)
	dRoot := filepath.Join(t.TempDir(), "d")
	d := g.join(t, dRoot, "d", nil, "--join", g.token(t, "d"), "--listen", "tls:127.0.0.1:0")
	dSock := gsvfsd.Socket(d.Root)
	xRoot := filepath.Join(t.TempDir(), "x")
	writeFiles(t, filepath.Join(xRoot, "workspaces"), "x-only")
	xTok := joinToken(t, dRoot, "x", "127.0.0.1:"+gatewayPort(t, dRoot))
	x := launch(t, &daemon{Root: xRoot}, "serve", "--root", xRoot, "--device", "x", "--join", xTok)
	t.Cleanup(func() { x.stop(t) })
	// D's own users see X, and a shell on it.
	_, dTree := attach(t, dSock)
	if !testenv.Poll(15*time.Second, func() bool {
		f, err := vfs.Walk(t.Context(), dTree, "mnt/x/proc/clone")
		return err == nil && f != nil
	}) {
		t.Fatalf("x never joined d\n%s", x.log)
	}
	if got := readTree(t, dTree, "mnt/x/workspaces/x-only"); !strings.Contains(got, "secret") {
		t.Fatalf("d reads %q in x's file", got)
	}
	// G sees D's own tree only.
	for _, p := range []string{"mnt", "mnt/x", "mnt/x/proc", "mnt/x/workspaces/x-only", "sys/devices", "sys/devices/x", "sys/config"} {
		if _, err := os.Stat(g.at("d", p)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat /mnt/d/%s at the gateway: %v, want ENOENT", p, err)
		}
		if _, err := g.walk9p(t, path.Join("mnt/d", p)); err == nil {
			t.Errorf("a 9P walk to /mnt/d/%s at the gateway worked", p)
		}
	}
	if err := os.Mkdir(g.at("d", "mnt/x/proc/s"), 0o755); err == nil {
		t.Errorf("the gateway made a session on d's device x")
	}
	if err := os.WriteFile(g.at("d", "sys/devices/x"), []byte(`{"description":"owned"}`), 0o644); err == nil {
		t.Errorf("the gateway wrote d's description of x")
	}
	if got := readTree(t, dTree, "sys/devices/x"); strings.Contains(got, "owned") {
		t.Errorf("d's descriptor of x was changed by the gateway: %s", got)
	}
	if got := ls(t, g.at("d", "sys")); slices.Contains(got, "devices") || slices.Contains(got, "config") || !slices.Contains(got, "version") {
		t.Errorf("the gateway lists d's /sys as %v, want its facts without devices and config", got)
	}
	if got := ls(t, g.at("d", "")); slices.Contains(got, "mnt") || !slices.Contains(got, "workspaces") {
		t.Errorf("the gateway lists d's root as %v, want no mnt", got)
	}
}
