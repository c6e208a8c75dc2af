package mounts

import (
	"context"
	"os"
	"slices"
	"syscall"
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
	tab.GuardNamespace("/etc/namespace", nil)
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

// pathDir is a directory that says where the host has it.
type pathDir struct {
	vfs.Node
	dir string
}

func (h pathDir) HostPath() (string, bool) { return h.dir, true }

func pathTree(dir string, children map[string]vfs.Node) pathDir {
	return pathDir{vfs.NewStaticDir(children), dir}
}

// HostPath maps a path of the tree to the host directory that serves it,
// through binds, unions and virtual directories; a path no host
// directory serves is EINVAL.
func TestTableHostPath(t *testing.T) {
	tab := New()
	mount := func(p string, n vfs.Node) {
		t.Helper()
		if err := tab.MountAs(p, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	mount("/workspaces", pathTree("/s/workspaces", map[string]vfs.Node{"app": pathTree("/s/workspaces/app", nil)}))
	mount("/workspaces/data", pathTree("/srv/data", map[string]vfs.Node{
		"sub":  pathTree("/srv/data/sub", nil),
		"link": vfs.NewTextFile([]byte("not a directory")),
		"syn":  vfs.NewStaticDir(nil),
	}))
	mount("/sys", vfs.NewStaticDir(map[string]vfs.Node{"config": vfs.NewStaticDir(nil)}))
	mount("/deep/er", pathTree("/h/er", nil))
	mount("/skills", NewUnion([]Layer{
		{Dir: pathTree("/own", nil), Create: true},
		{Dir: pathTree("/global", map[string]vfs.Node{"pdf": pathTree("/global/pdf", nil)})},
	}))
	for _, tc := range []struct {
		p, want string
		errno   syscall.Errno
	}{
		{"/workspaces", "/s/workspaces", 0},
		{"/workspaces/app", "/s/workspaces/app", 0},
		{"/workspaces/data", "/srv/data", 0},
		{"/workspaces/data/sub/", "/srv/data/sub", 0},
		{"/workspaces/data/link/x", "/srv/data/link/x", 0}, // the host says what it is
		{"/workspaces/data/syn", "", syscall.EINVAL},
		{"/workspaces/nope", "", syscall.ENOENT},
		{"/deep/er", "/h/er", 0},
		{"/deep", "", syscall.EINVAL},
		{"/sys", "", syscall.EINVAL},
		{"/sys/config", "", syscall.EINVAL},
		{"/", "", syscall.EINVAL},
		{"/skills", "/own", 0},
		{"/skills/pdf", "/global/pdf", 0},
	} {
		got, err := tab.HostPath(context.Background(), tc.p)
		if got != tc.want || vfs.Errno(err) != tc.errno && !(tc.errno == 0 && err == nil) {
			t.Errorf("HostPath(%s) = %q, %v; want %q, errno %d", tc.p, got, err, tc.want, tc.errno)
		}
	}
}
