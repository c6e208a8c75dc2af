package devices

import (
	"sync"

	"github.com/gsvfs/gsvfs/vfs"
)

// A device's changes reach the gateway on its link (vfs/ninep's change
// notices, which also keep the link's cache true) and are relayed from
// /mnt/ID to whoever watches the namespace: the FUSE mount drops the
// kernel's caches with them. A new link, or none, is reported as lost
// changes, since what was cached through the old one may be stale.

var _ vfs.Watcher = (*rnode)(nil)

// devWatch is one device's watchers and its subscription to the link of
// the moment.
type devWatch struct {
	feed vfs.Feed[vfs.Change]
	mu   sync.Mutex
	link *remote // the link followed; nil while offline or unwatched
	stop func()
}

// Watch reports the changes of the device's tree (vfs.Watcher), in its
// own inode numbers, as the rnodes' attributes are.
func (n *rnode) Watch(fn func([]vfs.Change)) (stop func()) {
	w := n.g.devWatch(n.id)
	id, first := w.feed.Add(fn)
	if first {
		w.follow(n.g.link(n.id))
	}
	return sync.OnceFunc(func() {
		if w.feed.Remove(id) {
			w.follow(nil)
		}
	})
}

func (g *Gateway) devWatch(id string) *devWatch {
	w, _ := g.watches.LoadOrStore(id, &devWatch{})
	return w.(*devWatch)
}

// relinked follows a device's new link (nil: offline) for its watchers.
// It follows the link of the moment, not r, so two calls that race end
// on the right one.
func (g *Gateway) relinked(id string) {
	w, ok := g.watches.Load(id)
	if !ok {
		return
	}
	dw := w.(*devWatch)
	if !dw.feed.Active() {
		return
	}
	if dw.follow(g.link(id)) {
		dw.feed.Send([]vfs.Change{{Lost: true}})
	}
}

// follow subscribes to r's root in place of the link followed so far,
// and says whether that changed.
func (w *devWatch) follow(r *remote) bool {
	w.mu.Lock()
	if w.link == r && (r != nil || w.stop == nil) {
		w.mu.Unlock()
		return false
	}
	old := w.stop
	w.link, w.stop = r, nil
	if r != nil && w.feed.Active() {
		if src, ok := r.root.(vfs.Watcher); ok {
			w.stop = src.Watch(w.feed.Send)
		}
	}
	w.mu.Unlock()
	if old != nil {
		old()
	}
	return true
}
