package ninep

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// notices is a client's side of Twatch: a gsvfs server's changes, applied
// to the cache and handed on to whoever watches the client's tree (a
// FUSE mount drops the kernel's caches with them).
type notices struct {
	feed  vfs.Feed[vfs.Change]
	start sync.Once
	// on: the server subscribed this connection to its changes, so
	// watched files may be cached for good.
	on atomic.Bool
	// batches and changes count what came, for tests and stats.
	batches, changes atomic.Int64
}

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
			c.pollNotices(fid)
		}()
	})
}

func (c *Client) watchCount() uint32 { return min(watchCount, c.msize) }

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
	defer func() {
		c.notices.on.Store(false)
		c.cache.notify(false)
		c.notices.feed.Send([]vfs.Change{{Lost: true}})
	}()
	asked := time.Now()
	var losses lossGuard
	for {
		if cs := c.ids.changes(c.host.changes(r)); losses.take(c, cs) {
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

// take says whether batch cs is to be applied and handed on as usual.
func (g *lossGuard) take(c *Client, cs []vfs.Change) bool {
	lost := slices.ContainsFunc(cs, func(ch vfs.Change) bool { return ch.Lost })
	now := time.Now()
	switch {
	case lost && now.Sub(g.last) < lostQuiet:
		g.last = now
		if !g.distrust {
			g.distrust = true
			c.notices.on.Store(false)
			c.cache.notify(false)
			c.notices.feed.Send([]vfs.Change{{Lost: true}})
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
	c.notices.batches.Add(1)
	c.notices.changes.Add(int64(len(cs)))
	c.cache.apply(cs)
	c.notices.feed.Send(cs)
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
