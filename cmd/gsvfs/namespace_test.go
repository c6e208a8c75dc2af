//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"golang.org/x/sys/unix"
)

// The agent skills case, as agents' tools do it: two lines appended to
// /etc/namespace give /home/agent/skills with the agent's files over the
// global ones, through FUSE and 9P; edits land in the agent's layer.
func TestNamespaceSkillsUnion(t *testing.T) {
	d := startMount(t)
	skills := skillsUnion(t, d, map[string]string{
		"home/agent/.skills/mine.md":   "mine\n",
		"home/agent/.skills/shared.md": "agent's shared\n",
		"etc/skills/shared.md":         "global shared\n",
		"etc/skills/global.md":         "global\n",
		"etc/skills/pdf/SKILL.md":      "pdf\n",
	})
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(skills, p)); return string(b) }
	if read("shared.md") != "agent's shared\n" || read("global.md") != "global\n" || read("pdf/SKILL.md") != "pdf\n" {
		t.Errorf("reads through the union: %q %q %q", read("shared.md"), read("global.md"), read("pdf/SKILL.md"))
	}

	// Edits, as agents' tools make them: sed -i (a new file renamed over
	// the name), an append, a new file in a global-only directory.
	testenv.Run(t, skills, "sed", "-i", "s/global/edited/", "global.md")
	testenv.Run(t, skills, "sh", "-c", "echo appended >> pdf/SKILL.md && echo new > pdf/notes.md")
	if read("global.md") != "edited\n" || read("pdf/SKILL.md") != "pdf\nappended\n" {
		t.Errorf("after edits: %q %q", read("global.md"), read("pdf/SKILL.md"))
	}
	for p, want := range map[string]string{"etc/skills/global.md": "global\n", "etc/skills/pdf/SKILL.md": "pdf\n"} {
		if b, _ := os.ReadFile(filepath.Join(d.Root, p)); string(b) != want {
			t.Errorf("the global %s changed: %q", p, b)
		}
	}
	for _, p := range []string{"global.md", "pdf/SKILL.md", "pdf/notes.md"} {
		if _, err := os.Stat(filepath.Join(d.Root, "home/agent/.skills", p)); err != nil {
			t.Errorf("%s is not in the agent's layer: %v", p, err)
		}
	}
	// Removing the agent's copy shows the global one again.
	if err := os.Remove(filepath.Join(skills, "shared.md")); err != nil {
		t.Fatal(err)
	}
	if read("shared.md") != "global shared\n" {
		t.Errorf("after removing the agent's shared.md: %q", read("shared.md"))
	}

	// Over 9P, the same union.
	_, tree := attach(t, gsvfsd.Socket(d.Root))
	if got := readTree(t, tree, "home/agent/skills/mine.md"); got != "mine\n" {
		t.Errorf("over 9P: %q", got)
	}

	// A bad edit through the tree fails with EINVAL and changes nothing.
	before, _ := os.ReadFile(filepath.Join(d.Root, "etc/namespace"))
	ns, _ := os.OpenFile(d.Path("etc/namespace"), os.O_WRONLY|os.O_APPEND, 0)
	if _, err := ns.WriteString("bind -x /nowhere /home/agent/skills\n"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a bad line written through the tree: %v, want EINVAL", err)
	}
	ns.Close()
	if after, _ := os.ReadFile(filepath.Join(d.Root, "etc/namespace")); string(after) != string(before) {
		t.Errorf("the refused write changed the file: %q", after)
	}
	// Made on disk, it is refused whole: the union stays, and /sys/mounts
	// says why.
	ns, _ = os.OpenFile(filepath.Join(d.Root, "etc/namespace"), os.O_WRONLY|os.O_APPEND, 0)
	ns.WriteString("bind -x /nowhere /home/agent/skills\n")
	ns.Close()
	if !testenv.Poll(5*time.Second, func() bool {
		b, _ := os.ReadFile(d.Path("sys/mounts"))
		return strings.Contains(string(b), "namespace refused")
	}) {
		t.Errorf("/sys/mounts does not say the namespace was refused")
	}
	if got := ls(t, skills); !slices.Contains(got, "mine.md") || !slices.Contains(got, "global.md") {
		t.Errorf("skills after a refused edit: %q", got)
	}
}

func ls(t *testing.T, dir string) []string {
	t.Helper()
	out, _ := exec.Command("ls", "-A", dir).Output()
	return strings.Fields(string(out))
}

