package ninep

import (
	"cmp"
	"context"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// dispatch runs one request and returns its reply (an Rlerror on failure).
func (c *conn) dispatch(ctx context.Context, m Message) Message {
	var (
		r   Message
		err error
	)
	if isExtension(m) {
		r, err = c.dispatchExt(ctx, m)
	} else {
		r, err = c.dispatchBase(ctx, m)
	}
	if err != nil {
		return c.errorReply(err)
	}
	return r
}

// dispatchBase runs one request of plain 9P2000.L.
func (c *conn) dispatchBase(ctx context.Context, m Message) (r Message, err error) {
	switch m := m.(type) {
	case *Tauth:
		err = vfs.Error("auth", m.Aname, syscall.EOPNOTSUPP) // the transport authenticates
	case *Tattach:
		r, err = c.attach(ctx, m)
	case *Twalk:
		r, err = c.walk(ctx, m)
	case *Tgetattr:
		r, err = c.getattr(ctx, m)
	case *Tsetattr:
		r, err = c.setattr(ctx, m)
	case *Tstatfs:
		r, err = c.statfs(ctx, m)
	case *Tlopen:
		r, err = c.lopen(ctx, m)
	case *Tlcreate:
		r, err = c.lcreate(ctx, m)
	case *Tread:
		r, err = c.read(ctx, m)
	case *Twrite:
		r, err = c.writeReq(ctx, m)
	case *Treaddir:
		r, err = c.readdir(ctx, m)
	case *Tfsync:
		r, err = c.fsync(ctx, m)
	case *Tclunk:
		r, err = c.clunk(ctx, m)
	case *Twatch:
		r, err = c.twatch(ctx, m)
	case *Tnotify:
		r, err = c.tnotify(ctx, m)
	case *Tremove:
		r, err = c.remove(ctx, m)
	case *Tmkdir:
		r, err = c.mkdir(ctx, m)
	case *Tsymlink:
		r, err = c.symlink(ctx, m)
	case *Tmknod:
		r, err = c.mknod(ctx, m)
	case *Tlink:
		r, err = c.link(ctx, m)
	case *Treadlink:
		r, err = c.readlink(ctx, m)
	case *Trename:
		r, err = c.rename(ctx, m)
	case *Trenameat:
		r, err = c.renameat(ctx, m)
	case *Tunlinkat:
		r, err = c.unlinkat(ctx, m)
	case *Txattrwalk:
		r, err = c.xattrwalk(ctx, m)
	case *Txattrcreate:
		r, err = c.xattrcreate(ctx, m)
	case *Tlock:
		r, err = c.lock(ctx, m)
	case *Tgetlock:
		r, err = c.getlock(ctx, m)
	default: // an R-message sent as a request
		err = vfs.Error("9p", "", syscall.EOPNOTSUPP)
	}
	return r, err
}

// withFid runs fn with a reference on fid n held.
func withFid[R any](ctx context.Context, c *conn, n uint32, fn func(*fid) (R, error)) (R, error) {
	f, err := c.getFid(n)
	if err != nil {
		var zero R
		return zero, err
	}
	defer c.putFid(f)
	mayBlock(ctx, f.node())
	return fn(f)
}

// callerCtx returns ctx carrying the identity new files of f's user get.
func callerCtx(ctx context.Context, f *fid, gid uint32) context.Context {
	return vfs.WithCaller(ctx, vfs.Caller{Uid: f.uid, Gid: gid})
}

// attachUser decides who an attach runs as. A root peer (or a TCP peer,
// admitted only by explicit choice) may name any user; any other peer is
// itself, whatever it claims.
func (c *conn) attachUser(m *Tattach) uint32 {
	if !c.peer.trusted {
		return c.peer.uid
	}
	if m.NUname != NoUid {
		return m.NUname
	}
	if u, err := user.Lookup(m.Uname); err == nil {
		if uid, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			return uint32(uid)
		}
	}
	return uint32(os.Geteuid())
}

