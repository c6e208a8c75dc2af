package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

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
	// edges lists a local tree's edges in its /sys/stats; nil if remote.
	edges *edgeList
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
	root, err := prepareRoot(f.root)
	if err != nil {
		return nil, err
	}
	sock := defaultSocket(root)
	if serverAnswers(sock) {
		if f.kernelBinds {
			return nil, fmt.Errorf("--kernel-binds: a daemon already serves %s (socket %s); the mount that serves the state directory lays the binds, so unmount the others first or mount without it", root, sock.Addr)
		}
		slog.Info("a daemon already serves the state directory; attaching to it", "socket", sock.Addr)
		return remoteSource(sock)
	}
	tree, err := buildTree(root, treeOptions{self: defaultDevice, sessions: f.sessions.config(), refuse: defaultRefused,
		explicit: f.sessions.explicit, facts: []sysfs.ConfigKey{
			fact("root", root), fact("device", defaultDevice),
			fact("passthrough", strconv.FormatBool(!f.noPassthrough)),
			fact("watch", strconv.FormatBool(!f.noWatch)),
			fact("kernel-binds", strconv.FormatBool(f.kernelBinds)),
			fact("max-open-per-user", strconv.FormatInt(f.maxOpenUser, 10)),
		}})
	if err != nil {
		return nil, err
	}
	src := &source{tree: tree.root, name: root, close: tree.close, edges: tree.edges, table: tree.table,
		mounted: func(dir string) { tree.mounted.Store(&dir) }, endSessions: tree.endSessions}
	srv, where, err := startNinep(tree, []ninep.Address{sock})
	if err != nil {
		// The mount works without it; only attaching more mounts does not.
		slog.Warn("not serving 9P; other mounts cannot attach to this daemon", "err", err)
		return src, nil
	}
	tree.edges.add("9p "+strings.Join(where, ","), srv)
	src.close = func() { stopNinep(srv); tree.close() }
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
