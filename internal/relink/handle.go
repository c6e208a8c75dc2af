package relink

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// rhandle is an open file of a remote tree. If the far end comes back on
// a new link, the next call opens the file at its path again and carries on:
// reads and writes name their offsets, so nothing else is needed, unless
// the file found there is not the one opened (then EIO, as for a file
// gone).
type rhandle struct {
	n     *node
	flags int    // as opened, less what only the first open may do
	ident uint64 // the server's id of the file, 0 if unknown

	mu    sync.Mutex
	inner vfs.Handle
	link  *Link
}

func (n *node) handle(in vfs.Node, link *Link, h vfs.Handle, flags int) vfs.Handle {
	rh := &rhandle{n: n, flags: flags &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC), inner: h, link: link}
	if id, ok := in.(identified); ok {
		rh.ident = id.Identity()
	}
	if _, ok := h.(vfs.DirReader); ok {
		return &rdirHandle{rh}
	}
	_, flushes := h.(vfs.Flusher)
	switch {
	case n.t.o.Locks && flushes:
		return flushingLockingHandle{lockingHandle{rh}}
	case n.t.o.Locks:
		return lockingHandle{rh}
	case flushes:
		return flushingHandle{rh}
	}
	return rh
}

// cur is the open handle on the current link, reopened there if the
// link changed.
func (h *rhandle) cur(ctx context.Context, op string) (vfs.Handle, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	link := h.n.t.o.Current()
	if link == nil {
		return nil, vfs.Error(op, h.n.where(), ehostdown)
	}
	if link == h.link {
		return h.inner, nil
	}
	if fl, ok := h.inner.(vfs.Flusher); ok && fl.Flush(ctx) != nil {
		// Writes acknowledged on the old link never reached the file:
		// say so rather than carry on as if they had.
		return nil, vfs.Error(op, h.n.where(), syscall.EIO)
	}
	in, _, err := h.n.cur(ctx, op)
	if err != nil {
		return nil, vfs.Error(op, h.n.where(), syscall.EIO)
	}
	if id, ok := in.(identified); ok && h.ident != 0 && id.Identity() != h.ident {
		return nil, vfs.Error(op, h.n.where(), syscall.EIO) // another file now
	}
	nh, err := in.Open(ctx, h.flags)
	if err != nil {
		return nil, vfs.Error(op, h.n.where(), syscall.EIO)
	}
	h.inner.Close() // the old link's: gone with it
	h.inner, h.link = nh, link
	return nh, nil
}

func (h *rhandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	in, err := h.cur(ctx, "read")
	if err != nil {
		return 0, err
	}
	return in.ReadAt(ctx, p, off)
}

func (h *rhandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	in, err := h.cur(ctx, "write")
	if err != nil {
		return 0, err
	}
	return in.WriteAt(ctx, p, off)
}

func (h *rhandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.link != h.n.t.o.Current() {
		h.inner.Close()
		return nil // its link is gone: nothing left to close there
	}
	return h.inner.Close()
}

func (h *rhandle) Sync(ctx context.Context) error {
	in, err := h.cur(ctx, "fsync")
	if err != nil {
		return err
	}
	return vfs.Sync(ctx, in)
}

func (h *rhandle) Attr(ctx context.Context) (vfs.Attr, error) {
	in, err := h.cur(ctx, "stat")
	if err != nil {
		return vfs.Attr{}, err
	}
	if a, ok := in.(vfs.HandleAttrer); ok {
		return a.Attr(ctx)
	}
	return h.n.Attr(ctx)
}

func (h *rhandle) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	in, err := h.cur(ctx, "setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	if a, ok := in.(vfs.HandleAttrer); ok {
		return a.SetAttr(ctx, s)
	}
	return h.n.SetAttr(ctx, s)
}

// rdirHandle is an open directory of a remote tree.
type rdirHandle struct{ *rhandle }

func (d *rdirHandle) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	in, err := d.cur(ctx, "readdir")
	if err != nil {
		return nil, err
	}
	dr, ok := in.(vfs.DirReader)
	if !ok {
		return nil, vfs.Error("readdir", d.n.where(), syscall.ENOTDIR)
	}
	return dr.ReadDir(ctx, off)
}

// lockingHandle is an rhandle of a tree that sends locks to the far end
// (Options.Locks): only such handles are vfs.Lockers, so that the edge
// keeps the others' locks in its memory.
type lockingHandle struct{ *rhandle }

// Lock passes a lock to the far end's handle on the current link.
func (h lockingHandle) Lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	in, err := h.cur(ctx, "lock")
	if err != nil {
		return vfs.Lock{}, err
	}
	return vfs.LockHandle(ctx, in, h.ident, r)
}

// flushingHandle is an rhandle whose far end finishes something at close
// (vfs.Flusher: writes still in flight): only such handles have Flush, so
// the edge spares every other close a round trip.
type flushingHandle struct{ *rhandle }

func (h flushingHandle) Flush(ctx context.Context) error { return h.flush(ctx) }

// flushingLockingHandle is a lockingHandle whose far end flushes.
type flushingLockingHandle struct{ lockingHandle }

func (h flushingLockingHandle) Flush(ctx context.Context) error { return h.flush(ctx) }

// flush flushes the handle on the current link; one reopened there has
// nothing in flight unless written since.
func (h *rhandle) flush(ctx context.Context) error {
	in, err := h.cur(ctx, "flush")
	if err != nil {
		return err
	}
	if fl, ok := in.(vfs.Flusher); ok {
		return fl.Flush(ctx)
	}
	return nil
}
