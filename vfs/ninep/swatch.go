package ninep

import (
	"container/list"
	"context"
	"sync"
	"syscall"
	"time"

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
// by its first Twatch or its Tnotify and ended with the connection (or a
// new Tversion, or the Tnotify's flush).
//
// Lock order: the connection's write lock (conn.wmu), then mu. The
// tree's watch calls add with neither held by it.
type connWatch struct {
	mu      sync.Mutex
	on      bool
	src     vfs.Watcher // the tree subscribed to, while on
	stop    func()
	backlog []vfs.Change
	lost    bool
	ready   chan struct{} // signalled when the backlog gains something
	held    heldDirs
	stream  noticeStream
}

// noticeStream is a Tnotify's: while on, the backlog is written ahead of
// every reply, as Rnotify frames on tag, each at most limit bytes; with
// ahead, the tree is fenced before each reply first.
type noticeStream struct {
	on, ahead bool
	tag       uint16
	limit     int
}

// fenceWait bounds how long a reply waits for the tree's watch to hand
// on the changes made before it. Past it the reply goes, and those
// changes follow within the bound, as gsvfs-devices(7) promises.
const fenceWait = time.Second

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
	if c.watch.streaming() {
		return nil, vfs.Error("watch", "", syscall.EBUSY) // a Tnotify streams the changes
	}
	first, err := c.subscribe(ctx, m.Fid)
	if err != nil || first {
		return &Rwatch{}, err
	}
	limit, err := c.watchLimit(m.Count)
	if err != nil {
		return nil, err
	}
	cs, err := c.watch.next(ctx, limit)
	if err != nil {
		return nil, err
	}
	return c.host().rwatch(cs), nil
}

// watchLimit is the most changes' bytes a reply of count bytes holds.
func (c *conn) watchLimit(count uint32) (int, error) {
	limit := int(min(count, c.msize)) - headerSize - 2
	if limit < changeMinSize+rgetattrSize+maxNameLen {
		return 0, vfs.Error("watch", "", syscall.EINVAL)
	}
	return limit, nil
}

// subscribe starts the connection's subscription to the tree fid is in;
// it says whether it started it now (false: it was on already).
func (c *conn) subscribe(ctx context.Context, fidNum uint32) (bool, error) {
	return withFid(ctx, c, fidNum, func(f *fid) (bool, error) {
		w, ok := f.node().(vfs.Watcher)
		if !ok {
			return false, vfs.Error("watch", "", syscall.EOPNOTSUPP)
		}
		return c.watch.start(w), nil
	})
}

// tnotify answers a Tnotify: it subscribes the connection, writes the
// first, empty Rnotify, and from then on streams the changes on the
// request's tag until the request is flushed or the connection ends;
// then the subscription ends too, and the request's Rlerror closes the
// stream.
func (c *conn) tnotify(ctx context.Context, m *Tnotify) (Message, error) {
	if !c.extended.Load() {
		return nil, vfs.Error("watch", "", syscall.EOPNOTSUPP)
	}
	limit, err := c.watchLimit(m.Count)
	if err != nil {
		return nil, err
	}
	first, err := c.subscribe(ctx, m.Fid)
	if err != nil {
		return nil, err
	}
	if !first {
		return nil, vfs.Error("watch", "", syscall.EBUSY) // a Twatch or Tnotify subscribed it
	}
	defer c.watch.end()
	tag, _ := ctx.Value(tagKey{}).(uint16)
	c.wmu.Lock()
	c.watch.streamOn(noticeStream{on: true, ahead: m.Flags&notifyAhead != 0, tag: tag, limit: limit})
	c.writeNoticeLocked(tag, nil)
	c.wmu.Unlock()
	defer func() {
		c.wmu.Lock()
		c.watch.streamOn(noticeStream{})
		c.wmu.Unlock()
	}()
	return nil, c.pumpNotices(ctx)
}

// pumpNotices writes the backlog as it comes when no reply takes it
// ahead, a batch at most every noticePace, until ctx ends.
func (c *conn) pumpNotices(ctx context.Context) error {
	pace := time.NewTimer(0)
	defer pace.Stop()
	for {
		c.watch.mu.Lock()
		ready := c.watch.ready
		c.watch.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return vfs.Error("watch", "", syscall.EINTR)
		}
		select { // a burst's changes go in one batch
		case <-pace.C:
		case <-ctx.Done():
			return vfs.Error("watch", "", syscall.EINTR)
		}
		c.wmu.Lock()
		c.writeNoticesLocked()
		c.wmu.Unlock()
		pace.Reset(noticePace)
	}
}

// writeNoticesLocked writes the backlog on the notice stream, if there
// is one: called ahead of every reply, so that the changes the tree
// handed on before the reply (fence) reach the client first. c.wmu is
// held.
func (c *conn) writeNoticesLocked() {
	for {
		tag, cs := c.watch.takeStream()
		if cs == nil || !c.writeNoticeLocked(tag, cs) {
			return
		}
	}
}

// writeNoticeLocked writes one Rnotify; false if the write failed (the
// connection is then closed). c.wmu is held.
func (c *conn) writeNoticeLocked(tag uint16, cs []vfs.Change) bool {
	bp := getBuf(0)
	defer putBuf(bp)
	*bp = appendFrame((*bp)[:0], tag, &Rnotify{*c.host().rwatch(cs)})
	if _, err := c.nc.Write(*bp); err != nil {
		c.nc.Close()
		return false
	}
	return true
}

// fence waits, before resp is written, until the tree has handed on the
// changes made before it (vfs.Watcher's Fence), so that they go on the
// stream ahead of it. Only a connection with a notice stream that asked
// for this waits, and not for replies that tell nothing of the tree.
func (c *conn) fence(resp Message) {
	src := c.watch.fenced()
	if src == nil {
		return
	}
	switch resp.(type) {
	case *Rclunk, *Rclunkmany, *Rflush:
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, fenceWait)
	defer cancel()
	if err := src.Fence(ctx); err != nil && c.ctx.Err() == nil {
		c.srv.warn.Warn("fence", "a reply went before the tree's watch had handed on the changes made before it", "err", err)
	}
}

// start subscribes to w unless the connection already is; it says
// whether it subscribed now.
func (w *connWatch) start(src vfs.Watcher) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on {
		return false
	}
	w.on, w.src, w.ready = true, src, make(chan struct{}, 1)
	w.stop = src.Watch(w.add)
	return true
}

// streamOn sets the notice stream (off: the zero value). The
// connection's write lock is held.
func (w *connWatch) streamOn(s noticeStream) {
	w.mu.Lock()
	w.stream = s
	w.mu.Unlock()
}

// fenced is the tree to fence before a reply: nil without a notice
// stream that asked for it.
func (w *connWatch) fenced() vfs.Watcher {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stream.on || !w.stream.ahead {
		return nil
	}
	return w.src
}

// streaming says whether a Tnotify streams the changes.
func (w *connWatch) streaming() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream.on
}

// takeStream removes the next batch for the notice stream: nil without
// a stream or a batch.
func (w *connWatch) takeStream() (uint16, []vfs.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stream.on {
		return 0, nil
	}
	return w.stream.tag, w.takeLocked(w.stream.limit)
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
	return w.takeLocked(limit)
}

// takeLocked is take with w.mu held.
func (w *connWatch) takeLocked(limit int) []vfs.Change {
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
	w.on, w.src, w.stop, w.backlog, w.lost = false, nil, nil, nil, false
	w.stream = noticeStream{}
	w.held = heldDirs{}
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}
