package ninep

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// place is where a fid stands in the tree: its node, and the directory and
// name it was reached by, which Trename and Tremove need and which ".."
// walks back along. The attach root has no parent.
type place struct {
	node   vfs.Node
	parent *place
	name   string
	// generated is the attributes the walk here brought, if they are a
	// generated (volatile) file's: its type and number stay, and its
	// QID carries no version, so an open of it needs no stat (over a
	// device's link the stat is a round trip).
	generated *vfs.Attr
}

// fid is a client's handle on a place, and once opened on a vfs.Handle.
// A fid is shared by the requests that name it; refs counts them plus the
// fid table's own reference, and the last release closes what it holds.
type fid struct {
	at  atomic.Pointer[place] // swapped by Trename, and by byName
	uid uint32                // the attaching user; new files are theirs

	mu     sync.Mutex // guards the open state below
	handle vfs.Handle
	flags  int
	xattr  *xattrState // non-nil for Txattrwalk/Txattrcreate fids
	dir    dirCursor   // listing state of an open directory
	locked bool        // a lock was set through the handle (locks.go)

	refs int // guarded by conn.mu
}

// xattrState is a fid turned into an extended attribute: a value to read
// (Txattrwalk) or one being written, set at clunk (Txattrcreate).
type xattrState struct {
	name    string
	value   []byte
	size    uint64 // declared size of a value being written
	flags   wireXattrFlags
	writing bool
}

func newFid(p *place, uid uint32) *fid {
	f := &fid{uid: uid}
	f.at.Store(p)
	return f
}

// node is the file the fid stands on.
func (f *fid) node() vfs.Node { return f.at.Load().node }

func (f *fid) opened() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handle != nil || f.xattr != nil
}

// getFid takes a reference on fid n, or fails with EBADF.
func (c *conn) getFid(n uint32) (*fid, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.fids[n]
	if f == nil {
		return nil, vfs.Error("fid", "", syscall.EBADF)
	}
	f.refs++
	return f, nil
}

// putFid drops a reference taken by getFid.
func (c *conn) putFid(f *fid) {
	c.mu.Lock()
	f.refs--
	last := f.refs == 0
	c.mu.Unlock()
	if last {
		c.release(f)
	}
}

// hasFid reports whether fid n is in use.
func (c *conn) hasFid(n uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fids[n] != nil
}

