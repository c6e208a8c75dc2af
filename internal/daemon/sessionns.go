package daemon

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/shelld"
)

// treePaths are the places of the tree a session's commands see at their
// tree paths (gsvfs-proc(7), PATHS): /workspaces and what is bound below
// it. /etc, /home, /proc, /sys and /dev stay the host's, which programs
// need as they are.
var treePaths = []string{"/workspaces"}

// sessionNamespace tells each session, as it starts, which host
// directories serve the tree's paths now (binds change with
// /etc/namespace) and where the whole tree is mounted on this machine.
func sessionNamespace(t *mounts.Table, root string, mounted *atomic.Pointer[string]) func() shelld.Namespace {
	return func() shelld.Namespace {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var ns shelld.Namespace
		if at := mounted.Load(); at != nil {
			ns.Tree = *at
		}
		for _, p := range bindPlaces(t) {
			dir, err := t.HostPath(ctx, p)
			if err != nil {
				continue
			}
			// A mount point is made where the state directory's
			// own tree lies under it (the tree shows one there
			// anyway), never in a host directory of someone's.
			above, _ := t.HostPath(ctx, path.Dir(p))
			mk := path.Dir(p) == "/" || strings.HasPrefix(above+"/", filepath.Clean(root)+"/")
			b := shelld.Bind{Path: p, Dir: dir, Make: mk}
			if hd, ok := t.HostDirAt(p); ok {
				b.Open = hd.OpenHostDir // never dir walked again
			}
			ns.Binds = append(ns.Binds, b)
		}
		for _, at := range FUSEMounts() {
			if at != ns.Tree {
				ns.Detach = append(ns.Detach, at)
			}
		}
		if ns.Tree != "" {
			// Devices' trees have no host directory but the mount's.
			// The mount point is the mounter's own path, and mnt the
			// tree's directory, which no user makes a symlink.
			mnt := filepath.Join(ns.Tree, "mnt")
			ns.Binds = append(ns.Binds, shelld.Bind{Path: "/mnt", Dir: mnt, IfEmpty: true,
				Open: func() (*os.File, error) { return os.Open(mnt) }})
		}
		return ns
	}
}

// bindPlaces are treePaths and the mount points below them, parents
// first.
func bindPlaces(t *mounts.Table) []string {
	places := append([]string(nil), treePaths...)
	for _, e := range t.List() { // in path order
		for _, top := range treePaths {
			if strings.HasPrefix(e.Path, top+"/") && path.Clean(e.Path) == e.Path {
				places = append(places, e.Path)
			}
		}
	}
	return places
}
