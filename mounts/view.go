package mounts

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/gsvfs/gsvfs/vfs"
)

// view is what one client of the table may see: everything but the paths
// its patterns refuse. A device exports its tree to a gateway through a
// view, so that `**/.ssh/**` is never reachable from the gateway,
// whatever the request: a refused name is not found, not listed, and
// cannot be made or renamed onto (EACCES).
type view struct {
	patterns []string
}

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
	root := t.nodeAt("/")
	root.view = &view{patterns: slices.Clone(patterns)}
	return root, nil
}

// refuses reports whether p (a clean absolute path) is hidden.
func (v *view) refuses(p string) bool {
	if v == nil {
		return false
	}
	rel := strings.TrimPrefix(path.Clean(p), "/")
	for _, pat := range v.patterns {
		if ok, _ := doublestar.Match(pat, rel); ok {
			return true
		}
	}
	return false
}

// childMounts lists the mount points beneath n that its view shows.
func (n *node) childMounts() []string {
	names := n.t.childMounts(n.path)
	return slices.DeleteFunc(names, func(name string) bool { return n.view.refuses(path.Join(n.path, name)) })
}
