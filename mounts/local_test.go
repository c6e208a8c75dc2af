package mounts

import (
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// A view never shows the table's local paths, under their own names or
// any other a bind or union gives them, whatever its patterns; the
// table's own root still shows everything.
func TestViewHidesLocalPaths(t *testing.T) {
	tab := New()
	device := vfs.NewStaticDir(map[string]vfs.Node{"proc": vfs.NewStaticDir(nil)})
	sys := vfs.NewStaticDir(map[string]vfs.Node{"config": vfs.NewStaticDir(nil), "version": vfs.NewTextFile([]byte("v"))})
	for p, n := range map[string]vfs.Node{"/workspaces": disk(t), "/mnt": vfs.NewStaticDir(nil),
		"/mnt/x": device, "/sys": sys, "/sys/devices": vfs.NewStaticDir(nil)} {
		if err := tab.Mount(p, n); err != nil {
			t.Fatal(err)
		}
	}
	tab.Local("/mnt", "/sys/devices", "/sys/config")
	view, err := tab.Refusing(nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := "bind /mnt/x /workspaces/x\nbind /mnt /workspaces/m\nbind /sys /workspaces/s\n" +
		"bind -c /workspaces/w /workspaces/u\nbind -a /mnt/x /workspaces/u\n"
	if _, err := walk(t, tab.Root(), "workspaces").Mkdir(ctx, "w", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := tab.ApplyNamespace(ctx, ns, Resolvers{}); err != nil {
		t.Fatal(err)
	}
	if got := names(t, view); slices.Contains(got, "mnt") {
		t.Errorf("the view lists /mnt: %v", got)
	}
	if got := names(t, walk(t, view, "sys")); !slices.Equal(got, []string{"version"}) {
		t.Errorf("the view lists %v in /sys, want [version]", got)
	}
	if got := names(t, walk(t, view, "workspaces")); !slices.Equal(got, []string{"w"}) {
		t.Errorf("the view lists %v in /workspaces, want only the disk's own [w]", got)
	}
	for _, p := range [][]string{{"mnt"}, {"sys", "devices"}, {"sys", "config"}, {"workspaces", "x"},
		{"workspaces", "m"}, {"workspaces", "s"}, {"workspaces", "u"}} {
		dir := walk(t, view, p[:len(p)-1]...)
		if _, err := dir.Lookup(ctx, p[len(p)-1]); vfs.Errno(err) != syscall.ENOENT {
			t.Errorf("lookup of %v through the view: %v, want ENOENT", p, err)
		}
		if _, err := dir.Mkdir(ctx, p[len(p)-1], 0o755); err == nil {
			t.Errorf("mkdir of %v through the view succeeded", p)
		}
	}
	// A bind made at a local path is as hidden; a refusal list cannot
	// bring any of it back, as it only ever takes away.
	if _, _, err := walk(t, view, "workspaces", "w").Create(ctx, "f", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		t.Errorf("the disk's own directory is not writable through the view: %v", err)
	}
	for _, p := range [][]string{{"mnt", "x", "proc"}, {"workspaces", "x", "proc"},
		{"workspaces", "s", "devices"}, {"workspaces", "u", "proc"}} {
		walk(t, tab.Root(), p...)
	}
}
