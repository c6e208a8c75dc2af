package vfs

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
type Watcher interface {
	Watch(fn func([]Change)) (stop func())
}
