package ninep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// notices is a client's side of Tnotify (or, with an older server,
// Twatch): a gsvfs server's changes, applied to the cache and handed on
// to whoever watches the client's tree (a FUSE mount drops the kernel's
// caches with them).
//
// A Tnotify's batches are applied to the cache by the reader as it reads
// them, before any reply that follows on the wire is delivered: the
// server writes every change made before a reply ahead of it, so what a
// caller learns from a reply never comes before the news of a change
// that preceded it. Handing the batches on to the feed, which may tell
// a kernel to drop caches, is done apart (a kernel drop may wait on a
// request that waits on the reader).
type notices struct {
	feed  vfs.Feed[vfs.Change]
	start sync.Once
	// on: the server subscribed this connection to its changes, so
	// watched files may be cached for good.
	on atomic.Bool
	// batches and changes count what came, for tests and stats.
	batches, changes atomic.Int64

	// The stream (Tnotify). streaming: frames on streamTag are its; the
	// rest is the reader's alone once streaming is set, but queue,
	// first and ended, which carry what it read to the stream's goroutine.
	streaming atomic.Bool
	started   bool              // the first Rnotify came
	guard     lossGuard         // the stream's
	first     chan error        // the Tnotify's first answer: nil, or its refusal
	ended     chan struct{}     // closed when the server ends the stream
	queue     chan []vfs.Change // batches applied, to hand on
	overflow  atomic.Bool       // a batch did not fit in queue: hand on Lost
}

// streamTag is reserved for the notice stream: its frames come on it for
// as long as the connection lasts.
const streamTag = probeTag - 1

// noticeQueue is how many applied batches wait to be handed on; past it
// the feed is told changes were lost (the cache has them all).
const noticeQueue = 256

var _ vfs.Watcher = (*node)(nil)

// watchCount is what a Twatch lets its reply hold: room for about two
// hundred changes with attributes, little enough to keep the client's
// held changes small whatever the server sends.
const watchCount = 64 << 10

// Watch reports the changes the server's tree reports (vfs.Watcher); a
// plain 9P2000.L server reports none, and its files are never marked
// watched, so edges keep short cache times for them.
func (n *node) Watch(fn func([]vfs.Change)) (stop func()) {
	id, _ := n.c.notices.feed.Add(fn)
	return sync.OnceFunc(func() { n.c.notices.feed.Remove(id) })
}

// Fence has nothing to wait for (vfs.Watcher): the server's notices come
// in the order the server sends them, each applied to the cache before
// any reply that follows it on the wire is delivered, and this client
// cannot ask for those not yet sent.
func (n *node) Fence(context.Context) error { return nil }

// startNotices begins asking for changes, once, on a fid of its own
// cloned from an attach's: a gsvfs server subscribes the connection and
// answers the first Twatch at once. It runs apart: an attach never
// waits for it, and until it is answered nothing is trusted long.
func (c *Client) startNotices(attachFid uint32) {
	if !c.extended {
		return
	}
	c.notices.start.Do(func() {
		fid := c.newFid()
		go func() {
			if _, err := do[*Rwalk](c.life, c, &Twalk{Fid: attachFid, NewFid: fid}); err != nil {
				c.releaseFid(fid)
				return
			}
			if !c.streamNotices(fid) {
				c.pollNotices(fid)
			}
		}()
	})
}

func (c *Client) watchCount() uint32 { return min(watchCount, c.msize) }

// streamNotices subscribes with Tnotify and hands on the batches the
// reader applies, until the stream or the connection ends. False if the
// server refused Tnotify as unknown (an older gsvfs): the caller polls.
func (c *Client) streamNotices(fid uint32) bool {
	n := &c.notices
	n.first, n.ended = make(chan error, 1), make(chan struct{})
	n.queue = make(chan []vfs.Change, noticeQueue)
	n.streaming.Store(true)
	m := &Tnotify{Twatch: Twatch{Fid: fid, Count: c.watchCount()}}
	if !c.exact { // an exact client asks the server what an open depends on
		m.Flags = notifyAhead
	}
	if c.send(streamTag, m) != nil {
		return true // the connection is gone
	}
	select {
	case err := <-n.first:
		if err != nil {
			n.streaming.Store(false)
			return !errors.Is(err, syscall.EOPNOTSUPP)
		}
	case <-c.dead:
		return true
	}
	defer c.clunkLater(fid)
	defer c.noticesOff()
	for {
		select {
		case cs := <-n.queue:
			if n.overflow.Swap(false) {
				cs = []vfs.Change{{Lost: true}}
			}
			n.feed.Send(cs)
		case <-n.ended:
			return true
		case <-c.dead:
			return true
		}
	}
}

// noticesOff says the notices stopped: nothing cached is trusted long,
// and the feed hears that changes may have been lost.
func (c *Client) noticesOff() {
	c.notices.on.Store(false)
	c.cache.notify(false)
	c.notices.feed.Send([]vfs.Change{{Lost: true}})
}

