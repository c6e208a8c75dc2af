package mounts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

func hostDir(t *testing.T, files map[string]string) (string, vfs.Node) {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if data != "/" {
			if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, d.Root()
}

func readNode(t *testing.T, n vfs.Node) string {
	t.Helper()
	h, err := n.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b := make([]byte, 1024)
	k, _ := h.ReadAt(ctx, b, 0)
	return string(b[:k])
}

// The agent skills case: the agent's own files over the global ones.
func TestUnionSkills(t *testing.T) {
	ownDir, own := hostDir(t, map[string]string{"mine.md": "mine", "shared.md": "my version"})
	globalDir, global := hostDir(t, map[string]string{"shared.md": "global version", "global.md": "global", "pdf/README.md": "pdf skill"})
	u := NewUnion([]Layer{{Dir: own, Create: true}, {Dir: global}})

	if got := sorted(names(t, u)); !slices.Equal(got, []string{"global.md", "mine.md", "pdf", "shared.md"}) {
		t.Errorf("listing: %q, want each name once", got)
	}
	if got := readNode(t, walk(t, u, "shared.md")); got != "my version" {
		t.Errorf("a name both layers have: %q, want the agent's", got)
	}
	if got := readNode(t, walk(t, u, "pdf", "README.md")); got != "pdf skill" {
		t.Errorf("read through to the global layer: %q", got)
	}

	// Editing a global file copies it up; the global one stays.
	g := walk(t, u, "global.md")
	h, err := g.Open(ctx, os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	h.WriteAt(ctx, []byte("edited"), 0)
	h.Close()
	if b, _ := os.ReadFile(filepath.Join(ownDir, "global.md")); string(b) != "edited" {
		t.Errorf("the copy in the agent's layer: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(globalDir, "global.md")); string(b) != "global" {
		t.Errorf("the global file was changed: %q", b)
	}
	// A new file in a directory only the global layer has: made in the
	// agent's layer, directory and all.
	pdf := walk(t, u, "pdf")
	if _, h, err := pdf.Create(ctx, "notes.md", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		t.Fatalf("create in a global-only directory: %v", err)
	} else {
		h.Close()
	}
	if _, err := os.Stat(filepath.Join(ownDir, "pdf", "notes.md")); err != nil {
		t.Errorf("the new file is not in the agent's layer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(globalDir, "pdf", "notes.md")); err == nil {
		t.Errorf("the new file went to the global layer")
	}
	// chmod of a global file copies it up too.
	if _, err := walk(t, u, "pdf", "README.md").SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(globalDir, "pdf", "README.md")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("chmod reached the global layer: %v %v", fi.Mode(), err)
	}

	// Removing the agent's shadowing file shows the global one again.
	if err := u.Remove(ctx, "shared.md", false); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, walk(t, u, "shared.md")); got != "global version" {
		t.Errorf("after removing the agent's copy: %q, want the global one", got)
	}
	// A global-only name cannot be removed, or renamed, through the union.
	if err := u.Remove(ctx, "shared.md", false); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("removing a global file: %v, want EACCES", err)
	}
	if err := u.Rename(ctx, "shared.md", u, "x.md"); vfs.Errno(err) != syscall.EXDEV {
		t.Errorf("renaming a global file: %v, want EXDEV", err)
	}
	if _, err := u.(vfs.Symlinker).Symlink(ctx, "link.md", "renamed.md"); err != nil {
		t.Errorf("symlink in the union: %v", err)
	} else if target, err := os.Readlink(filepath.Join(ownDir, "link.md")); err != nil || target != "renamed.md" {
		t.Errorf("the symlink in the agent's layer: %q, %v", target, err)
	} else if got, err := walk(t, u, "link.md").(vfs.Readlinker).Readlink(ctx); err != nil || got != "renamed.md" {
		t.Errorf("readlink through the union: %q, %v", got, err)
	}
	if err := os.Remove(filepath.Join(ownDir, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := u.Rename(ctx, "mine.md", u, "renamed.md"); err != nil {
		t.Errorf("renaming the agent's file: %v", err)
	}
	if got := sorted(names(t, u)); !slices.Equal(got, []string{"global.md", "pdf", "renamed.md", "shared.md"}) {
		t.Errorf("listing at the end: %q", got)
	}
}

// Without a creation layer, a union is read-only.
func TestUnionWithoutCreate(t *testing.T) {
	_, a := hostDir(t, map[string]string{"a": "A"})
	_, b := hostDir(t, map[string]string{"b": "B"})
	u := NewUnion([]Layer{{Dir: a}, {Dir: b}})
	if _, _, err := u.Create(ctx, "new", os.O_RDWR|os.O_CREATE, 0o644); vfs.Errno(err) != syscall.EROFS {
		t.Errorf("create: %v, want EROFS", err)
	}
	if _, err := walk(t, u, "b").Open(ctx, os.O_WRONLY); vfs.Errno(err) != syscall.EROFS {
		t.Errorf("open for writing: %v, want EROFS", err)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

func TestApplyNamespace(t *testing.T) {
	homeDir, home := hostDir(t, map[string]string{"agent/.skills/mine.md": "mine", "agent/skills/old.md": "hidden"})
	_, etc := hostDir(t, map[string]string{"skills/global.md": "global"})
	hostSrc, _ := hostDir(t, map[string]string{"data.txt": "host data"})
	tab := New()
	tab.Mount("/home", home)
	tab.Mount("/etc", etc)
	hostDirs := func(p string) (vfs.Node, func(), error) {
		if p != "/srv/data" {
			return nil, nil, os.ErrNotExist
		}
		d, err := diskfs.New(hostSrc)
		if err != nil {
			return nil, nil, err
		}
		return d.Root(), func() { d.Close() }, nil
	}
	good := "# skills\nbind -c /home/agent/.skills /home/agent/skills\nbind -a /etc/skills /home/agent/skills\nbind /srv/data /home/data\n"
	if err := tab.ApplyNamespace(ctx, good, Resolvers{HostDir: hostDirs}); err != nil {
		t.Fatal(err)
	}
	skills := walk(t, tab.Root(), "home", "agent", "skills")
	if got := sorted(names(t, skills)); !slices.Equal(got, []string{"global.md", "mine.md"}) {
		t.Errorf("skills: %q", got)
	}
	if _, h, err := skills.Create(ctx, "new.md", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		t.Fatal(err)
	} else {
		h.Close()
	}
	if _, err := os.Stat(filepath.Join(homeDir, "agent/.skills/new.md")); err != nil {
		t.Errorf("a new skill is not in the agent's layer: %v", err)
	}
	if got := readNode(t, walk(t, tab.Root(), "home", "data", "data.txt")); got != "host data" {
		t.Errorf("a bound host directory: %q", got)
	}
	if _, h, err := walk(t, tab.Root(), "home", "data").Create(ctx, "written", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		t.Errorf("a plain bind is writable: %v", err)
	} else {
		h.Close()
		if _, err := os.Stat(filepath.Join(hostSrc, "written")); err != nil {
			t.Errorf("the file made in the bound directory: %v", err)
		}
	}

	// A bad file is refused whole: the table keeps the good binds.
	for _, bad := range []string{"bind -c /home/agent/.skills\n", "mount tcp:x /y\n", "mount unix:/s relative\n", "bind -z /a /b\n", "bind /home/nothere /home/x\n", "bind relative /home/x\n"} {
		if err := tab.ApplyNamespace(ctx, good+bad, Resolvers{HostDir: hostDirs}); err == nil {
			t.Errorf("%q was applied", bad)
		}
		if tab.NamespaceError() == "" {
			t.Errorf("no error kept for %q", bad)
		}
		if got := sorted(names(t, walk(t, tab.Root(), "home", "agent", "skills"))); !slices.Equal(got, []string{"global.md", "mine.md", "new.md"}) {
			t.Errorf("skills after the refused %q: %q", bad, got)
		}
	}
	// Without the lines, the disk's own directory shows again.
	if err := tab.ApplyNamespace(ctx, "", Resolvers{HostDir: hostDirs}); err != nil {
		t.Fatal(err)
	}
	if got := names(t, walk(t, tab.Root(), "home", "agent", "skills")); !slices.Equal(got, []string{"old.md"}) {
		t.Errorf("skills after the binds were taken away: %q", got)
	}
}

// A mount line serves a server's tree, reached by the Dial given; taking
// the line away lets the server go.
func TestNamespaceMount(t *testing.T) {
	_, remote := hostDir(t, map[string]string{"hello": "from the server"})
	tab := New()
	tab.Mount("/mnt", vfs.NewStaticDir(nil))
	closed := 0
	r := Resolvers{Dial: func(_ context.Context, addr string) (vfs.Node, func(), error) {
		if addr != "unix:/run/other.sock" {
			return nil, nil, os.ErrNotExist
		}
		return remote, func() { closed++ }, nil
	}}
	if err := tab.ApplyNamespace(ctx, "mount unix:/run/other.sock /mnt/other\n", r); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, walk(t, tab.Root(), "mnt", "other", "hello")); got != "from the server" {
		t.Errorf("through the mount: %q", got)
	}
	if err := tab.ApplyNamespace(ctx, "mount unix:/nowhere /mnt/x\n", r); err == nil {
		t.Errorf("an unreachable server was mounted")
	}
	if got := readNode(t, walk(t, tab.Root(), "mnt", "other", "hello")); got != "from the server" {
		t.Errorf("after a refused edit, the mount is gone: %q", got)
	}
	if err := tab.ApplyNamespace(ctx, "", r); err != nil {
		t.Fatal(err)
	}
	if closed != 1 {
		t.Errorf("the server was let go %d times when its line went, want once", closed)
	}
	if _, err := tab.Root().Lookup(ctx, "mnt"); err != nil {
		t.Fatal(err)
	}
	if _, err := walk(t, tab.Root(), "mnt").Lookup(ctx, "other"); err == nil {
		t.Errorf("/mnt/other is still there")
	}
}

// A file of a union names its layer in LayerXattr, which the union keeps;
// a copy up moves it to the creation layer.
func TestUnionLayerName(t *testing.T) {
	_, own := hostDir(t, map[string]string{"mine.md": "mine"})
	_, global := hostDir(t, map[string]string{"global.md": "global", "pdf/README.md": "pdf"})
	u := NewUnion([]Layer{{Dir: own, Create: true, Name: "/own"}, {Dir: global, Name: "/global"}})
	layer := func(names ...string) string {
		t.Helper()
		v, err := walk(t, u, names...).(vfs.Xattrer).GetXattr(ctx, LayerXattr)
		if err != nil {
			t.Fatalf("getxattr %q: %v", names, err)
		}
		return string(v)
	}
	if got := []string{layer("mine.md"), layer("global.md"), layer("pdf", "README.md")}; !slices.Equal(got, []string{"/own", "/global", "/global"}) {
		t.Errorf("layers: %q", got)
	}
	f := walk(t, u, "global.md").(vfs.Xattrer)
	if got, err := f.ListXattr(ctx); err != nil || !slices.Contains(got, LayerXattr) {
		t.Errorf("listxattr: %q, %v", got, err)
	}
	if err := f.SetXattr(ctx, LayerXattr, []byte("/x"), 0); vfs.Errno(err) != syscall.EPERM {
		t.Errorf("setxattr of the layer: %v, want EPERM", err)
	}
	if err := f.RemoveXattr(ctx, LayerXattr); vfs.Errno(err) != syscall.EPERM {
		t.Errorf("removexattr of the layer: %v, want EPERM", err)
	}
	h, err := walk(t, u, "pdf", "README.md").Open(ctx, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got := layer("pdf", "README.md"); got != "/own" {
		t.Errorf("layer after a copy up: %q, want /own", got)
	}
}
