package mounts

import (
	"context"
	"slices"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/gsvfs/gsvfs/vfs"
)

// fileHandle is a backend file handle seen through the namespace. It keeps
// every optional ability of the backend's handle (a host descriptor for
// passthrough, fstat, fsync, fallocate) and folds inode numbers.
type fileHandle struct {
	inner vfs.Handle
	n     *node
}

func (h *fileHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := h.inner.ReadAt(ctx, p, off)
	h.n.mnt.stats.read.Add(int64(n))
	return n, err
}

func (h *fileHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := h.inner.WriteAt(ctx, p, off)
	h.n.mnt.stats.written.Add(int64(n))
	return n, err
}

func (h *fileHandle) Close() error { return h.inner.Close() }

func (h *fileHandle) HostFd() (int, bool) {
	if hf, ok := h.inner.(vfs.HostFile); ok {
		return hf.HostFd()
	}
	return 0, false
}

// Attr stats the open file, or the node when the backend's handle cannot.
func (h *fileHandle) Attr(ctx context.Context) (vfs.Attr, error) {
	ha, ok := h.inner.(vfs.HandleAttrer)
	if !ok {
		return h.n.Attr(ctx)
	}
	a, err := ha.Attr(ctx)
	if err != nil {
		return a, err
	}
	return h.n.fold(a), nil
}

func (h *fileHandle) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	ha, ok := h.inner.(vfs.HandleAttrer)
	if !ok {
		return h.n.SetAttr(ctx, s)
	}
	a, err := ha.SetAttr(ctx, s)
	if err != nil {
		return a, err
	}
	return h.n.fold(a), nil
}

// Sync flushes the backend's handle; a handle with nothing to flush is
// already durable.
func (h *fileHandle) Sync(ctx context.Context) error { return vfs.Sync(ctx, h.inner) }

func (h *fileHandle) Allocate(ctx context.Context, off, size int64, mode uint32) error {
	if a, ok := h.inner.(vfs.Allocater); ok {
		return a.Allocate(ctx, off, size, mode)
	}
	return vfs.Error("fallocate", h.n.path, syscall.EOPNOTSUPP)
}

// Lock passes a lock to the backend's handle, whose locks may be the host
// kernel's; a handle without them gets the daemon's memory locks, by the
// file's inode number as the namespace shows it.
func (h *fileHandle) Lock(ctx context.Context, r vfs.LockRequest) (vfs.Lock, error) {
	if l, ok := h.inner.(vfs.Locker); ok {
		return l.Lock(ctx, r)
	}
	a, err := h.Attr(ctx)
	if err != nil {
		return vfs.Lock{}, err
	}
	return vfs.LockHandle(ctx, h.inner, a.Ino, r)
}

// flushingHandle is a fileHandle whose backend finishes something at each
// close (vfs.Flusher). Only such handles have Flush, so that the edges
// spare every other close a round trip.
type flushingHandle struct {
	*fileHandle
	fl vfs.Flusher
}

func (h *flushingHandle) Flush(ctx context.Context) error { return h.fl.Flush(ctx) }

// dirHandle lists a directory of the namespace: first the mount points
// beneath it (offsets 1..k), then the backend's entries that no mount
// hides, their offsets shifted past k (vfs.ShiftDirOffset). The mount list is fixed at open,
// so every offset handed out keeps its meaning for the handle's life.
type dirHandle struct {
	n      *node
	inner  vfs.Handle // nil for a virtual directory
	dr     vfs.DirReader
	mounts []string
	// host is where the host has the directory, for its view's
	// refusals ("" where none applies).
	host string
}

func (d *dirHandle) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	k := uint64(len(d.mounts))
	if off < k {
		return d.mountEntries(ctx, off)
	}
	if d.dr == nil {
		return nil, nil
	}
	var out []vfs.DirEntry
	for {
		entries, err := d.dr.ReadDir(ctx, vfs.UnshiftDirOffset(off, k))
		if err != nil || len(entries) == 0 {
			return nil, err
		}
		for _, e := range entries {
			off = vfs.ShiftDirOffset(e.Next, k)
			if slices.Contains(d.mounts, e.Name) || d.n.view.refusesIn(d.n.path, d.host, e.Name) {
				continue
			}
			e.Ino = d.n.mnt.fold(e.Ino)
			if e.Attr != nil {
				a := d.n.fold(*e.Attr)
				e.Attr = &a
			}
			e.Next = off
			out = append(out, e)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
}

// mountStatsAtOnce bounds the mount points a listing stats at once.
const mountStatsAtOnce = 64

// mountEntries describes the mount points from offset off on. Each is
// asked for its inode number and type, all at once: under /mnt every
// one is a device's root, a round trip away, and one after another a
// listing of 50 devices took 50 round trips (the answers stay in each
// device link's cache, so the stats of the entries that follow a
// listing with attributes cost none).
func (d *dirHandle) mountEntries(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	names := d.mounts[off:]
	out := make([]vfs.DirEntry, len(names))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(mountStatsAtOnce)
	for i, name := range names {
		g.Go(func() error {
			e, err := d.mountEntry(ctx, name)
			e.Next = off + uint64(i) + 1
			out[i] = e
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// mountEntry describes the mount point (or the way to one) called name.
func (d *dirHandle) mountEntry(ctx context.Context, name string) (vfs.DirEntry, error) {
	c, err := d.n.Lookup(ctx, name)
	if err != nil {
		return vfs.DirEntry{}, err
	}
	a, err := c.Attr(ctx)
	if err != nil {
		return vfs.DirEntry{}, err
	}
	return vfs.DirEntry{Name: name, Ino: a.Ino, Type: a.Type()}, nil
}

func (d *dirHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", d.n.path, syscall.EISDIR)
}

func (d *dirHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", d.n.path, syscall.EISDIR)
}

func (d *dirHandle) Sync(ctx context.Context) error { return vfs.Sync(ctx, d.inner) }

func (d *dirHandle) Close() error {
	if d.inner == nil {
		return nil
	}
	return d.inner.Close()
}
