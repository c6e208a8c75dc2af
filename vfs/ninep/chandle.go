package ninep

import (
	"context"
	"io"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// handle is an open remote file: an opened fid.
type handle struct {
	c    *Client
	fid  uint32
	ino  uint64 // the file's QID path, its key in the cache
	once sync.Once
}

// dirHandle is an open remote directory.
type dirHandle struct {
	*handle
	mu   sync.Mutex
	list listing
	fill *dirFill // collects a whole listing for the cache
}

var (
	_ vfs.Handle       = (*handle)(nil)
	_ vfs.Syncer       = (*handle)(nil)
	_ vfs.HandleAttrer = (*handle)(nil)
	_ vfs.DirReader    = (*dirHandle)(nil)
)

func (c *Client) newHandle(fid uint32, q QID) vfs.Handle {
	h := &handle{c: c, fid: fid, ino: q.Path}
	if q.Type&QTDir != 0 {
		return &dirHandle{handle: h}
	}
	return h
}

func (h *handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return h.c.readAt(ctx, h.fid, p, off)
}

// WriteAt drops the file's cached attributes: its size and times change.
func (h *handle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	defer h.c.cache.dropFile(h.ino)
	return h.c.writeAt(ctx, h.fid, p, off)
}

func (h *handle) Close() error {
	h.once.Do(func() { h.c.clunk(h.fid) })
	return nil
}

func (h *handle) Sync(ctx context.Context) error {
	_, err := do[*Rfsync](ctx, h.c, &Tfsync{Fid: h.fid})
	return asErr("fsync", err)
}

func (h *handle) Attr(ctx context.Context) (vfs.Attr, error) { return h.c.getattr(ctx, h.fid) }

func (h *handle) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	return h.c.setattr(ctx, h.fid, h.ino, s)
}

// readAt fills p from off in iounit-sized Treads, stopping at a short one.
func (c *Client) readAt(ctx context.Context, fid uint32, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		want := min(len(p)-done, c.iounit())
		r, rr, err := call[*Rread](ctx, c, &Tread{Fid: fid, Offset: uint64(off) + uint64(done), Count: uint32(want)})
		if err != nil {
			return done, asErr("read", err)
		}
		n := copy(p[done:], r.Data)
		rr.release()
		done += n
		if n < want {
			break
		}
	}
	if done == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return done, nil
}

// writeAt sends p from off in iounit-sized Twrites.
func (c *Client) writeAt(ctx context.Context, fid uint32, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		chunk := p[done:min(len(p), done+c.iounit())]
		r, err := do[*Rwrite](ctx, c, &Twrite{Fid: fid, Offset: uint64(off) + uint64(done), Data: chunk})
		if err != nil {
			return done, asErr("write", err)
		}
		done += int(r.Count)
		if int(r.Count) < len(chunk) {
			return done, vfs.Error("write", "", syscall.EIO)
		}
	}
	return done, nil
}

// ReadDir lists from off; the server's "." and ".." are left out, as
// vfs listings have them added by the edge. A listing longer than the
// client's bounds fails with EFBIG.
func (d *dirHandle) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out, err := d.readDir(ctx, off)
	if d.fill != nil {
		d.fill.add(off, out, err)
	}
	return out, err
}

func (d *dirHandle) readDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	for {
		if err := d.list.start(d.c, off); err != nil {
			return nil, err
		}
		r, rr, err := call[*Rreaddir](ctx, d.c, &Treaddir{Fid: d.fid, Offset: off, Count: uint32(d.c.iounit())})
		if err != nil {
			return nil, asErr("readdir", err)
		}
		ents, err := ParseDirents(r.Data)
		rr.release()
		if err != nil {
			return nil, vfs.Error("readdir", "", syscall.EIO)
		}
		if len(ents) == 0 {
			return nil, nil
		}
		if err := d.list.add(d.c, ents); err != nil {
			return nil, err
		}
		out := make([]vfs.DirEntry, 0, len(ents))
		for _, e := range ents {
			if e.Name != "." && e.Name != ".." {
				out = append(out, vfs.DirEntry{Name: e.Name, Ino: e.QID.Path, Type: uint32(e.Type) << 12, Next: e.Offset})
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		off = ents[len(ents)-1].Offset // only dots: read on
	}
}
