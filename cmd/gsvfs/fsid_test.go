//go:build linux

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hugelgupf/p9/p9"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon"
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
	nc, err := net.Dial("unix", gsvfsd.Socket(root).Addr)
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

// The same through Linux's own 9P client: statfs(2) on the kernel's mount
// of the tree (in vm9p's guest, see TestKernel9P) gives the id, not 0, at
// the root, in a stored tree and in /proc, again after a restart, and
// another for another state directory.
func TestStatfsFsidKernel9P(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; vm9p runs qemu as root")
	}
	runner := k9Runner(t)
	base := t.TempDir()
	script := filepath.Join(base, "fsid.sh")
	if err := os.WriteFile(script, []byte("stat -f -c %i /mnt/9p /mnt/9p/workspaces /mnt/9p/proc\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsid := func(root string) string {
		t.Helper()
		d := launch(t, &daemon{Root: root}, "serve", "--root", root)
		defer d.stop(t)
		out, err := exec.Command(runner, "--socket", gsvfsd.Socket(root).Addr, "--opts", "uname=root",
			"--timeout", "300", script).CombinedOutput()
		ids := strings.Fields(string(out))
		if err != nil || len(ids) != 3 {
			t.Fatalf("statfs in the guest: %v\n%s", err, out)
		}
		if ids[1] != ids[0] || ids[2] != ids[0] {
			t.Errorf("f_fsid of /, /workspaces and /proc on the kernel's mount: %q; want one id", ids)
		}
		return ids[0]
	}
	rootA := filepath.Join(base, "a")
	first, again, other := fsid(rootA), fsid(rootA), fsid(filepath.Join(base, "b"))
	if strings.Trim(first, "0") == "" {
		t.Errorf("f_fsid on the kernel's 9P mount: %s, want an id", first)
	}
	if again != first || other == first {
		t.Errorf("f_fsid: %s, after a restart %s, another state directory %s; want the first two alike, the third not", first, again, other)
	}
}
