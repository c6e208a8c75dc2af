package diskfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// dirFdsUnder counts this process's descriptors of paths under dir.
func dirFdsUnder(t *testing.T, dir string) int {
	t.Helper()
	return testenv.SelfFds(t, func(target string) bool {
		return target == dir || strings.HasPrefix(target, dir+"/")
	})
}

// TestDirDescriptorsBounded holds the nodes of many directories, as the
// kernel does for the directories it caches, and checks that they cost
// at most the cache's descriptors while every one keeps working: made in,
// listed, renamed through the tree, removed while its node lives.
func TestDirDescriptorsBounded(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	must(t, err)
	const limit, count = 8, 300
	diskfs.SetDirDescriptors(f, limit)
	root := f.Root()
	var dirs []vfs.Node
	for i := range count {
		d, err := root.Mkdir(ctx, fmt.Sprintf("d%03d", i), 0o755)
		noErr(t, "Mkdir", err)
		sub, err := d.Mkdir(ctx, "sub", 0o755)
		noErr(t, "Mkdir(sub)", err)
		dirs = append(dirs, d, sub)
	}
	if got := dirFdsUnder(t, dir); got > limit+1 {
		t.Errorf("descriptors under the tree with %d directory nodes: got %d, want at most %d",
			len(dirs), got, limit+1)
	}
	if got := diskfs.OpenDirDescriptors(f); got > limit {
		t.Errorf("open directory descriptors: got %d, want at most %d", got, limit)
	}
	for i, d := range dirs {
		create(t, d, "f", fmt.Sprint(i))
	}
	for i, d := range dirs {
		if got := names(t, d); i%2 == 1 && len(got) != 1 || i%2 == 0 && len(got) != 2 {
			t.Fatalf("listing of directory %d: %q", i, got)
		}
		if got := content(t, lookup(t, d, "f")); got != fmt.Sprint(i) {
			t.Fatalf("file in directory %d: got %q", i, got)
		}
	}

	// Renamed through the tree while closed: the node learns its name.
	noErr(t, "Rename", root.Rename(ctx, "d000", dirs[2], "moved"))
	create(t, dirs[0], "after-move", "x")
	if _, err := os.Stat(filepath.Join(dir, "d001", "moved", "after-move")); err != nil {
		t.Errorf("file made in a directory renamed through the tree: %v", err)
	}

	// Renamed behind the tree's back while closed: ESTALE, and a fresh
	// lookup finds it.
	diskfs.SetDirDescriptors(f, 1)
	for _, d := range dirs[10:20] {
		names(t, d)
	}
	must(t, os.Rename(filepath.Join(dir, "d002"), filepath.Join(dir, "elsewhere")))
	_, err = dirs[4].Attr(ctx)
	wantErrno(t, "Attr of a directory renamed on the host", err, syscall.ESTALE)
	if got := names(t, lookup(t, root, "elsewhere")); len(got) != 2 {
		t.Errorf("listing of the directory looked up afresh: %q", got)
	}

	// Removed while its node lives: still answers, as an open directory
	// does on a local disk, whatever the cache closes meanwhile.
	victim := dirs[7]
	noErr(t, "Remove(f)", victim.Remove(ctx, "f", false))
	noErr(t, "Remove(d003/sub)", dirs[6].Remove(ctx, "sub", true))
	for _, d := range dirs[20:40] {
		names(t, d)
	}
	a, err := victim.Attr(ctx)
	noErr(t, "Attr of a removed directory", err)
	if a.Nlink != 0 {
		t.Errorf("nlink of a removed directory: got %d, want 0", a.Nlink)
	}
	_, err = victim.Mkdir(ctx, "x", 0o755)
	wantErrno(t, "Mkdir in a removed directory", err, syscall.ENOENT)
}
