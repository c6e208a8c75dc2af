package mounts

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/gsvfs/gsvfs/internal/bounds"
	"github.com/gsvfs/gsvfs/vfs"
)

// view is what one client of the table may see: everything but the paths
// its patterns refuse. A device exports its tree to a gateway through a
// view, so that `**/.ssh/**` is never reachable from the gateway,
// whatever the request: a refused name is not found, not listed, and
// cannot be made, renamed or renamed onto (EACCES).
//
// A place is refused by what it is on the host, not by the name a
// request reaches it by: where a host directory serves a path, every
// name the table gives that host path (a bind of a parent, a second
// bind, a namespace bind of a tree) is matched, so a second name does not
// reach what the first one refuses. And a directory that holds a refused
// path cannot be renamed, so a rename cannot give it a new name either.
type view struct {
	t        *Table
	patterns []string
	lower    []string // the patterns in lower case
	// roots are the host directories mounted in the table, read again
	// after the table changes (stale) or a root moved on the host.
	mu    sync.Mutex
	roots []HostDir
	stale bool
	// warn says why a rename was refused where the client cannot see it.
	warn *bounds.RateLog
}

// maxRenameScan bounds the entries a rename through a view looks
// through for refused paths; a bigger directory is refused (EACCES).
const maxRenameScan = 100_000

// Refusing returns the root of the table as seen by a client that must
// not reach the paths matching patterns (doublestar syntax, matched
// against the path without its leading slash, such as
// home/me/.ssh/id_ed25519).
func (t *Table) Refusing(patterns []string) (vfs.Node, error) {
	for _, p := range patterns {
		if !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("bad refuse pattern %q", p)
		}
	}
	v := &view{t: t, patterns: slices.Clone(patterns), stale: true,
		warn: bounds.NewRateLog(slog.Default(), 10*time.Second)}
	for _, p := range patterns {
		v.lower = append(v.lower, strings.ToLower(p))
	}
	t.OnChange(func() { v.mu.Lock(); v.stale = true; v.mu.Unlock() })
	root := t.nodeAt("/")
	root.view = v
	return root, nil
}

// matches reports whether p (a clean absolute path) matches a pattern,
// in any case too: a case-insensitive disk (macOS's, by default) finds
// .ssh when asked for .SSH.
func (v *view) matches(p string) bool {
	rel := strings.TrimPrefix(path.Clean(p), "/")
	low := strings.ToLower(rel)
	for i, pat := range v.patterns {
		if ok, _ := doublestar.Match(pat, rel); ok {
			return true
		}
		if low == rel && v.lower[i] == pat {
			continue // the same match again
		}
		if ok, _ := doublestar.Match(v.lower[i], low); ok {
			return true
		}
	}
	return false
}

// refuses reports whether p (a clean absolute path) is hidden by name or
// is local to the table (Local).
func (v *view) refuses(p string) bool { return v != nil && (v.matches(p) || v.t.hidden(p)) }

// refusesIn reports whether the entry name of the directory at dir,
// which is host on the host ("" where no host directory serves it), is
// hidden under any of its names.
func (v *view) refusesIn(dir, host, name string) bool {
	if v == nil {
		return false
	}
	p := path.Join(dir, name)
	if v.refuses(p) {
		return true
	}
	if host == "" {
		return false
	}
	names := v.treeNames(path.Join(host, name))
	return slices.ContainsFunc(names, func(n string) bool { return n != p && v.matches(n) })
}

// treeNames lists the paths of the table that serve the host path host:
// one for each mounted host directory it lies in. A host path in none of
// them means a root moved on the host: the roots are read again.
func (v *view) treeNames(host string) []string {
	for again := false; ; again = true {
		var out []string
		for _, r := range v.hostRoots(again) {
			if rest, in := strings.CutPrefix(host, r.Dir+"/"); in {
				out = append(out, path.Join(r.Path, rest))
			}
		}
		if len(out) > 0 || again {
			return out
		}
	}
}

// hostRoots returns the mounted host directories, read afresh when the
// table changed or fresh says so.
func (v *view) hostRoots(fresh bool) []HostDir {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stale || fresh {
		v.roots, v.stale = v.t.hostRoots(), false
	}
	return v.roots
}

