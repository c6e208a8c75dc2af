package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/sysfs"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// source is the tree a FUSE mount serves: built here from the state
// directory, or reached over 9P from a daemon that already serves it.
type source struct {
	tree  vfs.Node
	name  string // what the mount serves, for messages
	close func()
	// addEdge lists an edge of a local tree in its /sys/stats; nil if
	// remote.
	addEdge func(name string, stats func() sysfs.Edge)
	// table is a local tree's mount table; nil if remote.
	table *mounts.Table
	// mounted records where the tree is mounted, for its sessions, and
	// endSessions ends them before an unmount (their mount namespaces
	// hold the mount); both nil if remote.
	mounted     func(dir string)
	endSessions func()
}

// openSource picks the tree for a mount: --server's, else the running
// daemon's on the state directory's socket, else a new local tree, which
// is then offered on that socket for later mounts.
func openSource(f mountFlags) (*source, error) {
	if f.server != "" {
		a, err := ninep.ParseAddress(f.server)
		if err != nil {
			return nil, err
		}
		return remoteSource(a)
	}
	root, err := gsvfsd.PrepareRoot(f.root)
	if err != nil {
		return nil, err
	}
	sock := gsvfsd.Socket(root)
	if serverAnswers(sock) {
		if f.kernelBinds {
			return nil, fmt.Errorf("--kernel-binds: a daemon already serves %s (socket %s); the mount that serves the state directory lays the binds, so unmount the others first or mount without it", root, sock.Addr)
		}
		slog.Info("a daemon already serves the state directory; attaching to it", "socket", sock.Addr)
		return remoteSource(sock)
	}
	tree, err := buildTree(root, gsvfsd.Options{Self: defaultDevice, Sessions: f.sessions.config(), Refuse: gsvfsd.DefaultRefused,
		Explicit: f.sessions.explicit, Facts: []sysfs.ConfigKey{
			gsvfsd.Fact("root", root), gsvfsd.Fact("device", defaultDevice),
			gsvfsd.Fact("passthrough", strconv.FormatBool(!f.noPassthrough)),
			gsvfsd.Fact("watch", strconv.FormatBool(!f.noWatch)),
			gsvfsd.Fact("kernel-binds", strconv.FormatBool(f.kernelBinds)),
			gsvfsd.Fact("max-open-per-user", strconv.FormatInt(f.maxOpenUser, 10)),
		}})
	if err != nil {
		return nil, err
	}
	src := &source{tree: tree.Root, name: root, close: func() { closeTree(tree) }, addEdge: tree.AddEdgeStats,
		table: tree.Table, mounted: tree.MountedAt, endSessions: tree.EndSessions}
	srv, where, err := startNinep(tree, []ninep.Address{sock})
	if err != nil {
		// The mount works without it; only attaching more mounts does not.
		slog.Warn("not serving 9P; other mounts cannot attach to this daemon", "err", err)
		return src, nil
	}
	tree.AddEdge("9p "+strings.Join(where, ","), srv)
	src.close = func() { stopNinep(srv); closeTree(tree) }
	return src, nil
}

// remoteSource is the tree of the server at a, which must answer now;
// the mount outlives the server's restarts (redialTree).
func remoteSource(a ninep.Address) (*source, error) {
	root, stop, err := redialTree(a)
	if err != nil {
		return nil, err
	}
	return &source{tree: root, name: a.String(), close: stop}, nil
}
