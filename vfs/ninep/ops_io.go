package ninep

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// iounit is the most data one Tread or Twrite carries at msize.
func (c *conn) iounit() uint32 { return c.msize - ioHeaderSize }

// setOpen makes f an open fid holding h, unless it already is one.
func (f *fid) setOpen(h vfs.Handle, flags int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handle != nil || f.xattr != nil {
		return vfs.Error("open", "", syscall.EBADF)
	}
	f.handle, f.flags = h, flags
	return nil
}

// openHandle returns f's handle, or EBADF when f is not open.
func (f *fid) openHandle() (vfs.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handle == nil {
		return nil, vfs.Error("io", "", syscall.EBADF)
	}
	return f.handle, nil
}

func (c *conn) lopen(ctx context.Context, m *Tlopen) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if f.opened() {
			return nil, vfs.Error("open", "", syscall.EBADF)
		}
		flags := c.host().openFromWire(m.Flags & wireOpenMask)
		if err := c.takeOpen(); err != nil {
			return nil, err
		}
		h, a, err := c.openNamed(ctx, f, flags)
		if err == nil {
			if err = f.setOpen(h, flags); err != nil {
				h.Close()
			}
		}
		if err != nil {
			c.dropOpen()
			return nil, err
		}
		return &Rlopen{QID: attrQID(a), Iounit: c.iounit()}, nil
	})
}

// openNamed opens what f stands on, or what its name leads to now
// (byName).
func (c *conn) openNamed(ctx context.Context, f *fid, flags int) (h vfs.Handle, a vfs.Attr, err error) {
	err = c.byName(ctx, f, func() error {
		h, a, err = openNode(ctx, f.at.Load(), flags)
		return err
	})
	return h, a, err
}

// openNode opens what p stands on if the server opens a file of its
// type (openable); a generated file's walk told its type and QID.
func openNode(ctx context.Context, p *place, flags int) (vfs.Handle, vfs.Attr, error) {
	n := p.node
	if p.generated != nil {
		h, err := n.Open(ctx, flags)
		return h, *p.generated, err
	}
	a, err := n.Attr(ctx)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	if !openable(a) {
		return nil, vfs.Attr{}, vfs.Error("open", "", syscall.EOPNOTSUPP)
	}
	h, err := n.Open(ctx, flags)
	return h, a, err
}

// openable reports whether the server opens a file of a's type. FIFOs,
// sockets and device nodes are opened by the client's kernel, as Linux's
// 9p client does; a server-side open would block on a FIFO or hand the
// client a device of the server's machine.
func openable(a vfs.Attr) bool {
	switch a.Type() {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK:
		return true
	}
	return false
}

func (c *conn) lcreate(ctx context.Context, m *Tlcreate) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if f.opened() {
			return nil, vfs.Error("create", m.Name, syscall.EBADF)
		}
		if err := vfs.CheckName("create", m.Name); err != nil {
			return nil, err
		}
		flags := c.host().openFromWire(m.Flags&(wireOpenMask|wO_EXCL) | wO_CREAT)
		dir := f.at.Load()
		if err := c.takeOpen(); err != nil {
			return nil, err
		}
		n, h, err := dir.node.Create(callerCtx(ctx, f, m.Gid), m.Name, flags, c.host().modeFromWire(m.Mode&wS_PERM))
		if err != nil {
			c.dropOpen()
			return nil, err
		}
		a, err := n.Attr(ctx)
		if err != nil {
			h.Close()
			c.dropOpen()
			return nil, err
		}
		// The fid now stands on the new file, open: the protocol's
		// definition of Tlcreate.
		nf := newFid(&place{node: n, parent: dir, name: m.Name}, f.uid)
		nf.handle, nf.flags = h, flags
		c.replaceFid(m.Fid, nf)
		return &Rlcreate{Rlopen{QID: attrQID(a), Iounit: c.iounit()}}, nil
	})
}

// readReply is an Rread built in place: the handle reads straight into
// the frame that goes on the wire.
type readReply struct {
	bp   *[]byte
	n    int
	free func() // the memory reserved for it
}

