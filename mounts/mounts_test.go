package mounts

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

var ctx = context.Background()

func disk(t *testing.T) vfs.Node {
	t.Helper()
	d, err := diskfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d.Root()
}

func walk(t *testing.T, n vfs.Node, names ...string) vfs.Node {
	t.Helper()
	for _, name := range names {
		var err error
		if n, err = n.Lookup(ctx, name); err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
	}
	return n
}

func names(t *testing.T, dir vfs.Node) []string {
	t.Helper()
	h, err := dir.Open(ctx, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var out []string
	for off := uint64(0); ; {
		es, err := h.(vfs.DirReader).ReadDir(ctx, off)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return out
		}
		for _, e := range es {
			out = append(out, e.Name)
			off = e.Next
		}
	}
}

// TestConformance runs the suite on a disk tree seen through the namespace,
// at a nested mount point below a virtual directory.
func TestConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		tab := New()
		if err := tab.Mount("/a/b", disk(t)); err != nil {
			t.Fatal(err)
		}
		return walk(t, tab.Root(), "a", "b")
	})
}

// tree is /home and /etc on disk, /etc/man built in, /sys reserved.
func tree(t *testing.T) (*Table, vfs.Node) {
	t.Helper()
	tab := New()
	man := vfs.NewStaticDir(map[string]vfs.Node{"page.1": vfs.NewTextFile([]byte("roff"))})
	for p, n := range map[string]vfs.Node{
		"/home": disk(t), "/etc": disk(t), "/etc/man": man, "/sys": vfs.NewStaticDir(nil),
	} {
		if err := tab.Mount(p, n); err != nil {
			t.Fatal(err)
		}
	}
	return tab, tab.Root()
}

func TestListingsShowMountPoints(t *testing.T) {
	_, root := tree(t)
	if got, want := names(t, root), []string{"etc", "home", "sys"}; !slices.Equal(got, want) {
		t.Errorf("root lists %v, want %v", got, want)
	}
	etc := walk(t, root, "etc")
	if _, err := etc.Mkdir(ctx, "conf.d", 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, etc), []string{"man", "conf.d"}; !slices.Equal(got, want) {
		t.Errorf("/etc lists %v, want %v (mount points first)", got, want)
	}
	if _, err := walk(t, etc, "man").Lookup(ctx, "page.1"); err != nil {
		t.Errorf("lookup /etc/man/page.1: %v", err)
	}
}

func TestMountHidesBackendEntry(t *testing.T) {
	tab := New()
	etc := disk(t)
	if _, err := etc.Mkdir(ctx, "man", 0o755); err != nil {
		t.Fatal(err)
	}
	tab.Mount("/etc", etc)
	tab.Mount("/etc/man", vfs.NewStaticDir(nil))
	got := names(t, walk(t, tab.Root(), "etc"))
	if !slices.Equal(got, []string{"man"}) {
		t.Errorf("/etc lists %v, want [man] once", got)
	}
	if n := names(t, walk(t, tab.Root(), "etc", "man")); len(n) != 0 {
		t.Errorf("/etc/man lists %v from the disk, want the mount's empty listing", n)
	}
}

func TestMountPointsAreBusy(t *testing.T) {
	_, root := tree(t)
	etc := walk(t, root, "etc")
	home := walk(t, root, "home")
	for _, tc := range []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"remove /etc/man", etc.Remove(ctx, "man", true), syscall.EBUSY},
		{"rename /etc/man", etc.Rename(ctx, "man", etc, "m2"), syscall.EBUSY},
		{"mkdir /etc/man", mkdirErr(etc, "man"), syscall.EEXIST},
		{"mkdir in /", mkdirErr(root, "x"), syscall.EROFS},
		{"remove /home", root.Remove(ctx, "home", true), syscall.EROFS},
	} {
		if got := vfs.Errno(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.what, got, tc.want)
		}
	}
	if _, _, err := home.Create(ctx, "f", syscall.O_RDWR, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := vfs.Errno(home.Rename(ctx, "f", etc, "f")); got != syscall.EXDEV {
		t.Errorf("rename across mounts: got %v, want EXDEV", got)
	}
	f := walk(t, home, "f")
	if _, err := etc.(vfs.Linker).Link(ctx, f, "f"); vfs.Errno(err) != syscall.EXDEV {
		t.Errorf("link across mounts: got %v, want EXDEV", err)
	}
}