func (c *conn) attach(ctx context.Context, m *Tattach) (Message, error) {
	if m.Afid != NoFid {
		return nil, vfs.Error("attach", m.Aname, syscall.EOPNOTSUPP)
	}
	p := &place{node: c.srv.root}
	mayBlock(ctx, p.node)
	for _, name := range strings.Split(m.Aname, "/") {
		if name == "" {
			continue
		}
		if name == "." || name == ".." {
			return nil, vfs.Error("attach", m.Aname, syscall.EACCES)
		}
		next, err := walkOne(ctx, p, name)
		if err != nil {
			return nil, err
		}
		p = &place{node: next.node} // the aname is the client's root
	}
	q, err := nodeQID(ctx, p.node)
	if err != nil {
		return nil, err
	}
	if err := c.addFid(m.Fid, newFid(p, c.attachUser(m))); err != nil {
		return nil, err
	}
	return &Rattach{rqid{q}}, nil
}

func (c *conn) walk(ctx context.Context, m *Twalk) (Message, error) {
	w, err := c.walkAttr(ctx, m)
	if err != nil {
		return nil, err
	}
	return &Rwalk{QIDs: w.qids}, nil
}

// walked is what a walk reached: the QIDs of the names walked, and if
// every name was, the file reached and its attributes.
type walked struct {
	qids []QID
	node vfs.Node
	attr *vfs.Attr
}

// walkAttr walks m's names from its fid and makes newfid if every name
// was walked; then it also returns the file reached and its attributes.
// A walk that stops short returns the QIDs walked (none made newfid).
func (c *conn) walkAttr(ctx context.Context, m *Twalk) (walked, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (walked, error) {
		p := f.at.Load()
		qids := make([]QID, 0, len(m.Names))
		var last *vfs.Attr
		for i, name := range m.Names {
			next, a, err := walkOneAttr(ctx, p, name)
			if err == nil {
				if a.IsDir() && a.Watched {
					c.watch.hold(next.node, a.Ino)
				}
				qids = append(qids, attrQID(a))
				p, last = next, &a
				continue
			}
			if i == 0 {
				return walked{}, err
			}
			return walked{qids: qids}, nil // partial: newfid is not made
		}
		nf := newFid(p, f.uid)
		if m.NewFid == m.Fid {
			c.replaceFid(m.Fid, nf)
		} else if err := c.addFid(m.NewFid, nf); err != nil {
			return walked{}, err
		}
		return walked{qids, p.node, last}, nil
	})
}

// attrOf stats what f stands on, through its open handle when it has one
// so a file removed while open still answers (fstat).
func (f *fid) attrOf(ctx context.Context) (vfs.Attr, error) {
	f.mu.Lock()
	h := f.handle
	f.mu.Unlock()
	if ha, ok := h.(vfs.HandleAttrer); ok {
		return ha.Attr(ctx)
	}
	return f.node().Attr(ctx)
}

func (c *conn) getattr(ctx context.Context, m *Tgetattr) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		var a vfs.Attr
		err := c.byName(ctx, f, func() (err error) {
			a, err = f.attrOf(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		if c.extended.Load() {
			// With whether the file has extended attributes, as a walk
			// says: a client holds that for the getxattrs of ls -l.
			return c.host().fileAttrToWire(ctx, f.node(), a), nil
		}
		return c.host().attrToWire(a), nil
	})
}

func (c *conn) setattr(ctx context.Context, m *Tsetattr) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		s := c.host().setattrFromWire(m)
		if s.Valid == 0 {
			return &Rsetattr{}, nil // a ctime-only touch
		}
		f.mu.Lock()
		h := f.handle
		f.mu.Unlock()
		var err error
		if ha, ok := h.(vfs.HandleAttrer); ok {
			_, err = ha.SetAttr(ctx, s)
		} else {
			err = c.byName(ctx, f, func() (err error) {
				_, err = f.node().SetAttr(ctx, s)
				return err
			})
		}
		if err != nil {
			return nil, err
		}
		return &Rsetattr{}, nil
	})
}

// v9fsMagic is what statfs reports as the filesystem type, as Linux's
// own 9p client does.
const v9fsMagic = 0x01021997