// rreadHeader is size[4] type[1] tag[2] count[4].
const rreadHeader = headerSize + 4

func (*readReply) msgType() uint8  { return msgRread }
func (*readReply) encode(*encoder) { panic("ninep: readReply is written with frame") }
func (*readReply) decode(*decoder) { panic("ninep: readReply is never decoded") }
func (r *readReply) release()      { putBuf(r.bp); r.free() }
func (r *readReply) data() []byte  { return (*r.bp)[rreadHeader:] }
func (r *readReply) frame(tag uint16) []byte {
	b := (*r.bp)[:rreadHeader+r.n]
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	b[4] = msgRread
	binary.LittleEndian.PutUint16(b[5:], tag)
	binary.LittleEndian.PutUint32(b[7:], uint32(r.n))
	return b
}

func (c *conn) read(ctx context.Context, m *Tread) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if x := f.xattrValue(); x != nil {
			return &Rread{Data: sliceAt(x, m.Offset, m.Count)}, nil
		}
		h, err := f.openHandle()
		if err != nil {
			return nil, err
		}
		if _, isDir := h.(vfs.DirReader); isDir {
			return nil, vfs.Error("read", "", syscall.EISDIR)
		}
		if m.Offset > 1<<63-1 {
			return nil, vfs.Error("read", "", syscall.EINVAL)
		}
		count := min(m.Count, c.iounit())
		free, err := c.reserve(ctx, rreadHeader+int64(count))
		if err != nil {
			return nil, err
		}
		rr := &readReply{bp: getBuf(rreadHeader + int(count)), free: free}
		n, err := h.ReadAt(ctx, rr.data(), int64(m.Offset))
		if err != nil && !errors.Is(err, io.EOF) && n == 0 {
			rr.release()
			return nil, err
		}
		rr.n = n
		return rr, nil
	})
}

func sliceAt(b []byte, off uint64, count uint32) []byte {
	if off >= uint64(len(b)) {
		return nil
	}
	b = b[off:]
	return b[:min(uint64(len(b)), uint64(count))]
}

func (c *conn) writeReq(ctx context.Context, m *Twrite) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if ok, err := f.xattrAppend(m.Offset, m.Data); ok {
			if err != nil {
				return nil, err
			}
			return &Rwrite{Count: uint32(len(m.Data))}, nil
		}
		h, err := f.openHandle()
		if err != nil {
			return nil, err
		}
		if m.Offset > 1<<63-1 {
			return nil, vfs.Error("write", "", syscall.EFBIG)
		}
		n, err := h.WriteAt(ctx, m.Data, int64(m.Offset))
		if err != nil && n == 0 {
			return nil, err
		}
		return &Rwrite{Count: uint32(n)}, nil
	})
}

func (c *conn) fsync(ctx context.Context, m *Tfsync) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		h, err := f.openHandle()
		if err != nil {
			return nil, err
		}
		if err := vfs.Sync(ctx, h); err != nil {
			return nil, err
		}
		return &Rfsync{}, nil
	})
}

// dirCursor keeps the entries of a directory batch the last Rreaddir had
// no room for, so a listing resumed where it stopped costs no new read.
type dirCursor struct {
	pending []vfs.DirEntry
	at      uint64 // the offset pending starts at
}

func (c *conn) readdir(ctx context.Context, m *Treaddir) (Message, error) {
	buf, _, err := c.listDir(ctx, m, direntSize, func(_ *fid, buf []byte, d Dirent, _ vfs.DirEntry) []byte {
		return AppendDirent(buf, d)
	})
	return &Rreaddir{Data: buf}, err
}

// listBatches is the most backend reads one listing step makes: the
// batch asked for and one more, which finds the end of most listings
// (so the client need not ask for it) without letting a slow or endless
// directory hold the step.
const listBatches = 2

