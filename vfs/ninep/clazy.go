package ninep

import (
	"context"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// An open the cache can answer costs no round trip: the server is asked
// for a fid only when something the cache cannot answer needs one (as
// an NFSv4 read delegation makes opens local). A directory whose
// listing is held lists from the cache (cdir.go); a stored file opened
// for reading, whose attributes the notices vouch for, is opened on the
// server at its first read that reaches this client. Its pages are the
// kernel's (the FUSE edge keeps them while the file's attributes, as
// stated through this handle at the open, are as they were), so a
// warm `cat` of a hundred files sends nothing.
//
// Why it is safe (gsvfs-devices(7)): the device streams a notice of
// each change ahead of every later reply on the link, so a change that
// anything the opener learnt could have followed (a session's `wait`, a
// listing, a read of another file) has dropped the attributes before
// the open, and the open then goes to the server. A change the opener
// could not have seen shows within the notice's one-way delay. Where
// the server shares this machine's disk (ClientOptions.Exact), or
// cannot notify, every open asks it.
//
// Invariants, each checked by the tests named:
//  1. A file is opened from the cache only if it is a stored regular
//     file, opened read-only without O_TRUNC or O_CREAT, on a server
//     with the extensions and notices, not Exact, and the cache holds
//     its attributes as vouched for by the notices (not for CacheTTL)
//     (TestCachedOpenSendsNothing, TestCachedOpenOnlyWhenVouched).
//  2. What the cache cannot answer (a read of content not held, see
//     cheld.go; a lock, fsync, a setattr) opens the file on the server once, as the open would have, and
//     goes there from then on; a close of a handle never opened on the
//     server sends nothing (TestCachedOpenReadsTheServer).
//  3. A file changed before the open (its notice applied) is opened on
//     the server (TestCachedOpenAfterNotice). A notice only drops: its
//     attributes were stated when its batch went, and may be older than
//     an answer already held.

// deferredOpen is an open whose fid is asked of the server only when
// first needed, once.
type deferredOpen struct {
	n     *node
	flags int
	mu    sync.Mutex
	real  vfs.Handle
	// fill: opened with the listing collected for the cache (a directory).
	fill bool
}

// opened is the file opened on the server, once.
func (o *deferredOpen) opened(ctx context.Context) (vfs.Handle, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.real != nil {
		return o.real, nil
	}
	open := o.n.open
	if o.fill {
		open = o.n.openFilling
	}
	h, err := open(ctx, o.flags)
	if err != nil {
		return nil, err
	}
	o.real = h
	return h, nil
}

func (o *deferredOpen) realHandle() vfs.Handle {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.real
}

// Attr is the file's attributes: through the open file once there is
// one (a file removed since still has its own), else its node's.
func (o *deferredOpen) Attr(ctx context.Context) (vfs.Attr, error) {
	if h, ok := o.realHandle().(vfs.HandleAttrer); ok {
		return h.Attr(ctx)
	}
	return o.n.Attr(ctx)
}

func (o *deferredOpen) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	h, err := o.opened(ctx)
	if err != nil {
		return vfs.Attr{}, err
	}
	return h.(vfs.HandleAttrer).SetAttr(ctx, s)
}

func (o *deferredOpen) Sync(ctx context.Context) error {
	h, err := o.opened(ctx)
	if err != nil {
		return err
	}
	return vfs.Sync(ctx, h)
}

// Lock takes the server's locks through the open file; a close with
// nothing opened has nothing locked through it to release.
func (o *deferredOpen) Lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	if r.Cmd == vfs.LockClose && o.realHandle() == nil {
		return vfs.Lock{}, nil
	}
	h, err := o.opened(ctx)
	if err != nil {
		return vfs.Lock{}, err
	}
	return h.(vfs.Locker).Lock(ctx, r)
}

// closeReal closes the file on the server, if it was opened there.
func (o *deferredOpen) closeReal() error {
	if h := o.realHandle(); h != nil {
		return h.Close()
	}
	return nil
}

// cachedFile is a stored file opened for reading from the cache.
type cachedFile struct{ deferredOpen }

var (
	_ vfs.HandleAttrer = (*cachedFile)(nil)
	_ vfs.Syncer       = (*cachedFile)(nil)
	_ vfs.Locker       = (*cachedFile)(nil)
)

// cachedFile is the open of n with flags from the cache, if the cache
// may answer it (invariant 1).
func (n *node) cachedFile(flags int) *cachedFile {
	c := n.c
	if !c.extended || c.exact || n.qid.Type&(QTDir|QTSymlink) != 0 ||
		flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&(syscall.O_TRUNC|syscall.O_CREAT) != 0 {
		return nil
	}
	v, ok := c.cache.getVouched(cacheKey{cAttr, n.qid.Path, ""})
	if !ok {
		return nil
	}
	if a := v.(vfs.Attr); a.Volatile || !a.Watched || a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	return &cachedFile{deferredOpen{n: n, flags: flags}}
}

func (f *cachedFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if f.realHandle() == nil {
		if n, ok, err := f.n.c.cache.readHeld(f.n.qid.Path, p, off); ok {
			return n, err
		}
	}
	h, err := f.opened(ctx)
	if err != nil {
		return 0, err
	}
	return h.ReadAt(ctx, p, off)
}

func (f *cachedFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	return 0, vfs.Error("write", "", syscall.EBADF) // opened read-only
}

func (f *cachedFile) Close() error { return f.closeReal() }