// addFid installs a new fid at n. n must be unused.
func (c *conn) addFid(n uint32, f *fid) error {
	if n == NoFid {
		return vfs.Error("fid", "", syscall.EBADF)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fids[n] != nil {
		return vfs.Error("fid", "", syscall.EBADF)
	}
	f.refs++
	c.fids[n] = f
	if fg, ok := f.node().(vfs.Forgetter); ok {
		c.nodeRefs[fg]++
	}
	return nil
}

// byName runs fn, a request on f's node, and for a plain 9P2000.L
// connection runs it again on what f's name leads to now if the node
// answered ESTALE: its file no longer has the name (renamed over, or
// removed and made again, on the disk behind the tree's back). Linux's
// v9fs client opens, stats and truncates a file through its dentry's fid
// (a clone walk, then Tlopen) and keeps the dentry of a file held open,
// so to it an unopened fid stands for a name, as on a server whose fids
// carry paths (diod): the open reaches what open(2) of the name would.
// A fid already open keeps its file, as a descriptor does; a gsvfs
// client (the extensions) is told ESTALE and walks the name again itself,
// as its node is one file. Only a request that failed walks: the hot
// path pays nothing.
func (c *conn) byName(ctx context.Context, f *fid, fn func() error) error {
	err := fn()
	if !errors.Is(err, syscall.ESTALE) || c.extended.Load() || f.opened() {
		return err
	}
	p := f.at.Load()
	if p.parent == nil || vfs.CheckName("walk", p.name) != nil {
		return err
	}
	next, err := walkOne(ctx, p.parent, p.name)
	if err != nil {
		return err
	}
	c.moveFid(f, next)
	return fn()
}

// moveFid makes f stand at p instead, p's node counted as referred to
// and the old one let go as release would.
func (c *conn) moveFid(f *fid, p *place) {
	if fg, ok := p.node.(vfs.Forgetter); ok {
		c.mu.Lock()
		c.nodeRefs[fg]++
		c.mu.Unlock()
	}
	c.unref(f.at.Swap(p).node)
}

// replaceFid points n at f instead of what it held (a walk onto itself).
func (c *conn) replaceFid(n uint32, f *fid) {
	c.mu.Lock()
	old := c.fids[n]
	delete(c.fids, n)
	c.mu.Unlock()
	if old != nil {
		c.putFid(old)
	}
	_ = c.addFid(n, f)
}

// clunkFid removes fid n from the table; what it holds is released once
// requests using it finish.
func (c *conn) clunkFid(n uint32) (*fid, error) {
	c.mu.Lock()
	f := c.fids[n]
	delete(c.fids, n)
	c.mu.Unlock()
	if f == nil {
		return nil, vfs.Error("clunk", "", syscall.EBADF)
	}
	return f, nil
}

// release closes what a fid held and tells a forgettable node when the
// connection no longer refers to it.
func (c *conn) release(f *fid) {
	f.mu.Lock()
	h, locked := f.handle, f.locked
	f.handle = nil
	f.mu.Unlock()
	if h != nil {
		f.unlockHandle(h, locked)
		h.Close()
		c.dropOpen()
	}
	c.unref(f.node())
}

// unref tells a forgettable node when the connection no longer refers
// to it.
func (c *conn) unref(n vfs.Node) {
	fg, ok := n.(vfs.Forgetter)
	if !ok {
		return
	}
	c.mu.Lock()
	c.nodeRefs[fg]--
	gone := c.nodeRefs[fg] <= 0
	if gone {
		delete(c.nodeRefs, fg)
	}
	c.mu.Unlock()
	if gone {
		fg.Forget()
	}
}

// dropFids clunks every fid (Tversion, connection end).
func (c *conn) dropFids() {
	c.mu.Lock()
	fids := c.fids
	c.fids = map[uint32]*fid{}
	c.mu.Unlock()
	for _, f := range fids {
		c.putFid(f)
	}
}

// walkOne steps from p to name; ".." goes back to the parent, and stays
// at the attach root.
func walkOne(ctx context.Context, p *place, name string) (*place, error) {
	switch name {
	case "..":
		if p.parent == nil {
			return p, nil
		}
		return p.parent, nil
	case ".":
		return p, nil
	}
	if err := vfs.CheckName("walk", name); err != nil {
		return nil, err
	}
	mayBlock(ctx, p.node)
	n, err := p.node.Lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return &place{node: n, parent: p, name: name}, nil
}

// walkOneAttr is walkOne that also stats the place reached, in one step
// where the tree can (vfs.LookupAttr: a tree that is itself a 9P peer's
// walks and stats in one round trip).
func walkOneAttr(ctx context.Context, p *place, name string) (*place, vfs.Attr, error) {
	if name == "." || name == ".." || vfs.CheckName("walk", name) != nil {
		next, err := walkOne(ctx, p, name)
		if err != nil {
			return nil, vfs.Attr{}, err
		}
		mayBlock(ctx, next.node)
		a, err := next.node.Attr(ctx)
		return next, a, err
	}
	n, a, err := lookupAttr(ctx, p.node, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	next := &place{node: n, parent: p, name: name}
	if a.Volatile && a.Type() == syscall.S_IFREG {
		next.generated = &a
	}
	return next, a, nil
}

// lookupAttr looks name up in dir and stats it, handing the reading on
// before anything that may wait: a quick directory may hold a child that
// is not (a mount point of a device), so there the stat is a step of
// its own, after the child is known.
func lookupAttr(ctx context.Context, dir vfs.Node, name string) (vfs.Node, vfs.Attr, error) {
	if !vfs.IsQuick(dir) {
		mayBlock(ctx, dir)
		return vfs.LookupAttr(ctx, dir, name)
	}
	n, err := dir.Lookup(ctx, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	mayBlock(ctx, n)
	a, err := n.Attr(ctx)
	return n, a, err
}
