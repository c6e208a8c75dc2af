package mounts

import (
	"context"
	"maps"
	"os"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// fakeHost serves each host directory /srv/NAME as an empty directory of
// its own (any other is not there), counting opens and closes by NAME.
type fakeHost struct {
	opened, closed map[string]int
	roots          map[string]vfs.Node // the last tree of each
}

func newFakeHost() *fakeHost {
	return &fakeHost{opened: map[string]int{}, closed: map[string]int{}, roots: map[string]vfs.Node{}}
}

func (h *fakeHost) dir(p string) (vfs.Node, func(), error) {
	if p == "/srv/missing" {
		return nil, nil, os.ErrNotExist
	}
	h.opened[p]++
	root := vfs.NewStaticDir(nil)
	h.roots[p] = root
	return root, func() { h.closed[p]++ }, nil
}

// check fails unless opens and closes are as wanted, by directory.
func (h *fakeHost) check(t *testing.T, step string, opened, closed map[string]int) {
	t.Helper()
	if !maps.Equal(h.opened, opened) || !maps.Equal(h.closed, closed) {
		t.Errorf("%s: opened %v, closed %v; want opened %v, closed %v", step, h.opened, h.closed, opened, closed)
	}
}

// An apply changes only what the text changed: a line that stays keeps
// its bind (the same mount, nothing opened again), a line taken away
// closes what it opened once, a changed line closes the old and opens the
// new, and a refused text leaves the table and what it holds as they were.
func TestApplyNamespaceDiff(t *testing.T) {
	tab := New()
	if err := tab.Mount("/home", vfs.NewStaticDir(nil)); err != nil {
		t.Fatal(err)
	}
	h := newFakeHost()
	r := Resolvers{HostDir: h.dir}
	apply := func(text string) error { return tab.ApplyNamespace(context.Background(), text, r) }
	served := func(step, p, dir string) {
		t.Helper()
		m := tab.mountAt(p)
		if m == nil || m.root != h.roots[dir] {
			t.Errorf("%s: %s does not serve %s's tree", step, p, dir)
		}
	}

	if err := apply("bind /srv/a /home/a\n"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "first apply", map[string]int{"/srv/a": 1}, map[string]int{})
	first := tab.mountAt("/home/a")

	if err := apply("# a comment\n\nbind /srv/a /home/a\n"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "a comment added", map[string]int{"/srv/a": 1}, map[string]int{})
	if tab.mountAt("/home/a") != first {
		t.Errorf("a line that stays was mounted again")
	}

	if err := apply("bind /srv/b /home/b\nbind /srv/a /home/a\n"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "a line added before", map[string]int{"/srv/a": 1, "/srv/b": 1}, map[string]int{})
	served("a line added before", "/home/a", "/srv/a")
	served("a line added before", "/home/b", "/srv/b")

	if err := apply("bind /srv/a /home/a\n"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "a line removed", map[string]int{"/srv/a": 1, "/srv/b": 1}, map[string]int{"/srv/b": 1})
	if tab.mountAt("/home/b") != nil {
		t.Errorf("/home/b is still mounted after its line went")
	}

	if err := apply("bind /srv/c /home/a\n"); err != nil {
		t.Fatal(err)
	}
	h.check(t, "a line changed", map[string]int{"/srv/a": 1, "/srv/b": 1, "/srv/c": 1}, map[string]int{"/srv/a": 1, "/srv/b": 1})
	served("a line changed", "/home/a", "/srv/c")

	refused := "bind /srv/c /home/a\nbind /srv/d /home/d\nbind /srv/missing /home/m\n"
	if err := apply(refused); err == nil {
		t.Fatalf("a text binding a missing directory was applied")
	}
	h.check(t, "a refused text", map[string]int{"/srv/a": 1, "/srv/b": 1, "/srv/c": 1, "/srv/d": 1},
		map[string]int{"/srv/a": 1, "/srv/b": 1, "/srv/d": 1})
	served("a refused text", "/home/a", "/srv/c")
	if tab.mountAt("/home/d") != nil {
		t.Errorf("/home/d of the refused text is mounted")
	}

	if err := apply(""); err != nil {
		t.Fatal(err)
	}
	h.check(t, "every line removed", h.opened, h.opened) // each closed once
	if got := tab.List(); len(got) != 1 {
		t.Errorf("mounts left: %v", got)
	}
}

// A line changed before others re-makes them, since they may walk through
// its bind, but opens nothing again for those that stay.
func TestApplyNamespaceDiffDependent(t *testing.T) {
	tab := New()
	h := newFakeHost()
	inner := map[string]vfs.Node{"sub": vfs.NewStaticDir(nil)}
	r := Resolvers{HostDir: func(p string) (vfs.Node, func(), error) {
		if p == "/srv/x" || p == "/srv/y" {
			h.opened[p]++
			return vfs.NewStaticDir(inner), func() { h.closed[p]++ }, nil
		}
		return h.dir(p)
	}}
	apply := func(text string) {
		t.Helper()
		if err := tab.ApplyNamespace(context.Background(), text, r); err != nil {
			t.Fatal(err)
		}
	}
	apply("bind /srv/x /w\nbind /w/sub /v\nbind /srv/a /u\n")
	apply("bind /srv/y /w\nbind /w/sub /v\nbind /srv/a /u\n")
	h.check(t, "the first line changed", map[string]int{"/srv/x": 1, "/srv/y": 1, "/srv/a": 1}, map[string]int{"/srv/x": 1})
	m := tab.mountAt("/v")
	if n, ok := m.root.(*node); !ok || n.path != "/w/sub" || n.mnt != tab.mountAt("/w") {
		t.Errorf("/v is not /w/sub through the new bind of /w: %#v", m.root)
	}
}
