//go:build linux

package fusefs

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"weak"

	"github.com/gsvfs/gsvfs/vfs"
)

// A tree that reports the changes other programs make to it (vfs.Watcher)
// lets the kernel cache what it says about watched nodes for long
// (Options.WatchedCacheTime), misses included: each reported change drops
// what the kernel holds that it makes stale, and nothing else. Changes the
// mount made itself come back from the tree's watch too; they are told
// from others' by comparing with what the kernel was told, so the
// kernel's caches survive the mount's own work.

// maxNegatives bounds the misses the kernel may cache long across the
// mount (each costs a record here, so it can be dropped); past it, misses
// are not cached.
const maxNegatives = 1 << 18

// notifyQueue is how many batches of changes wait to be told to the
// kernel before the mount gives up on them and drops everything instead.
const notifyQueue = 256

// watchState is what a mount knows to turn changes into invalidations.
type watchState struct {
	// tracking: the tree reports its changes and the mount listens, so
	// inodes finds the kernel's inodes by inode number. Fixed before the
	// mount is made.
	tracking bool
	mu       sync.Mutex
	inodes   map[uint64][]weak.Pointer[node]

	negatives atomic.Int64 // misses recorded, across the mount
	queue     chan []vfs.Change
	overflow  atomic.Bool // a batch was dropped: drop everything
	// dropped counts what the kernel was told to forget, for /sys/stats.
	droppedEntries, droppedInodes, lost atomic.Int64
	// outsideWrites counts write-backs of the kernel's dirty pages that
	// found the file changed outside first, written all the same
	// (pageguard.go).
	outsideWrites atomic.Int64
	on            atomic.Bool // subscribed: watched nodes may be cached long
	stop          func()
	done          chan struct{}
	ended         sync.Once
}

// nodeWatch is a node's part: what the kernel was told of it.
type nodeWatch struct {
	// watched: changes to this node (and a directory's entries) are
	// reported; set from the node's own attributes.
	watched atomic.Bool
	mu      sync.Mutex
	last    attrKey             // the attributes the kernel was last given
	absent  map[string]struct{} // names the kernel caches as missing
}

// attrKey is the part of the attributes a change can make stale.
type attrKey struct {
	size                  int64
	mode, nlink, uid, gid uint32
	mtime, ctime          time.Time
	ino, gen              uint64
	blocks                int64
	rdev                  uint64
	valid                 bool
}

// permsChanged says whether a's mode, owner or link count may be other
// than what the kernel was last told of the node (unknown: yes).
func (w *nodeWatch) permsChanged(a vfs.Attr) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := keyOf(a)
	return !w.last.valid || w.last.mode != k.mode || w.last.uid != k.uid || w.last.gid != k.gid || w.last.nlink != k.nlink
}

func keyOf(a vfs.Attr) attrKey {
	return attrKey{size: a.Size, mode: a.Mode, nlink: a.Nlink, uid: a.Uid, gid: a.Gid,
		mtime: a.Mtime, ctime: a.Ctime, ino: a.Ino, gen: a.Gen, blocks: a.Blocks, rdev: a.Rdev, valid: true}
}

// WatchStats is what a mount told the kernel to forget of its caches
// after changes made outside.
type WatchStats struct {
	Watching bool  // the tree reports its changes
	Entries  int64 // names dropped
	Inodes   int64 // attributes and pages dropped
	Lost     int64 // times everything was dropped (changes lost)
	Pages    int64 // write-backs that found the file changed outside, written all the same (pageguard.go)
}

// WatchStats reports the mount's drops so far.
func (m *Mount) WatchStats() WatchStats {
	w := &m.srv.watch
	return WatchStats{Watching: w.on.Load(), Entries: w.droppedEntries.Load(), Inodes: w.droppedInodes.Load(), Lost: w.lost.Load(), Pages: w.outsideWrites.Load()}
}

// willWatch decides, before the mount is made, whether it will listen
// to root's changes: its inode table must see every node the kernel gets.
func (s *server) willWatch(root vfs.Node) {
	_, ok := root.(vfs.Watcher)
	s.watch.tracking = ok && !s.opts.NoWatch
}