// hostRoots lists every mount whose root knows where it is on the host.
func (t *Table) hostRoots() []HostDir {
	t.mu.RLock()
	roots := make(map[string]vfs.Node, len(t.mounts))
	for p, m := range t.mounts {
		roots[p] = m.root
	}
	t.mu.RUnlock()
	var out []HostDir
	for _, p := range slices.Sorted(maps.Keys(roots)) {
		if hp, ok := roots[p].(vfs.HostPather); ok {
			if dir, ok := hp.HostPath(); ok {
				out = append(out, HostDir{Path: p, Dir: dir})
			}
		}
	}
	return out
}

// hostPath is where the host has the directory n, when its view needs to
// know ("" otherwise).
func (n *node) hostPath() string {
	if n.view == nil {
		return ""
	}
	hp, ok := n.inner.(vfs.HostPather)
	if !ok {
		return ""
	}
	dir, _ := hp.HostPath()
	return dir
}

// refuses reports whether n's view hides its entry name.
func (n *node) refuses(name string) bool {
	return n.view.refusesIn(n.path, n.hostPath(), name)
}

// childMounts lists the mount points beneath n that its view shows.
func (n *node) childMounts() []string {
	names := n.t.childMounts(n.path)
	return slices.DeleteFunc(names, func(name string) bool { return n.view.refuses(path.Join(n.path, name)) })
}

// renameRefused fails (EACCES) a rename through a view of a refused
// name, onto one, or of a directory holding one, on either side (an
// exchange moves both).
func (n *node) renameRefused(ctx context.Context, oldName string, to *node, newName string, flags uint32) error {
	if n.view == nil {
		return nil
	}
	if n.refuses(oldName) || to.refuses(newName) {
		return vfs.Error("rename", path.Join(n.path, oldName), syscall.EACCES)
	}
	budget := maxRenameScan
	if n.holdsRefused(ctx, oldName, &budget) {
		return n.renameRefusal(oldName, budget)
	}
	if flags&vfs.RenameExchange != 0 && to.holdsRefused(ctx, newName, &budget) {
		return to.renameRefusal(newName, budget)
	}
	return nil
}

// renameRefusal is the EACCES of a rename of the directory name of n,
// which holds a refused path or, with the budget spent, has more entries
// than a rename looks through: that one is logged, as nothing else tells
// the user why mv of a big tree (node_modules) fails.
func (n *node) renameRefusal(name string, budget int) error {
	p := path.Join(n.path, name)
	if budget < 0 {
		n.view.warn.Warn("rename scan", "rename refused: the directory holds more entries than a rename through the export looks through for refused paths",
			"path", p, "limit", maxRenameScan)
	}
	return vfs.Error("rename", p, syscall.EACCES)
}

// holdsRefused reports whether the entry name of n is a directory with
// a refused path somewhere beneath it, looking through at most budget
// entries; a directory too big to look through counts as holding one.
func (n *node) holdsRefused(ctx context.Context, name string, budget *int) bool {
	if n.virtual() {
		return false
	}
	inner, err := n.inner.Lookup(ctx, name)
	if err != nil {
		return false // nothing there: the rename itself will say so
	}
	a, err := inner.Attr(ctx)
	if err != nil || !a.IsDir() {
		return false
	}
	dir := n.child(name, inner)
	h, err := inner.Open(ctx, 0)
	if err != nil {
		return true
	}
	defer h.Close()
	dr, ok := h.(vfs.DirReader)
	if !ok {
		return true
	}
	host := dir.hostPath()
	for off := uint64(0); ; {
		entries, err := dr.ReadDir(ctx, off)
		if err != nil {
			return true
		}
		if len(entries) == 0 {
			return false
		}
		for _, e := range entries {
			if *budget--; *budget < 0 || dir.view.refusesIn(dir.path, host, e.Name) {
				return true
			}
			if (e.Type == 0 || e.Type == syscall.S_IFDIR) && dir.holdsRefused(ctx, e.Name, budget) {
				return true
			}
			off = e.Next
		}
	}
}
