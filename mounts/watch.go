package mounts

import (
	"context"
	"path"
	"strings"
	"sync"

	"github.com/gsvfs/gsvfs/vfs"
)

// The composed tree reports the changes its backends report (vfs.Watcher),
// in its own inode numbers, and its own: a mount made or taken away
// changes the entry of its mount point.

// watchState is the table's subscribers and its subscriptions to the
// backends that watch themselves.
type watchState struct {
	feed  vfs.Feed[vfs.Change]
	mu    sync.Mutex
	stops map[*mount]func()
	// fences are the watched backends' Fence, by mount.
	fences map[*mount]func(context.Context) error
}

var _ vfs.Watcher = (*node)(nil)

// Watch reports changes anywhere in the composed tree (vfs.Watcher).
func (n *node) Watch(fn func([]vfs.Change)) (stop func()) { return n.t.Watch(fn) }

// Fence fences every backend the table watches (vfs.Watcher): the
// table's own changes (mounts made and taken away) are handed on as they
// happen.
func (n *node) Fence(ctx context.Context) error { return n.t.Fence(ctx) }

// Fence returns once every watched backend has handed on its changes
// made before the call, or ctx ends (the first error of a backend's
// fence). The backends are fenced at once: a disk tree's fence waits for
// its own marker, and the table's need not cost the sum of them.
func (t *Table) Fence(ctx context.Context) error {
	fences := t.watch.backendFences()
	if len(fences) == 1 {
		return fences[0](ctx)
	}
	errs := make(chan error, len(fences))
	for _, fence := range fences {
		go func() { errs <- fence(ctx) }()
	}
	var first error
	for range fences {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// backendFences returns the Fence of each backend watched.
func (w *watchState) backendFences() []func(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fences := make([]func(context.Context) error, 0, len(w.fences))
	for _, f := range w.fences {
		fences = append(fences, f)
	}
	return fences
}

// Watch reports changes anywhere in the composed tree. The backends are
// watched only while someone subscribes.
func (t *Table) Watch(fn func([]vfs.Change)) (stop func()) {
	id, first := t.watch.feed.Add(fn)
	if first {
		for _, m := range t.allMounts() {
			t.watchMount(m)
		}
	}
	return sync.OnceFunc(func() { t.unsubscribe(id) })
}

func (t *Table) unsubscribe(id int) {
	w := &t.watch
	if !w.feed.Remove(id) {
		return
	}
	w.mu.Lock()
	var stops []func()
	for m, stop := range w.stops {
		stops = append(stops, stop)
		delete(w.stops, m)
		delete(w.fences, m)
	}
	w.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

func (t *Table) allMounts() []*mount {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ms := make([]*mount, 0, len(t.mounts))
	for _, m := range t.mounts {
		ms = append(ms, m)
	}
	return ms
}

// watchMount subscribes to m's backend if anyone watches the table and
// the backend watches itself. A bind of a path of the table is watched
// through the backend beneath it, whose inode numbers it shows.
func (t *Table) watchMount(m *mount) {
	backend, ok := watcherOf(m.root)
	if !ok {
		return
	}
	w := &t.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.feed.Active() || w.stops[m] != nil {
		return
	}
	if w.stops == nil {
		w.stops, w.fences = map[*mount]func(){}, map[*mount]func(context.Context) error{}
	}
	w.stops[m] = backend.Watch(func(cs []vfs.Change) { t.relay(m, cs) })
	w.fences[m] = backend.Fence
}

func watcherOf(root vfs.Node) (vfs.Watcher, bool) {
	for {
		n, ok := root.(*node)
		if !ok {
			break
		}
		if n.inner == nil {
			return nil, false
		}
		root = n.inner
	}
	w, ok := root.(vfs.Watcher)
	return w, ok
}

// unwatchMount ends the subscription to m's backend.
func (t *Table) unwatchMount(m *mount) {
	w := &t.watch
	w.mu.Lock()
	stop := w.stops[m]
	delete(w.stops, m)
	delete(w.fences, m)
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// relay passes a backend's changes on in the namespace's inode numbers.
func (t *Table) relay(m *mount, cs []vfs.Change) {
	for i := range cs {
		if cs[i].Dir != 0 {
			cs[i].Dir = m.fold(cs[i].Dir)
		}
		if cs[i].Attr.Ino != 0 {
			cs[i].Attr = m.foldAttr(cs[i].Attr)
		}
	}
	t.watch.feed.Send(cs)
}

// remounted follows a change of the mount at p: the old mount's backend
// is no longer watched, the new one's is, and watchers learn that the
// entry of p changed.
func (t *Table) remounted(p string, old, new *mount) {
	defer t.changes.Send([]string{p})
	if old != nil {
		t.unwatchMount(old)
	}
	if new != nil {
		t.watchMount(new)
	}
	if p == "/" {
		return
	}
	if !t.watch.feed.Active() {
		return
	}
	ctx := context.Background()
	dir, err := vfs.Walk(ctx, t.Root(), strings.TrimPrefix(path.Dir(p), "/"))
	if err != nil {
		return
	}
	da, err := dir.Attr(ctx)
	if err != nil {
		return
	}
	c := vfs.Change{Dir: da.Ino, Name: path.Base(p)}
	if child, err := dir.Lookup(ctx, c.Name); err == nil {
		c.Attr, _ = child.Attr(ctx)
	}
	t.watch.feed.Send([]vfs.Change{c})
}

// foldAttr is a backend's Attr in the namespace's inode numbers.
func (m *mount) foldAttr(a vfs.Attr) vfs.Attr {
	a.Ino = m.fold(a.Ino)
	return a
}
