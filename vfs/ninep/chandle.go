package ninep

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// handle is an open remote file: an opened fid.
type handle struct {
	c    *Client
	fid  uint32
	ino  uint64 // the file's QID path, its key in the cache
	once sync.Once
	ra   *readAhead // nil where nothing is read ahead (cread.go)
	// quietClose: the close has nothing to report or release in order
	// (opened read-only, no lock taken through it), so its clunk is sent
	// without waiting, with others (Tclunkmany).
	quietClose atomic.Bool
}

// dirHandle is an open remote directory.
type dirHandle struct {
	*handle
	dir  *node // the node opened, whose lookups its listings prefill
	mu   sync.Mutex
	list listing
	// plain: this listing goes on with Treaddir, its caller not having
	// looked up what Treaddirplus brought (see wantPlus).
	plain bool
	fill  *dirFill // collects a whole listing for the cache
	// ended: the server said the listing ends at endAt (Rreaddirplus's
	// end entry), so a read from there finds nothing without asking.
	ended bool
	endAt uint64
	// first: the entries the open brought (clist.go), for the first
	// read from the start; nil once read, or if it brought none.
	first *firstBatch
}

var (
	_ vfs.Handle       = (*handle)(nil)
	_ vfs.Syncer       = (*handle)(nil)
	_ vfs.HandleAttrer = (*handle)(nil)
	_ vfs.DirReader    = (*dirHandle)(nil)
)

func (c *Client) newHandle(fid uint32, q QID, flags int) vfs.Handle {
	h := &handle{c: c, fid: fid, ino: q.Path}
	h.quietClose.Store(flags&syscall.O_ACCMODE == syscall.O_RDONLY)
	if q.Type&QTDir != 0 {
		return &dirHandle{handle: h}
	}
	if !q.generated() && q.Type == QTFile { // stored content
		h.ra = &readAhead{content: c.cache.openContent(q.Path)}
	}
	if c.writesBehind(q, flags) {
		return &writingHandle{handle: h}
	}
	return h
}

func (h *handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if h.ra == nil {
		return h.c.readAt(ctx, h.fid, p, off)
	}
	gen := h.c.cache.since()
	n, err := h.readAhead(ctx, p, off)
	if off == 0 && n < len(p) && (err == nil || err == io.EOF) {
		h.c.cache.putContent(h.ino, p[:n], gen) // read whole (cheld.go)
	}
	return n, err
}

// WriteAt drops the file's cached attributes: its size and times change.
func (h *handle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	h.dropAhead() // what was read ahead may be what this writes over
	defer h.c.cache.owning(h.ino)()
	defer h.c.cache.dropChanged(h.ino)
	return h.c.writeAt(ctx, h.fid, p, off)
}

func (h *handle) Close() error {
	h.once.Do(func() {
		if h.ra != nil {
			h.dropAhead()
			h.c.cache.closeContent(h.ino)
		}
		if h.quietClose.Load() {
			h.c.clunkLater(h.fid)
		} else {
			h.c.clunk(h.fid)
		}
	})
	return nil
}

func (h *handle) Sync(ctx context.Context) error {
	_, err := do[*Rfsync](ctx, h.c, &Tfsync{Fid: h.fid})
	return asErr("fsync", err)
}

// Attr is the file's attributes, from the cache when it holds them, as
// its node's are.
func (h *handle) Attr(ctx context.Context) (vfs.Attr, error) {
	if v, ok := h.c.cache.get(cacheKey{cAttr, h.ino, ""}); ok {
		return v.(vfs.Attr), nil
	}
	return h.c.statHeld(ctx, h.fid, h.c.cache.since())
}

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
// client's bounds fails with EFBIG. With the extensions each entry comes
// with its attributes (Treaddirplus), which the entries carry and the
// directory's node keeps for the lookups that follow (cwalk.go).
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
	if off == 0 {
		d.ended = false // a listing anew: the directory may have grown
	}
	for {
		if d.ended && off == d.endAt {
			return nil, nil
		}
		if err := d.list.start(d.c, off); err != nil {
			return nil, err
		}
		out, n, err := d.batch(ctx, off)
		if err != nil || n == 0 || len(out) > 0 {
			return out, err
		}
		off = d.list.next // only dots: read on
	}
}