// streamFrame takes a frame of the notice stream, on the reader: a
// batch is applied to the cache here, before the reader goes on to the
// replies behind it. False if it ended the connection.
func (c *Client) streamFrame(m Message, size int) bool {
	n := &c.notices
	c.heard()
	switch m := m.(type) {
	case *Rnotify:
		if size > int(c.watchCount()) {
			c.fail(&LimitError{fmt.Sprintf("a notice of %d bytes where at most %d were asked for", size, c.watchCount())})
			return false
		}
		if !n.started {
			n.started = true
			n.on.Store(true)
			c.cache.notify(true)
			n.first <- nil
		}
		cs := c.ids.changes(c.host.changes(&m.Rwatch))
		if len(cs) > 0 && n.guard.take(c, cs, n.handOn) {
			c.applyNotice(cs)
			n.handOn(cs)
		}
	case *Rlerror:
		if !n.started {
			n.started = true
			n.first <- syscall.Errno(m.Ecode)
		} else {
			close(n.ended)
		}
		n.streaming.Store(false)
	default:
		c.fail(fmt.Errorf("9p: a reply of type %d on the notice stream", m.msgType()))
		return false
	}
	return true
}

// handOn queues an applied batch for the feed; one that does not fit is
// handed on as Lost.
func (n *notices) handOn(cs []vfs.Change) {
	select {
	case n.queue <- cs:
	default:
		n.overflow.Store(true)
		select {
		case n.queue <- nil: // wakes the hand-on, which sends the Lost
		default:
		}
	}
}

// pollNotices keeps one Twatch outstanding until the connection ends or
// the server stops answering it; then nothing cached is trusted long.
func (c *Client) pollNotices(fid uint32) {
	defer c.clunkLater(fid)
	r, err := do[*Rwatch](c.life, c, &Twatch{Fid: fid, Count: c.watchCount()})
	if err != nil {
		return // the server cannot watch: CacheTTL alone
	}
	c.notices.on.Store(true)
	c.cache.notify(true)
	defer c.noticesOff()
	asked := time.Now()
	var losses lossGuard
	for {
		if cs := c.ids.changes(c.host.changes(r)); losses.take(c, cs, c.notices.feed.Send) {
			c.noticed(cs)
		}
		if !c.pace(asked) {
			return
		}
		asked = time.Now()
		if r, err = do[*Rwatch](c.life, c, &Twatch{Fid: fid, Count: c.watchCount()}); err != nil {
			return
		}
	}
}

// noticePace is the least time between two Twatches: a peer streaming
// changes (or losses, which drop every cache) as fast as it can gets at
// most 200 batches a second of the client's work.
const noticePace = 5 * time.Millisecond

// pace waits out noticePace from since; false if the connection ended.
func (c *Client) pace(since time.Time) bool {
	wait := noticePace - time.Since(since)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.dead:
		return false
	}
}

// lostQuiet is how long a server must go without losing changes before
// its notices are trusted again after it lost them twice within it.
const lostQuiet = time.Second

// lossGuard keeps a server that keeps losing changes (overloaded, or a
// rogue peer answering every Twatch with Lost) from making the client
// drop every cache, and the kernel's with them, at each batch. A second
// Lost within lostQuiet of the first turns the notices off instead:
// everything is dropped once, and until lostQuiet passes without a Lost
// what the server says is held for CacheTTL only, as from a plain peer.
type lossGuard struct {
	last     time.Time // the last Lost
	distrust bool      // the notices are off for losing changes
}

// take says whether batch cs is to be applied and handed on as usual;
// send hands on the Lost of notices turned off.
func (g *lossGuard) take(c *Client, cs []vfs.Change, send func([]vfs.Change)) bool {
	lost := slices.ContainsFunc(cs, func(ch vfs.Change) bool { return ch.Lost })
	now := time.Now()
	switch {
	case lost && now.Sub(g.last) < lostQuiet:
		g.last = now
		if !g.distrust {
			g.distrust = true
			c.notices.on.Store(false)
			c.cache.notify(false)
			send([]vfs.Change{{Lost: true}})
		}
		return false
	case lost:
		g.last = now
	case g.distrust && now.Sub(g.last) >= lostQuiet:
		g.distrust = false
		c.cache.notify(true)
		c.notices.on.Store(true)
	}
	return true
}

// noticed applies a batch to the cache, then hands it on.
func (c *Client) noticed(cs []vfs.Change) {
	if len(cs) == 0 {
		return
	}
	c.applyNotice(cs)
	c.notices.feed.Send(cs)
}

// applyNotice applies a batch to the cache and counts it.
func (c *Client) applyNotice(cs []vfs.Change) {
	c.notices.batches.Add(1)
	c.notices.changes.Add(int64(len(cs)))
	c.cache.apply(cs)
}

// NoticeStats is what a client knows of its server's change notices.
type NoticeStats struct {
	On               bool  // the server reports its changes
	Batches, Changes int64 // received so far
	Cached           int   // the cache's entries (see DefaultCacheSize)
}

// Notices reports the client's notices and cache.
func (c *Client) Notices() NoticeStats {
	return NoticeStats{On: c.notices.on.Load(), Batches: c.notices.batches.Load(),
		Changes: c.notices.changes.Load(), Cached: c.cache.size()}
}