// startWatch subscribes the mount to root's changes, once it is made.
func (s *server) startWatch(root vfs.Node) {
	if !s.watch.tracking {
		return
	}
	w := root.(vfs.Watcher)
	s.watch.queue = make(chan []vfs.Change, notifyQueue)
	s.watch.done = make(chan struct{})
	go s.notifier()
	s.watch.stop = w.Watch(s.changed)
	s.watch.on.Store(true)
}

// stopWatch ends the subscription and the notifier.
func (s *server) stopWatch() {
	if s.watch.stop == nil {
		return
	}
	s.watch.ended.Do(func() {
		s.watch.stop()
		close(s.watch.done)
	})
}

// changed queues a batch for the notifier: the tree's watch must not wait
// on the kernel, which may be waiting on the tree.
func (s *server) changed(cs []vfs.Change) {
	select {
	case s.watch.queue <- cs:
	default:
		s.watch.overflow.Store(true)
	}
}

// notifier tells the kernel what went stale, one batch at a time.
func (s *server) notifier() {
	for {
		select {
		case <-s.watch.done:
			return
		case cs := <-s.watch.queue:
			if s.watch.overflow.Swap(false) {
				s.dropAll()
			}
			for _, c := range cs {
				s.apply(c)
			}
		}
	}
}

func (s *server) apply(c vfs.Change) {
	switch {
	case c.Lost:
		s.dropAll()
	case c.Dir != 0:
		for _, dir := range s.live(c.Dir) {
			entry, listing := dir.entryStale(c.Name, c.Attr)
			if entry {
				dir.NotifyEntry(c.Name)
				s.watch.droppedEntries.Add(1)
			}
			if listing {
				// The directory's cached listing (FOPEN_CACHE_DIR),
				// times and size changed with the entry.
				dir.NotifyContent(0, 0)
			}
		}
		if c.Attr.Ino != 0 && s.attrChanged(c.Attr, c.Data) && s.forgetsChanged(c.Attr, c.Data) {
			for _, dir := range s.live(c.Dir) {
				dir.NotifyEntry(c.Name)
			}
		}
	case c.Attr.Ino != 0:
		s.attrChanged(c.Attr, c.Data)
	}
}

// attrChanged drops the kernel's attributes of the node, and its cached
// pages if the content changed, unless the kernel was told just that or
// the change is the mount's own (pageguard.go). It says whether it
// dropped anything.
func (s *server) attrChanged(a vfs.Attr, data bool) (dropped bool) {
	for _, n := range s.live(a.Ino) {
		n.w.mu.Lock()
		same := n.w.last == keyOf(a)
		n.w.mu.Unlock()
		file := a.Type() == syscall.S_IFREG && !n.volatile
		switch {
		case file && data:
			if n.reported(a) {
				break // pages and attributes dropped
			}
			if !n.w.permsChanged(a) {
				continue // the mount's own: the kernel's view holds
			}
			// A chmod or chown from outside beside the mount's own
			// writes, in one report: the attributes alone.
			n.NotifyContent(-1, 0)
		case same:
			continue
		case file:
			n.NotifyContent(-1, 0) // attributes alone: the pages hold
		case a.Type() == syscall.S_IFDIR || a.Type() == syscall.S_IFREG:
			n.NotifyContent(0, 0) // a directory's listing, generated pages
		default:
			n.NotifyContent(-1, 0)
		}
		n.w.mu.Lock()
		n.w.last = attrKey{}
		n.w.mu.Unlock()
		dropped = true
		s.watch.droppedInodes.Add(1)
	}
	return dropped
}

// entryStale says whether the kernel may hold something else for the
// entry name than what it now leads to (now.Ino 0: nothing), and whether
// the directory's listing may be stale. The kernel holds a name
// positively only while go-fuse's tree has it, and negatively long only
// where absent records it; the mount's own changes leave both as the
// kernel has them (and the kernel drops the listing itself), so a name
// in neither changed outside.
func (n *node) entryStale(name string, now vfs.Attr) (entry, listing bool) {
	n.w.mu.Lock()
	_, negative := n.w.absent[name]
	if negative && now.Ino != 0 {
		n.dropAbsentLocked(name)
	}
	n.w.mu.Unlock()
	if negative {
		return now.Ino != 0, now.Ino != 0
	}
	child := n.GetChild(name)
	if child == nil {
		return false, true
	}
	id := child.StableAttr()
	stale := now.Ino != id.Ino || now.Gen != id.Gen || now.Type() != id.Mode&syscall.S_IFMT
	return stale, stale
}