// A mount line of /etc/namespace serves another daemon's tree (on its
// unix socket) in this one; TCP is refused.
func TestNamespaceMountLine(t *testing.T) {
	other, sock := startServe(t)
	if err := os.WriteFile(filepath.Join(other.Root, "workspaces", "from-other"), []byte("other daemon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startMount(t)
	if err := os.WriteFile(d.Path("etc/namespace"), []byte("mount "+sock.String()+" /mnt/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ""
	testenv.Poll(5*time.Second, func() bool {
		b, _ := os.ReadFile(d.Path("mnt/other/workspaces/from-other"))
		got = string(b)
		return got == "other daemon\n"
	})
	if got != "other daemon\n" {
		t.Errorf("the other daemon's file through this one: %q", got)
	}
	if err := os.WriteFile(d.Path("etc/namespace"), []byte("mount tcp:127.0.0.1:1 /mnt/tcp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !testenv.Poll(5*time.Second, func() bool {
		b, _ := os.ReadFile(d.Path("sys/mounts"))
		return strings.Contains(string(b), "only unix: sockets")
	}) {
		t.Errorf("a TCP mount line was not refused in /sys/mounts")
	}
}

// A file read through a union says which layer it came from, in the
// xattr user.gsvfs.layer (gsvfs-namespace(5)), through FUSE and 9P; the
// union keeps it, so setting or removing it fails with EPERM.
func TestUnionLayerXattr(t *testing.T) {
	d := startMount(t)
	skills := skillsUnion(t, d, map[string]string{
		"home/agent/.skills/mine.md": "mine\n",
		"etc/skills/global.md":       "global\n",
		"etc/skills/pdf/SKILL.md":    "pdf\n",
	})
	layer := func(p string) string {
		t.Helper()
		buf := make([]byte, 256)
		n, err := unix.Getxattr(filepath.Join(skills, p), "user.gsvfs.layer", buf)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(buf[:n])
	}
	for p, want := range map[string]string{
		"mine.md": "/home/agent/.skills", "global.md": "/etc/skills", "pdf/SKILL.md": "/etc/skills",
	} {
		if got := layer(p); got != want {
			t.Errorf("user.gsvfs.layer of %s: %q, want %q", p, got, want)
		}
	}
	buf := make([]byte, 1024)
	n, err := unix.Listxattr(filepath.Join(skills, "global.md"), buf)
	if err != nil || !slices.Contains(strings.Split(string(buf[:n]), "\x00"), "user.gsvfs.layer") {
		t.Errorf("listxattr of global.md: %q, %v", buf[:n], err)
	}
	p := filepath.Join(skills, "mine.md")
	if err := unix.Setxattr(p, "user.gsvfs.layer", []byte("/elsewhere"), 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("setxattr user.gsvfs.layer: %v, want EPERM", err)
	}
	if err := unix.Removexattr(p, "user.gsvfs.layer"); !errors.Is(err, syscall.EPERM) {
		t.Errorf("removexattr user.gsvfs.layer: %v, want EPERM", err)
	}
	// A change copies the file into the -c layer: it says so.
	testenv.Run(t, skills, "sh", "-c", "echo more >> global.md")
	if got := layer("global.md"); got != "/home/agent/.skills" {
		t.Errorf("user.gsvfs.layer of global.md after an edit: %q", got)
	}

	// Over 9P, the same.
	_, tree := attach(t, gsvfsd.Socket(d.Root))
	f, err := vfs.Walk(t.Context(), tree, "home/agent/skills/pdf/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	x, ok := f.(vfs.Xattrer)
	if !ok {
		t.Fatalf("a 9P node has no xattrs: %T", f)
	}
	if got, err := x.GetXattr(t.Context(), "user.gsvfs.layer"); err != nil || string(got) != "/etc/skills" {
		t.Errorf("over 9P: %q, %v", got, err)
	}
}

// skillsUnion writes files (a path of the tree and its content, under
// home/agent/.skills or etc/skills), binds the agent skills union of
// gsvfs-namespace(5) by appending to /etc/namespace as agents' tools do,
// and returns the union's path once it shows every file's top name.
func skillsUnion(t *testing.T, d *daemon, files map[string]string) string {
	t.Helper()
	var want []string
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(d.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.Path(p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "home/agent/.skills/"), "etc/skills/")
		if top, _, _ := strings.Cut(rel, "/"); !slices.Contains(want, top) {
			want = append(want, top)
		}
	}
	slices.Sort(want)
	if err := os.MkdirAll(d.Path("home/agent/skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	ns, err := os.OpenFile(d.Path("etc/namespace"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ns.WriteString("bind -c /home/agent/.skills /home/agent/skills\nbind -a /etc/skills /home/agent/skills\n")
	ns.Close()
	skills := d.Path("home/agent/skills")
	if !testenv.Poll(5*time.Second, func() bool { return slices.Equal(ls(t, skills), want) }) {
		t.Fatalf("ls skills: %q, want %q", ls(t, skills), want)
	}
	return skills
}
