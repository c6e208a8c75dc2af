package vfs

import (
	"context"
	"sync"
)

// Change is something that changed in a tree without passing through its
// edges: another program wrote in a host directory a disk tree serves, or
// the namespace gained or lost a mount. An edge that lets its clients
// cache what it told them (the FUSE kernel caches) uses changes to drop
// what went stale.
type Change struct {
	// Dir and Name are the directory entry that changed; Dir is 0 when
	// the change is to the node of Attr alone.
	Dir  uint64
	Name string
	// Attr is what the entry leads to now (Ino 0: the name is gone) or,
	// without Dir, the node whose attributes changed.
	Attr Attr
	// Data says the file's content changed, not only its attributes.
	Data bool
	// Lost says changes were lost (the watch fell behind): anything an
	// edge was told about the tree may be stale.
	Lost bool
}

// Watcher is a node whose tree reports the changes made to it from
// outside. Watch calls fn with batches of changes, from one goroutine at a
// time, until stop is called. fn must not wait on the tree's edges: it may
// tell a kernel to drop a cache, which waits for requests in flight.
//
// Fence returns once every change made to the tree before the call has
// been handed to the subscribers (fn has returned for it), or ctx ends
// (its error). A tree that gathers changes into batches hands on what
// it holds at once. An edge that lets a far client cache what it says
// fences before each reply, so a client that learns of anything that
// followed a change has heard of the change first (gsvfs-devices(7),
// Caching). A tree with nothing to wait for (it hands changes on as
// they happen, or learns of them from elsewhere in an order of their
// own, as a 9P client does) returns nil at once. A fence may be kept
// by a batch that says changes were lost. fn must not call Fence: it
// would wait on itself.
type Watcher interface {
	Watch(fn func([]Change)) (stop func())
	Fence(ctx context.Context) error
}

// Feed is a list of subscribers, such as a Watcher's (Feed[Change]): it
// hands each batch of events to every one of them, each its own copy (a
// subscriber may rewrite it). The zero value is ready to use.
type Feed[T any] struct {
	mu   sync.Mutex
	subs map[int]func([]T)
	next int
}

// Add subscribes fn and says whether it is the only subscriber now.
func (f *Feed[T]) Add(fn func([]T)) (id int, first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func([]T){}
	}
	id = f.next
	f.next++
	f.subs[id] = fn
	return id, len(f.subs) == 1
}

// Remove ends the subscription id and says whether it was the last.
func (f *Feed[T]) Remove(id int) (last bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, id)
	return len(f.subs) == 0
}

// Active says whether anyone subscribes.
func (f *Feed[T]) Active() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs) > 0
}

// Send hands cs to every subscriber, outside the feed's lock.
func (f *Feed[T]) Send(cs []T) {
	if len(cs) == 0 {
		return
	}
	f.mu.Lock()
	subs := make([]func([]T), 0, len(f.subs))
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn(append([]T(nil), cs...))
	}
}
