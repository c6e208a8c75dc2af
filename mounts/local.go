package mounts

import (
	"slices"

	"github.com/gsvfs/gsvfs/vfs"
)

// Local declares the paths at or below each prefix the daemon's own: its
// other devices' trees (/mnt), the gateway owner's state (/sys/devices)
// and settings (/sys/config). No view shows them, whatever its patterns,
// and no view shows a mount that serves them under another name (a
// namespace bind or union of /mnt/ID, of /mnt, of /sys or of /), so a
// device's export to its gateway is the device's own tree and nothing it
// reaches through other links. Declaring is for good: there is no
// undeclare, so nothing a peer or a bind does can lift it.
func (t *Table) Local(prefixes ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.local = append(t.local, prefixes...)
}

// hidden reports whether views must not show the path p (clean,
// absolute): it lies at or below a local prefix, or the mount at p serves
// something local.
func (t *Table) hidden(p string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.underLocal(p) {
		return true
	}
	m := t.mounts[p]
	return m != nil && t.reachesLocal(m, map[*mount]bool{})
}

// underLocal reports whether p is at or below a local prefix. t.mu is
// held.
func (t *Table) underLocal(p string) bool {
	return slices.ContainsFunc(t.local, func(l string) bool { return p == l || isBelow(p, l) })
}

// reachesLocal reports whether the mount m serves something local: it
// is local itself, or its root is a directory of this table (a bind, a
// union's layer) from which a local path can be walked to. t.mu is held.
func (t *Table) reachesLocal(m *mount, seen map[*mount]bool) bool {
	if m.local {
		return true
	}
	if seen[m] {
		return false
	}
	seen[m] = true
	return t.nodeReaches(m.root, seen)
}

// nodeReaches reports whether a local path can be walked to from n.
// t.mu is held.
func (t *Table) nodeReaches(n vfs.Node, seen map[*mount]bool) bool {
	switch n := n.(type) {
	case *unionDir:
		return slices.ContainsFunc(n.layers, func(l Layer) bool { return t.nodeReaches(l.Dir, seen) })
	case *node:
		if n.t != t {
			return false
		}
		if n.mnt != nil && t.reachesLocal(n.mnt, seen) {
			return true
		}
		// n's lookups reach every path of the table beneath n.path.
		if slices.ContainsFunc(t.local, func(l string) bool { return l == n.path || isBelow(l, n.path) || isBelow(n.path, l) }) {
			return true
		}
		for mp, m := range t.mounts {
			if (mp == n.path || isBelow(mp, n.path)) && t.reachesLocal(m, seen) {
				return true
			}
		}
	}
	return false
}
