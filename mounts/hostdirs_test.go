package mounts

import (
	"os"
	"slices"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// plainDir is a tree that says it is the host directory dir.
type plainDir struct {
	vfs.Node
	dir string
}

func (h plainDir) HostDir() (string, bool) { return h.dir, true }

func (h plainDir) OpenHostDir() (*os.File, error) { return os.Open(h.dir) }

func TestHostDirs(t *testing.T) {
	tab := New()
	mount := func(p string, n vfs.Node) {
		t.Helper()
		if err := tab.MountAs(p, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	changes := 0
	stop := tab.OnChange(func() { changes++ })
	mount("/home", plainDir{vfs.NewStaticDir(nil), "/s/home"})
	mount("/workspaces", plainDir{vfs.NewStaticDir(nil), "/s/workspaces"})
	mount("/etc", plainDir{vfs.NewStaticDir(nil), "/s/etc"})
	mount("/sys", vfs.NewStaticDir(nil))
	mount("/workspaces/data", plainDir{vfs.NewStaticDir(nil), "/srv/data"})
	tab.GuardNamespace("/etc/namespace")
	var got []HostDir
	got = tab.HostDirs()
	want := []HostDir{{Path: "/home", Dir: "/s/home"}, {Path: "/workspaces/data", Dir: "/srv/data"}}
	if !slices.EqualFunc(got, want, sameHostDir) {
		t.Errorf("HostDirs = %v, want %v (not /etc: the namespace file is checked; not /workspaces: a mount below; not /sys: synthetic)", got, want)
	}
	tab.Unmount("/workspaces/data")
	got = tab.HostDirs()
	want = []HostDir{{Path: "/home", Dir: "/s/home"}, {Path: "/workspaces", Dir: "/s/workspaces"}}
	if !slices.EqualFunc(got, want, sameHostDir) {
		t.Errorf("after unmounting /workspaces/data: HostDirs = %v, want %v", got, want)
	}
	if changes != 7 {
		t.Errorf("OnChange called %d times, want 7 (5 mounts, the guard, 1 unmount)", changes)
	}
	stop()
	tab.Unmount("/home")
	if changes != 7 {
		t.Errorf("OnChange called after stop")
	}
}

func sameHostDir(a, b HostDir) bool { return a.Path == b.Path && a.Dir == b.Dir }
