package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/internal/client"
	"github.com/gsvfs/gsvfs/internal/filestamp"
	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// nsFollower applies the namespace file (the state directory's
// etc/namespace, /etc/namespace in the tree) to a table: within half a
// second of a change on disk, and for a write through the tree before
// that write returns, so whoever edits it there finds the change in place
// once the write is done (a session's cwd into a bind just added). A file
// refused is logged, and /sys/mounts says why.
type nsFollower struct {
	mu      sync.Mutex // one apply at a time, so the file read last is the one applied
	t       *mounts.Table
	file    string
	hostDir hostDirFunc
}

// follow applies the file now and after every change on disk until ctx
// ends.
func (f *nsFollower) follow(ctx context.Context) {
	filestamp.Poll(ctx, f.file, 500*time.Millisecond, nil, func(bool) { f.apply(ctx) })
}

// apply applies the file as it is now; none is no binds.
func (f *nsFollower) apply(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	text, err := os.ReadFile(f.file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // the next change, or write, reads it again
	}
	applyNamespace(ctx, f.t, f.file, string(text), f.hostDir)
}

func applyNamespace(ctx context.Context, t *mounts.Table, file, text string, hostDir hostDirFunc) {
	if err := t.ApplyNamespace(ctx, text, mounts.Resolvers{HostDir: hostDir, Dial: dialServer}); err != nil {
		slog.Warn("namespace refused; the binds before it stay", "file", file, "err", err)
		return
	}
	if text != "" {
		slog.Info("namespace applied", "file", file)
	}
}

// hostDirFunc serves a host directory as a tree, and closes it.
type hostDirFunc func(dir string) (root vfs.Node, close func(), err error)

// hostTrees serves host directories bound into the tree (--bind, the
// namespace's lines), confined as the state directory's own trees are and,
// like them, never showing what hide holds: the daemon's state, whatever
// parent of it a bind names.
func hostTrees(hide *diskfs.Hidden) hostDirFunc {
	return func(dir string) (vfs.Node, func(), error) {
		d, err := diskfs.NewHiding(dir, hide)
		if err != nil {
			return nil, nil, err
		}
		return d.Root(), func() { d.Close() }, nil
	}
}

// dialServer reaches the 9P server of a namespace's mount line. Only a
// unix socket: 9P over TCP has no authentication, and other machines
// join as devices, over TLS (gsvfs-devices(7)).
func dialServer(ctx context.Context, addr string) (vfs.Node, func(), error) {
	a, err := ninep.ParseAddress(addr)
	if err != nil {
		return nil, nil, err
	}
	if a.Network != "unix" {
		return nil, nil, fmt.Errorf("%s: only unix: sockets; another machine joins as a device (gsvfs-devices(7))", addr)
	}
	c, root, err := client.DialTree(a)
	if err != nil {
		return nil, nil, err
	}
	return root, func() { c.Close() }, nil
}
