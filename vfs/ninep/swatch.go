package ninep

import (
	"container/list"
	"context"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// MaxWatchBacklog bounds the changes a server holds for one connection
// between two of its Twatches. Past it the backlog is dropped and the
// next Rwatch says only that changes were lost, so a client that stops
// asking (or cannot keep up) costs the server a bounded amount of memory.
const MaxWatchBacklog = 4096

// maxNameLen is the longest name a change carries (vfs.CheckName's
// bound): a Twatch's count must leave room for one change of it.
const maxNameLen = 255

// connWatch is a connection's subscription to its tree's changes, made
// by its first Twatch and ended with the connection (or a new Tversion).
type connWatch struct {
	mu      sync.Mutex
	on      bool
	stop    func()
	backlog []vfs.Change
	lost    bool
	ready   chan struct{} // signalled when the backlog gains something
	held    heldDirs
}

// heldDirs keeps the watched directories a subscribed connection walked
// to or through. A tree watches a directory while a node of it is held
// (a disk tree's inotify watch goes with its node), and the client keeps
// what it learned of the directory (its listing, its names, its files'
// attributes) after it lets go of its own fids: so the connection holds
// the directory for it, and its changes keep being reported. At most
// maxHeldDirs are held; past that the least recently walked is let go,
// and the client is told changes were lost, as its promises about that
// directory no longer hold.
type heldDirs struct {
	lru   list.List // of heldDir, most recently walked first
	byIno map[uint64]*list.Element
}

type heldDir struct {
	ino  uint64
	node vfs.Node
}

// maxHeldDirs bounds the directories one connection holds watched: as
// many as a client's cache holds entries (DefaultCacheSize). A variable
// for tests.
var maxHeldDirs = DefaultCacheSize

// hold keeps dir, a watched directory the connection walked to, held
// while the connection watches.
func (w *connWatch) hold(dir vfs.Node, ino uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return
	}
	h := &w.held
	if el := h.byIno[ino]; el != nil {
		el.Value = heldDir{ino, dir}
		h.lru.MoveToFront(el)
		return
	}
	if h.byIno == nil {
		h.byIno = map[uint64]*list.Element{}
	}
	h.byIno[ino] = h.lru.PushFront(heldDir{ino, dir})
	if h.lru.Len() > maxHeldDirs {
		delete(h.byIno, h.lru.Remove(h.lru.Back()).(heldDir).ino)
		w.loseLocked()
	}
}

// loseLocked drops the backlog for a Lost. w.mu is held.
func (w *connWatch) loseLocked() {
	w.backlog, w.lost = nil, true
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// twatch answers a Twatch: at once, empty, the first time (the
// subscription is made), then with the next batch of changes.
func (c *conn) twatch(ctx context.Context, m *Twatch) (Message, error) {
	if !c.extended.Load() {
		return nil, vfs.Error("watch", "", syscall.EOPNOTSUPP)
	}
	first, err := withFid(ctx, c, m.Fid, func(f *fid) (bool, error) {
		w, ok := f.node().(vfs.Watcher)
		if !ok {
			return false, vfs.Error("watch", "", syscall.EOPNOTSUPP)
		}
		return c.watch.start(w), nil
	})
	if err != nil || first {
		return &Rwatch{}, err
	}
	limit := int(min(m.Count, c.msize)) - headerSize - 2
	if limit < changeMinSize+rgetattrSize+maxNameLen {
		return nil, vfs.Error("watch", "", syscall.EINVAL)
	}
	cs, err := c.watch.next(ctx, limit)
	if err != nil {
		return nil, err
	}
	return c.host().rwatch(cs), nil
}

// start subscribes to w unless the connection already is; it says
// whether it subscribed now.
func (w *connWatch) start(src vfs.Watcher) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on {
		return false
	}
	w.on, w.ready = true, make(chan struct{}, 1)
	w.stop = src.Watch(w.add)
	return true
}

// add queues a batch, or past MaxWatchBacklog drops the backlog for a
// Lost. It never waits: it runs on the tree's watch.
func (w *connWatch) add(cs []vfs.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost || len(w.backlog)+len(cs) > MaxWatchBacklog {
		w.loseLocked()
		return
	}
	w.backlog = append(w.backlog, cs...)
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// next waits for changes and takes as many as fit in limit bytes.
func (w *connWatch) next(ctx context.Context, limit int) ([]vfs.Change, error) {
	for {
		if cs := w.take(limit); cs != nil {
			return cs, nil
		}
		w.mu.Lock()
		ready := w.ready
		w.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, vfs.Error("watch", "", syscall.EINTR)
		}
	}
}

// take removes the batch to send, nil if there is none.
func (w *connWatch) take(limit int) []vfs.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost {
		w.lost = false
		return []vfs.Change{{Lost: true}}
	}
	n, size := 0, 0
	for ; n < len(w.backlog) && n < 0xffff; n++ {
		if size += changeSize(w.backlog[n]); size > limit {
			break
		}
	}
	switch {
	case n == 0 && len(w.backlog) > 0: // a change too large to ever send
		w.backlog = nil
		return []vfs.Change{{Lost: true}}
	case n == 0:
		return nil
	}
	cs := append([]vfs.Change(nil), w.backlog[:n]...)
	w.backlog = append(w.backlog[:0], w.backlog[n:]...)
	return cs
}

// end unsubscribes and forgets the backlog.
func (w *connWatch) end() {
	w.mu.Lock()
	stop := w.stop
	w.on, w.stop, w.backlog, w.lost = false, nil, nil, false
	w.held = heldDirs{}
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}
