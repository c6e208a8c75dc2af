//go:build linux

package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hugelgupf/p9/p9"
)

// statfs over 9P reports one filesystem id for the whole tree (f_fsid of a
// kernel 9P mount): not 0, the same after the daemon restarts on the same
// state directory (here a `gsvfs mount`, then a `gsvfs serve`), another
// for another state directory. p9's client, an independent one, asks.
func TestStatfsFsidStable(t *testing.T) {
	base := t.TempDir()
	rootA, rootB := filepath.Join(base, "a"), filepath.Join(base, "b")

	m := mountAt(t, rootA, filepath.Join(base, "mnt"))
	t.Cleanup(func() { m.stop(t) })
	first := treeFsid(t, rootA)
	m.stop(t)

	s := launch(t, &daemon{Root: rootA}, "serve", "--root", rootA)
	t.Cleanup(func() { s.stop(t) })
	again := treeFsid(t, rootA)
	s.stop(t)

	o := launch(t, &daemon{Root: rootB}, "serve", "--root", rootB)
	t.Cleanup(func() { o.stop(t) })
	other := treeFsid(t, rootB)
	o.stop(t)

	if first == 0 {
		t.Errorf("statfs f_fsid of the tree: 0, want an id")
	}
	if again != first {
		t.Errorf("statfs f_fsid after a restart on the same state directory: %#x, before %#x", again, first)
	}
	if other == first {
		t.Errorf("statfs f_fsid of another state directory: %#x, the same as the first's", other)
	}
}

// treeFsid asks the daemon serving root for the filesystem id of its
// root, /workspaces and /proc, and fails unless the three agree.
func treeFsid(t *testing.T, root string) uint64 {
	t.Helper()
	nc, err := net.Dial("unix", filepath.Join(root, socketName))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := p9.NewClient(nc)
	if err != nil {
		nc.Close()
		t.Fatalf("p9.NewClient: %v", err)
	}
	defer cl.Close()
	top, err := cl.Attach("") // the whole tree
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	var ids []uint64
	for _, p := range []string{"", "workspaces", "proc"} {
		var names []string
		if p != "" {
			names = strings.Split(p, "/")
		}
		_, f, err := top.Walk(names)
		if err != nil {
			t.Fatalf("walk to /%s: %v", p, err)
		}
		st, err := f.StatFS()
		f.Close()
		if err != nil {
			t.Fatalf("statfs /%s: %v", p, err)
		}
		ids = append(ids, st.FSID)
	}
	if ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("statfs f_fsid of /, /workspaces and /proc: %#x; want one id for the tree", ids)
	}
	return ids[0]
}
