package mounts

import (
	"context"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"syscall"

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

// HostDirAt is the tree mounted at exactly p where it is a host
// directory (vfs.HostDirer), whatever is mounted below it: what reaches
// that directory from the tree's own hold on it (a session's bind)
// rather than by a path someone may have redirected.
func (t *Table) HostDirAt(p string) (vfs.HostDirer, bool) {
	m := t.mountAt(p)
	if m == nil {
		return nil, false
	}
	hd, ok := m.root.(vfs.HostDirer)
	if ok {
		_, ok = hd.HostDir()
	}
	return hd, ok
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

// HostPath is the host directory of what the node serves (a bind of a
// host directory, a disk tree); a virtual directory has none.
func (n *node) HostPath() (string, bool) {
	if n.virtual() {
		return "", false
	}
	return vfs.HostPath(n.inner)
}

// HostPath is the host directory of a union directory: its creation
// layer's, where new files land, else (a directory only the other layers
// have, or a union without one) the first layer's that has it.
func (u *unionDir) HostPath() (string, bool) {
	if dir, ok := u.created(); ok && dir != nil {
		return vfs.HostPath(dir)
	}
	if first := u.first(); first != nil {
		return vfs.HostPath(first)
	}
	return "", false
}

// HostPath is the host directory that serves the tree's directory p, for
// a process to run in (a /proc session's cwd): a disk tree's, a bound
// host directory's (a namespace bind, a device's --bind), a union's
// creation layer's. Below the last directory the tree finds, the rest of
// p is taken on the host (a symlink, a name that is not there: the host
// says what it is). A directory no host directory serves, such as /sys
// or a device's tree under /mnt, fails with EINVAL.
func (t *Table) HostPath(ctx context.Context, p string) (string, error) {
	p = path.Clean("/" + p)
	var n vfs.Node = t.Root()
	host, found := "", false
	names := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, name := range names {
		if name == "" {
			break // p is /, which no host directory serves
		}
		next, err := n.Lookup(ctx, name)
		forget(n, t.Root())
		if err != nil {
			return "", &fs.PathError{Op: "chdir", Path: p, Err: vfs.Errno(err)}
		}
		n = next
		if dir, ok := vfs.HostPath(n); ok {
			host, found = dir, true
			continue
		}
		if a, err := n.Attr(ctx); err == nil && !a.IsDir() && found {
			forget(n, nil)
			return path.Join(append([]string{host}, names[i:]...)...), nil
		}
		found = false // a virtual directory on the way, or no host's
	}
	forget(n, t.Root())
	if !found {
		return "", &fs.PathError{Op: "chdir", Path: p, Err: syscall.EINVAL}
	}
	return host, nil
}

// forget lets a node walked through go, unless it is keep.
func forget(n, keep vfs.Node) {
	if f, ok := n.(vfs.Forgetter); ok && n != keep {
		f.Forget()
	}
}
