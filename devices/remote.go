package devices

import (
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs"
)

// What the gateway keeps of each device's root for while it is offline
// (rememberRoot), checked by the test named:
//  1. Once the gateway is closed, its store holds each device's root as
//     last read online, so that a restarted gateway shows it so
//     (TestOfflineRootKeepsLastAttr).

// deviceRoot is /mnt/ID: the device's tree across its links (package
// relink re-walks paths and reopens files when the device comes back).
// While the device is offline every call under it fails at once with
// EHOSTDOWN, and /mnt/ID itself stats as the device's root last did
// online, kept in the store so that it survives a gateway restart.
func (g *Gateway) deviceRoot(id string) vfs.Node {
	t := relink.New(relink.Options{
		Where: "/mnt/" + id,
		Current: func() *relink.Link {
			if r := g.link(id); r != nil {
				return &r.tree
			}
			return nil
		},
		Known:    rootAttrOf(g.store.LastRoot(id)),
		Remember: func(a vfs.Attr) { g.rememberRoot(id, a) },
		Gate:     gate{store: g.store, id: id},
	})
	g.trees.Store(id, t)
	return t.Root()
}

// relinked tells device id's tree that its link changed (nil: offline).
func (g *Gateway) relinked(id string) {
	if t, ok := g.trees.Load(id); ok {
		t.(*relink.Tree).Relinked()
	}
}

// rememberRoot keeps the attributes of device id's root as read on a new
// link. Only a directory's permission bits, owner and times are kept:
// whatever a device answers, /mnt/ID offline is a directory.
//
// The store is written behind, by one writer at a time, with every root
// read since its last write at once: the first read of a root on a link
// is a stat that a caller waits for (a listing of /mnt reads 50 roots
// at once), and a store write, synced to disk, for each one after
// another made that listing wait on the disk 50 times.
func (g *Gateway) rememberRoot(id string, a vfs.Attr) {
	if g.kept.add(id, keptRoot(a)) {
		go g.keepRoots()
	}
}

// keptRoots is the device roots read and not yet written to the store.
type keptRoots struct {
	mu      sync.Mutex
	roots   map[string]RootAttr // by device id, the latest read of each
	writing bool                // keepRoots runs
	closed  bool                // the gateway closed: nothing more is written
	idle    *sync.Cond          // on mu: keepRoots ended
}

// add notes device id's root r, and reports whether a writer must start.
func (k *keptRoots) add(id string, r RootAttr) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false // a stat answered as the gateway closes: its store is done with
	}
	if k.roots == nil {
		k.roots = map[string]RootAttr{}
	}
	k.roots[id] = r
	start := !k.writing
	k.writing = true
	return start
}

// take hands the writer what is noted, or ends it (nil) when nothing is.
func (k *keptRoots) take() map[string]RootAttr {
	k.mu.Lock()
	defer k.mu.Unlock()
	roots := k.roots
	k.roots = nil
	if len(roots) == 0 {
		k.writing = false
		k.cond().Broadcast()
	}
	return roots
}

// close returns once no writer runs, and starts none after.
func (k *keptRoots) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for k.writing {
		k.cond().Wait()
	}
}

// cond is idle, made on first use; called with mu held.
func (k *keptRoots) cond() *sync.Cond {
	if k.idle == nil {
		k.idle = sync.NewCond(&k.mu)
	}
	return k.idle
}

// keepRoots writes the roots remembered to the store until none is left.
func (g *Gateway) keepRoots() {
	for roots := g.kept.take(); roots != nil; roots = g.kept.take() {
		if err := g.store.SetLastRoots(roots); err != nil {
			g.log.Warn("could not keep the devices' root attributes for while they are offline", "devices", len(roots), "err", err)
		}
	}
}

func keptRoot(a vfs.Attr) RootAttr {
	return RootAttr{Perm: a.Mode & 0o7777, Uid: a.Uid, Gid: a.Gid,
		Atime: a.Atime.UnixNano(), Mtime: a.Mtime.UnixNano(), Ctime: a.Ctime.UnixNano()}
}

// rootAttrOf is a kept root as attributes; zero (never seen) for nil.
func rootAttrOf(r *RootAttr) vfs.Attr {
	if r == nil {
		return vfs.Attr{}
	}
	return vfs.Attr{Ino: 1, Mode: syscall.S_IFDIR | r.Perm&0o7777, Nlink: 2, Uid: r.Uid, Gid: r.Gid,
		Atime: time.Unix(0, r.Atime), Mtime: time.Unix(0, r.Mtime), Ctime: time.Unix(0, r.Ctime)}
}
