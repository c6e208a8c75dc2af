//go:build linux

package mounts

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// A change made in a disk tree (a watched one: Linux) mounted in the table has been handed on
// through the table when the table's fence returns: sooner than the
// disk tree's batch would go out by itself.
func TestFenceThroughTable(t *testing.T) {
	dir := t.TempDir()
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	tab := New()
	if err := tab.Mount("/home", d.Root()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	heard := map[string]bool{}
	w := tab.Root().(vfs.Watcher)
	defer w.Watch(func(cs []vfs.Change) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			heard[c.Name] = true
		}
	})()
	walk(t, tab.Root(), "home") // an edge holds the directory: watched
	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.Fence(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := heard[name]
		mu.Unlock()
		if !got {
			t.Fatalf("%s, made before the table's fence, not handed on when it returned", name)
		}
	}
}
