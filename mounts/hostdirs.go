package mounts

import (
	"maps"
	"slices"

	"github.com/gsvfs/gsvfs/vfs"
)

// HostDir is a mount that is a host directory served as it is: nothing
// else is mounted below it and no file in it is checked on its way (the
// namespace file), so the host's kernel could serve it in the table's
// place with the same result.
type HostDir struct {
	Path string // where it is mounted in the table
	Dir  string // the host directory
	// Tree is the tree mounted there, which opens the host directory
	// from its own hold on it rather than by Dir.
	Tree vfs.HostDirer
}

// HostDirs lists the mounts that are plain host directories, in path
// order (see HostDir).
func (t *Table) HostDirs() []HostDir {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []HostDir
	for _, p := range slices.Sorted(maps.Keys(t.mounts)) {
		hd, ok := t.mounts[p].root.(vfs.HostDirer)
		if !ok || t.composedBelow(p) {
			continue
		}
		if dir, ok := hd.HostDir(); ok {
			out = append(out, HostDir{Path: p, Dir: dir, Tree: hd})
		}
	}
	return out
}

// composedBelow reports whether something the table adds lies below the
// mount point p: another mount, or the guarded namespace file. t.mu is
// held.
func (t *Table) composedBelow(p string) bool {
	if t.nsFile != "" && isBelow(t.nsFile, p) {
		return true
	}
	for mp := range t.mounts {
		if mp != p && isBelow(mp, p) {
			return true
		}
	}
	return false
}

// OnChange calls fn, from the goroutine that changed the table, after each
// mount and unmount, until stop is called.
func (t *Table) OnChange(fn func()) (stop func()) {
	id, _ := t.changes.Add(func([]string) { fn() })
	return func() { t.changes.Remove(id) }
}