func (c *conn) statfs(ctx context.Context, m *Tstatfs) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		st, err := vfs.StatFSOf(ctx, f.node())
		if err != nil {
			return nil, err
		}
		// Rstatfs's bsize is the unit its block counts are in: statfs's
		// f_frsize (Linux's 9p client reports it as both).
		return &Rstatfs{Type: v9fsMagic, Fsid: c.srv.opts.Fsid, Bsize: cmp.Or(st.Frsize, st.Bsize), Blocks: st.Blocks,
			Bfree: st.Bfree, Bavail: st.Bavail, Files: st.Files, Ffree: st.Ffree, Namelen: st.NameLen}, nil
	})
}

// nodeQID stats n for its QID.
func nodeQID(ctx context.Context, n vfs.Node) (QID, error) {
	a, err := n.Attr(ctx)
	if err != nil {
		return QID{}, err
	}
	return attrQID(a), nil
}

// attrQID derives a QID: the path is the inode number, unique and stable
// within the tree; the version changes when a file's data does, which is
// what clients with caches key on.
func attrQID(a vfs.Attr) QID {
	q := QID{Path: a.Ino}
	switch a.Type() {
	case syscall.S_IFDIR:
		q.Type = QTDir
	case syscall.S_IFLNK:
		q.Type = QTSymlink
	default:
		if !a.Volatile {
			q.Version = uint32(a.Mtime.UnixNano()) ^ uint32(a.Size<<8)
		}
	}
	return q
}

// attrToWire is a as Rgetattr carries it.
func (h *hostNumbers) attrToWire(a vfs.Attr) *Rgetattr {
	r := &Rgetattr{
		Valid: AttrBasic | AttrGen, QID: attrQID(a),
		Mode: h.modeToWire(a.Mode), Uid: a.Uid, Gid: a.Gid,
		Nlink: uint64(a.Nlink), Rdev: h.devToWire(a.Rdev), Size: uint64(a.Size),
		Blksize: uint64(a.Blksize), Blocks: uint64(a.Blocks), Gen: a.Gen,
	}
	r.AtimeSec, r.AtimeNsec = wireTime(a.Atime)
	r.MtimeSec, r.MtimeNsec = wireTime(a.Mtime)
	r.CtimeSec, r.CtimeNsec = wireTime(a.Ctime)
	return r
}

func wireTime(t time.Time) (sec, nsec uint64) {
	if t.IsZero() {
		return 0, 0
	}
	return uint64(t.Unix()), uint64(t.Nanosecond())
}

// timeFromWire reads one of Tsetattr's times: absent, "now" (the change
// bit alone), or the given time (with the _SET bit).
func timeFromWire(valid, change, set uint32, sec, nsec uint64, t *time.Time, given, now vfs.SetMask) vfs.SetMask {
	switch {
	case valid&change == 0:
		return 0
	case valid&set == 0:
		return now
	}
	*t = time.Unix(int64(sec), int64(nsec))
	return given
}

// setattrFromWire is the change m asks for.
func (h *hostNumbers) setattrFromWire(m *Tsetattr) vfs.SetAttr {
	var s vfs.SetAttr
	if m.Valid&SetattrMode != 0 {
		s.Valid |= vfs.SetMode
		s.Mode = h.modeFromWire(m.Mode & wS_PERM)
	}
	if m.Valid&SetattrUid != 0 {
		s.Valid |= vfs.SetUid
		s.Uid = m.Uid
	}
	if m.Valid&SetattrGid != 0 {
		s.Valid |= vfs.SetGid
		s.Gid = m.Gid
	}
	if m.Valid&SetattrSize != 0 {
		s.Valid |= vfs.SetSize
		s.Size = int64(m.Size)
	}
	s.Valid |= timeFromWire(m.Valid, SetattrAtime, SetattrAtimeSet, m.AtimeSec, m.AtimeNsec, &s.Atime, vfs.SetAtime, vfs.SetAtimeNow)
	s.Valid |= timeFromWire(m.Valid, SetattrMtime, SetattrMtimeSet, m.MtimeSec, m.MtimeNsec, &s.Mtime, vfs.SetMtime, vfs.SetMtimeNow)
	return s
}
