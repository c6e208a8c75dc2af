package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// mounted records where the tree is mounted, for its sessions; nil
	// if remote.
	mounted func(dir string)
	// leave is called once the mount is gone or about to go: a local
	// tree stops answering on its socket, so no mount attaches to a
	// daemon that is leaving, and ends its sessions, whose mount
	// namespaces hold the mount.
	leave func()
}

// openSource picks the tree for a mount at mountpoint: --server's, else
// the state directory's, served here if no daemon serves it (claimRoot)
// or else attached to over its socket.
func openSource(f mountFlags, mountpoint string) (*source, error) {
	if f.server != "" {
		a, err := ninep.ParseAddress(f.server)
		if err != nil {
			return nil, err
		}
		return remoteSource(a, nil)
	}
	root, err := gsvfsd.PrepareRoot(f.root)
	if err != nil {
		return nil, err
	}
	claim, sock, err := claimRoot(root)
	if err != nil {
		return nil, err
	}
	if claim != nil {
		return localSource(f, root, claim)
	}
	if f.kernelBinds {
		return nil, fmt.Errorf("--kernel-binds: a daemon already serves %s (socket %s); the mount that serves the state directory lays the binds, so unmount the others first or mount without it", root, sock.Addr)
	}
	slog.Info("a daemon already serves the state directory; attaching to it", "socket", sock.Addr)
	return remoteSource(sock, func() (*source, error) {
		claim, err := gsvfsd.ClaimRoot(root)
		if err != nil {
			return nil, err
		}
		src, err := localSource(f, root, claim)
		if err == nil {
			src.mounted(mountpoint)
		}
		return src, err
	})
}

// claimWait bounds how long a mount waits for a daemon that holds the
// state directory but does not answer on its socket: one that is leaving
// it (it stops answering first), or one that is starting.
const claimWait = 30 * time.Second

// claimRoot claims the state directory root for this process, or finds
// the daemon that serves it answering on its socket (then the claim is
// nil). A daemon that holds the directory and does not answer is waited
// for: attaching to one that is leaving would leave the mount dead.
func claimRoot(root string) (*gsvfsd.Claim, ninep.Address, error) {
	sock := gsvfsd.Socket(root)
	deadline := time.Now().Add(claimWait)
	for {
		claim, err := gsvfsd.ClaimRoot(root)
		if !errors.Is(err, gsvfsd.ErrServed) {
			return claim, sock, err
		}
		if serverAnswers(sock) {
			return nil, sock, nil
		}
		if time.Now().After(deadline) {
			return nil, sock, fmt.Errorf("a daemon holds the state directory %s but has not answered on %s for %v", root, sock.Addr, claimWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// localSource builds the state directory's tree in this process, which
// has claimed it, and offers it on the directory's socket for later
// mounts. The claim is let go of once the tree is closed.
func localSource(f mountFlags, root string, claim *gsvfsd.Claim) (*source, error) {
	tree, err := buildTree(root, gsvfsd.Options{Self: defaultDevice, Sessions: f.sessions.config(), Refuse: gsvfsd.DefaultRefused,
		Explicit: f.sessions.explicit, Facts: []sysfs.ConfigKey{
			gsvfsd.Fact("root", root), gsvfsd.Fact("device", defaultDevice),
			gsvfsd.Fact("passthrough", strconv.FormatBool(!f.noPassthrough)),
			gsvfsd.Fact("watch", strconv.FormatBool(!f.noWatch)),
			gsvfsd.Fact("kernel-binds", strconv.FormatBool(f.kernelBinds)),
			gsvfsd.Fact("max-open-per-user", strconv.FormatInt(f.maxOpenUser, 10)),
		}})
	if err != nil {
		claim.Release()
		return nil, err
	}
	src := &source{tree: tree.Root, name: root, addEdge: tree.AddEdgeStats,
		table: tree.Table, mounted: tree.MountedAt, leave: tree.EndSessions}
	src.close = func() { closeTree(tree); claim.Release() }
	srv, where, err := startNinep(tree, []ninep.Address{gsvfsd.Socket(root)})
	if err != nil {
		// The mount works without it; only attaching more mounts does not.
		slog.Warn("not serving 9P; other mounts cannot attach to this daemon", "err", err)
		return src, nil
	}
	tree.AddEdge("9p "+strings.Join(where, ","), srv)
	// The socket goes first: a mount that comes while the daemon leaves
	// waits for the claim rather than attach to it.
	stop := sync.OnceFunc(func() { stopNinep(srv) })
	src.leave = func() { stop(); tree.EndSessions() }
	src.close = func() { stop(); closeTree(tree); claim.Release() }
	return src, nil
}

// remoteSource is the tree of the server at a, which must answer now;
// the mount outlives the server's restarts (redialTree). takeOver, if not
// nil, serves the tree here instead once the server is gone for good.
func remoteSource(a ninep.Address, takeOver func() (*source, error)) (*source, error) {
	r, err := redialTree(a, takeOver)
	if err != nil {
		return nil, err
	}
	return &source{tree: r.tree.Root(), name: a.String(), close: r.close, leave: r.leave}, nil
}
