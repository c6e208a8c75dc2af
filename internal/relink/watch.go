package relink

import (
	"context"
	"sync"

	"github.com/gsvfs/gsvfs/vfs"
)

// The far end's changes (vfs/ninep's change notices, which also keep
// the link's cache true) are relayed from the tree to whoever watches it:
// a FUSE mount drops the kernel's caches with them. A new link, or none,
// is reported as lost changes, since what was cached through the old one
// may be stale.

var _ vfs.Watcher = (*node)(nil)

// relay is a tree's watchers and its subscription to the link of the
// moment.
type relay struct {
	feed vfs.Feed[vfs.Change]
	mu   sync.Mutex
	link *Link // the link followed; nil while away or unwatched
	stop func()
}

// Watch reports the changes of the whole tree (vfs.Watcher), in the far
// end's inode numbers, as the nodes' attributes are.
func (n *node) Watch(fn func([]vfs.Change)) (stop func()) {
	r := &n.t.relay
	id, first := r.feed.Add(fn)
	if first {
		r.follow(n.t.o.Current())
	}
	return sync.OnceFunc(func() {
		if r.feed.Remove(id) {
			r.follow(nil)
		}
	})
}

// Fence has nothing to wait for (vfs.Watcher): the far end's changes
// come through the link's client, in the order its server sent them.
func (n *node) Fence(context.Context) error { return nil }

// Relinked tells the tree that its link changed (a new one, or none):
// its watchers follow the link of the moment, and are told that changes
// were lost. It reads Current again rather than taking the new link, so
// two calls that race end on the right one.
func (t *Tree) Relinked() {
	r := &t.relay
	if !r.feed.Active() {
		return
	}
	if r.follow(t.o.Current()) {
		r.feed.Send([]vfs.Change{{Lost: true}})
	}
}

// follow subscribes to l's root in place of the link followed so far,
// and says whether that changed.
func (r *relay) follow(l *Link) bool {
	r.mu.Lock()
	if r.link == l && (l != nil || r.stop == nil) {
		r.mu.Unlock()
		return false
	}
	old := r.stop
	r.link, r.stop = l, nil
	if l != nil && r.feed.Active() {
		if src, ok := l.Root.(vfs.Watcher); ok {
			r.stop = src.Watch(r.feed.Send)
		}
	}
	r.mu.Unlock()
	if old != nil {
		old()
	}
	return true
}