// noteAttr records what the kernel is told about n.
func (n *node) noteAttr(a vfs.Attr, own bool) {
	n.w.mu.Lock()
	n.w.last = keyOf(a)
	n.w.mu.Unlock()
	if own {
		n.w.watched.Store(a.Watched)
	}
}

// noteAbsent records that the kernel may cache name as missing, and says
// whether it may: the mount's records have room. A name the mount removed
// or renamed is recorded whatever the bound (always is set), since the
// kernel may keep a negative entry for it as long as it kept the positive
// one.
func (n *node) noteAbsent(name string, always bool) bool {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	if _, ok := n.w.absent[name]; ok {
		return true
	}
	if n.srv.watch.negatives.Add(1) > maxNegatives && !always {
		n.srv.watch.negatives.Add(-1)
		return false
	}
	if n.w.absent == nil {
		n.w.absent = map[string]struct{}{}
	}
	n.w.absent[name] = struct{}{}
	return true
}

// notePresent records that the kernel holds name positively now.
func (n *node) notePresent(name string) {
	n.w.mu.Lock()
	n.dropAbsentLocked(name)
	n.w.mu.Unlock()
}

func (n *node) dropAbsentLocked(name string) {
	if _, ok := n.w.absent[name]; ok {
		delete(n.w.absent, name)
		n.srv.watch.negatives.Add(-1)
	}
}

// dropAbsent forgets every miss recorded in n, returning the names.
func (n *node) dropAbsent() []string {
	n.w.mu.Lock()
	defer n.w.mu.Unlock()
	names := make([]string, 0, len(n.w.absent))
	for name := range n.w.absent {
		names = append(names, name)
	}
	n.srv.watch.negatives.Add(-int64(len(names)))
	n.w.absent = nil
	return names
}

// dropAll makes the kernel forget everything it caches of the tree, for
// when changes were lost.
func (s *server) dropAll() {
	s.watch.lost.Add(1)
	for _, n := range s.allLive() {
		for _, name := range n.dropAbsent() {
			n.NotifyEntry(name)
		}
		for name := range n.Children() {
			n.NotifyEntry(name)
		}
		n.NotifyContent(0, 0)
		n.forget()
	}
}

// track records that n is the kernel's inode for ino (or one candidate:
// go-fuse may keep another node for the same number, which then stays
// unreachable and is collected). Only a mount that watches its tree
// keeps the table.
func (s *server) track(ino uint64, n *node) {
	if !s.watch.tracking {
		return
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.inodes == nil {
		s.watch.inodes = map[uint64][]weak.Pointer[node]{}
	}
	list := s.watch.inodes[ino]
	kept := list[:0] // live copies it, never this slice
	for _, wp := range list {
		if wp.Value() != nil {
			kept = append(kept, wp)
		}
	}
	s.watch.inodes[ino] = append(kept, weak.Make(n))
}

// untrack forgets n, which the kernel forgot.
func (s *server) untrack(ino uint64, n *node) {
	if !s.watch.tracking {
		return
	}
	wn := weak.Make(n)
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	list := s.watch.inodes[ino]
	kept := list[:0]
	for _, wp := range list {
		if wp != wn && wp.Value() != nil {
			kept = append(kept, wp)
		}
	}
	if len(kept) == 0 {
		delete(s.watch.inodes, ino)
	} else {
		s.watch.inodes[ino] = kept
	}
	n.dropAbsent()
}

// live returns the nodes of ino the kernel may hold.
func (s *server) live(ino uint64) []*node {
	s.watch.mu.Lock()
	list := append([]weak.Pointer[node](nil), s.watch.inodes[ino]...)
	s.watch.mu.Unlock()
	return held(list)
}

func (s *server) allLive() []*node {
	s.watch.mu.Lock()
	var list []weak.Pointer[node]
	for _, l := range s.watch.inodes {
		list = append(list, l...)
	}
	s.watch.mu.Unlock()
	return held(list)
}

// held keeps the nodes still alive that the kernel refers to. Forgotten
// takes the inode's lock, so it is asked outside the table's.
func held(list []weak.Pointer[node]) []*node {
	var out []*node
	for _, wp := range list {
		if n := wp.Value(); n != nil && !n.Forgotten() {
			out = append(out, n)
		}
	}
	return out
}