// batch reads the entries from off, in one Treaddirplus with the
// extensions, else one Treaddir (the entries then carry no attributes).
// n counts the dots too.
func (d *dirHandle) batch(ctx context.Context, off uint64) (out []vfs.DirEntry, n int, err error) {
	tr := Treaddir{Fid: d.fid, Offset: off, Count: uint32(d.c.iounit())}
	plus := d.wantPlus(off)
	gen := d.c.cache.since() // what the batch's attributes are as of
	var rr reply
	var data []byte
	first := d.first
	if off == 0 {
		d.first = nil
	}
	// The open's entries serve the first read from the start, unless a
	// change in the directory came since they were asked for (a read
	// from the start lists it as it is then).
	if first != nil && off == 0 && plus && !d.c.cache.droppedSince(d.ino, first.gen) {
		data, gen = first.data, first.gen
	} else if plus {
		var r *Rreaddirplus
		r, rr, err = call[*Rreaddirplus](ctx, d.c, &Treaddirplus{tr})
		if err == nil {
			data = r.Data
		}
	} else {
		var r *Rreaddir
		r, rr, err = call[*Rreaddir](ctx, d.c, &tr)
		if err == nil {
			data = r.Data
		}
	}
	if err != nil {
		return nil, 0, asErr("readdir", err)
	}
	defer rr.release()
	var attrs []vfs.Attr // one allocation for the batch's
	if plus {
		most := len(data) / direntPlusSize("")
		attrs, out = make([]vfs.Attr, 0, most), make([]vfs.DirEntry, 0, most)
	}
	err = eachDirent(data, plus, func(e *DirentPlus) {
		if plus && e.Name == "" {
			d.ended, d.endAt = true, e.Offset
			return
		}
		n++
		d.list.count(&e.Dirent)
		if e.Name == "." || e.Name == ".." || vfs.CheckName("readdir", e.Name) != nil {
			return // a name no file can have is no entry
		}
		de := vfs.DirEntry{Name: e.Name, Ino: e.QID.Path, Type: d.c.host.direntTypeFromWire(e.Type), Next: e.Offset}
		if e.Attr.Valid != 0 {
			attrs = append(attrs, d.c.wireAttr(&e.Attr))
			de.Attr = &attrs[len(attrs)-1]
			d.c.cache.putNoXattrs(&e.Attr, gen)
		}
		out = append(out, de)
	})
	if err != nil {
		return nil, 0, vfs.Error("readdir", "", syscall.EIO)
	}
	if err := d.list.check(d.c); err != nil {
		return nil, 0, err
	}
	if plus && d.dir != nil && len(out) > 0 { // the end of the listing keeps the last batch
		d.dir.noteListed(d, out, gen)
	}
	return out, n, nil
}

// wantPlus says whether to list from off with attributes: with the
// extensions, from the start of a listing, and on for as long as its
// caller looks up at least half of each batch (ls -l, or the kernel's
// READDIRPLUS); a caller that wants only names (ls -f, a listing passed
// on) is not made to wait while the server stats every entry, as the
// kernel's READDIRPLUS_AUTO does not.
func (d *dirHandle) wantPlus(off uint64) bool {
	switch {
	case !d.c.extended || d.dir == nil:
		return false
	case off == 0:
		d.plain = false
	case !d.plain:
		d.plain = !d.dir.listedUsed(d)
	}
	return !d.plain
}

// Close ends the listing too: what it left for lookups goes with it.
func (d *dirHandle) Close() error {
	if d.dir != nil {
		d.dir.dropListed(d)
	}
	return d.handle.Close()
}