// listDir runs one step of a listing (Treaddir, Treaddirplus): as many
// entries from m.Offset as fit in m.Count, each sized by size and
// packed by add, from at most listBatches of the backend's reads, and
// whether the listing ends there (end). Entries that did not fit wait,
// in the fid's cursor, for the step that resumes there.
func (c *conn) listDir(ctx context.Context, m *Treaddir, size func(name string) int,
	add func(f *fid, buf []byte, d Dirent, e vfs.DirEntry) []byte) ([]byte, bool, error) {
	type listed struct {
		buf []byte
		end bool
	}
	l, err := withFid(ctx, c, m.Fid, func(f *fid) (listed, error) {
		h, err := f.openHandle()
		if err != nil {
			return listed{}, err
		}
		dr, ok := h.(vfs.DirReader)
		if !ok {
			return listed{}, vfs.Error("readdir", "", syscall.ENOTDIR)
		}
		limit := int(min(m.Count, c.msize-rreadHeader))
		f.mu.Lock() // one listing step at a time per fid
		defer f.mu.Unlock()
		var buf []byte
		off := m.Offset
		for range listBatches {
			entries, err := f.dir.next(ctx, dr, off)
			switch {
			case err != nil && len(buf) == 0:
				return listed{}, err
			case err != nil: // the next step meets it again and says so
				return listed{buf, false}, nil
			case len(entries) == 0:
				return listed{buf, true}, nil
			}
			var full bool
			if buf, off, full, err = f.packDir(ctx, c.host(), buf, limit, off, entries, size, add); err != nil || full {
				return listed{buf, false}, err
			}
		}
		return listed{buf, false}, nil
	})
	return l.buf, l.end, err
}

// packDir adds entries, read at off, to buf as far as limit allows and
// returns the offset after the last one added. Those that do not fit are
// kept for the next step (full).
func (f *fid) packDir(ctx context.Context, host *hostNumbers, buf []byte, limit int, off uint64, entries []vfs.DirEntry,
	size func(name string) int, add func(f *fid, buf []byte, d Dirent, e vfs.DirEntry) []byte) ([]byte, uint64, bool, error) {
	for i, e := range entries {
		if len(buf)+size(e.Name) > limit {
			if len(buf) == 0 {
				return nil, 0, false, vfs.Error("readdir", "", syscall.EINVAL) // no room for one
			}
			f.dir.pending, f.dir.at = entries[i:], off
			return buf, off, true, nil
		}
		if e.Ino == 0 {
			e.Ino = f.dotIno(ctx, e.Name)
		}
		buf = add(f, buf, Dirent{
			QID: QID{Type: direntQIDType(e.Type), Path: e.Ino}, Offset: e.Next,
			Type: host.direntTypeToWire(e.Type), Name: e.Name,
		}, e)
		off = e.Next
	}
	return buf, off, false, nil
}

// next returns the entries from off, from what the last step left over
// when it resumes there.
func (d *dirCursor) next(ctx context.Context, dr vfs.DirReader, off uint64) ([]vfs.DirEntry, error) {
	if len(d.pending) > 0 && d.at == off {
		p := d.pending
		d.pending = nil
		return p, nil
	}
	d.pending = nil
	return vfs.ReadDirDots(ctx, dr, off)
}

// dotIno fills in the inode number of "." and "..".
func (f *fid) dotIno(ctx context.Context, name string) uint64 {
	p := f.at.Load()
	if name == ".." && p.parent != nil {
		p = p.parent
	}
	if a, err := p.node.Attr(ctx); err == nil {
		return a.Ino
	}
	return 0
}

func direntQIDType(t uint32) uint8 {
	switch t {
	case syscall.S_IFDIR:
		return QTDir
	case syscall.S_IFLNK:
		return QTSymlink
	}
	return QTFile
}

func (c *conn) clunk(ctx context.Context, m *Tclunk) (Message, error) {
	f, err := c.clunkFid(m.Fid)
	if err != nil {
		return nil, err
	}
	mayBlock(ctx, f.node()) // the release may call the node's Forget
	err = f.commitXattr(ctx, c.host())
	c.putFid(f)
	if err != nil {
		return nil, err
	}
	return &Rclunk{}, nil
}