func mkdirErr(dir vfs.Node, name string) error {
	_, err := dir.Mkdir(ctx, name, 0o755)
	return err
}

// TestInodesUniqueAcrossMounts checks the folding: two disk trees whose
// roots may share host inode numbers still differ in the namespace, and
// directory entries agree with Attr.
func TestInodesUniqueAcrossMounts(t *testing.T) {
	_, root := tree(t)
	seen := map[uint64]string{}
	for _, p := range [][]string{{}, {"home"}, {"etc"}, {"etc", "man"}, {"etc", "man", "page.1"}, {"sys"}} {
		a, err := walk(t, root, p...).Attr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[a.Ino]; dup {
			t.Errorf("%v and %s share inode %d", p, other, a.Ino)
		}
		seen[a.Ino] = joinPath(p)
	}
	home := walk(t, root, "home")
	if _, _, err := home.Create(ctx, "f", syscall.O_RDWR, 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := walk(t, home, "f").Attr(ctx)
	h, _ := home.Open(ctx, syscall.O_RDONLY)
	es, _ := h.(vfs.DirReader).ReadDir(ctx, 0)
	h.Close()
	if len(es) != 1 || es[0].Ino != a.Ino {
		t.Errorf("listing of /home gave %+v, want f with inode %d", es, a.Ino)
	}
}

func joinPath(p []string) string {
	s := ""
	for _, e := range p {
		s += "/" + e
	}
	return s
}

// TestResumeAcrossMountEntries reads a listing that mixes mount points and
// backend entries from every offset it handed out.
func TestResumeAcrossMountEntries(t *testing.T) {
	tab := New()
	d := disk(t)
	for _, n := range []string{"a", "b", "c"} {
		d.Mkdir(ctx, n, 0o755)
	}
	tab.Mount("/", d)
	tab.Mount("/m1", vfs.NewStaticDir(nil))
	tab.Mount("/m2", vfs.NewStaticDir(nil))
	h, err := tab.Root().Open(ctx, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	all, _ := h.(vfs.DirReader).ReadDir(ctx, 0)
	for {
		more, _ := h.(vfs.DirReader).ReadDir(ctx, all[len(all)-1].Next)
		if len(more) == 0 {
			break
		}
		all = append(all, more...)
	}
	if len(all) != 5 {
		t.Fatalf("listing has %d entries, want 5: %+v", len(all), all)
	}
	for i, e := range all {
		rest, err := h.(vfs.DirReader).ReadDir(ctx, e.Next)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rest {
			got = append(got, r.Name)
		}
		var want []string
		for _, r := range all[i+1:] {
			want = append(want, r.Name)
		}
		if len(rest) > 0 && !slices.Equal(got, want[:len(got)]) || len(want) > 0 && len(rest) == 0 {
			t.Errorf("resume after %s: got %v, want a prefix of %v", e.Name, got, want)
		}
	}
}

// The table's own directories (those only mount points make) are watched
// while someone watches the table: their entries change only with the
// table, which reports it.
func TestVirtualDirsWatchedWhileWatching(t *testing.T) {
	tab := New()
	if err := tab.Mount("/mnt/a", disk(t)); err != nil {
		t.Fatal(err)
	}
	mnt := walk(t, tab.Root(), "mnt")
	watched := func() bool {
		a, err := mnt.Attr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a.Watched
	}
	if watched() {
		t.Error("/mnt watched while nobody watches the table")
	}
	got := make(chan []vfs.Change, 8)
	stop := tab.Root().(vfs.Watcher).Watch(func(cs []vfs.Change) { got <- cs })
	defer stop()
	if !watched() {
		t.Error("/mnt not watched while the table is")
	}
	if err := tab.Mount("/mnt/b", disk(t)); err != nil {
		t.Fatal(err)
	}
	mntAttr, _ := mnt.Attr(ctx)
	select {
	case cs := <-got:
		if len(cs) != 1 || cs[0].Dir != mntAttr.Ino || cs[0].Name != "b" || cs[0].Attr.Ino == 0 {
			t.Errorf("a mount under /mnt reported %+v, want the entry b of /mnt", cs)
		}
	case <-time.After(5 * time.Second):
		t.Error("a mount under /mnt was not reported")
	}
}
