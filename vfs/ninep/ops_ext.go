package ninep

import (
	"context"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// dispatchExt runs one of gsvfs's extension requests, refused with
// EOPNOTSUPP on a connection that did not negotiate VersionExt, as a
// plain 9P2000.L server refuses a type it does not know.
func (c *conn) dispatchExt(ctx context.Context, m Message) (Message, error) {
	if !c.extended.Load() {
		return nil, vfs.Error("9p", "", syscall.EOPNOTSUPP)
	}
	switch m := m.(type) {
	case *Treaddirplus:
		return c.readdirplus(ctx, m)
	case *Twalkgetattr:
		return c.walkgetattr(ctx, m)
	case *Tclunkmany:
		return c.clunkmany(ctx, m)
	case *Twalkopen:
		return c.walkopen(ctx, m)
	case *Tsetattrget:
		return c.setattrget(ctx, m)
	case *Tcreateget:
		return c.createget(ctx, m)
	case *Twalkreaddir:
		return c.walkreaddir(ctx, m)
	case *Tmkdirget:
		return c.mkdirget(ctx, m)
	}
	return c.dispatchBase(ctx, m)
}

// readdirplus is readdir with each entry's attributes: what the backend
// listed with the entry, else a lookup and stat of it here, next to the
// disk, which saves the client a walk and a getattr over the network
// for each entry. The dots carry none (clients drop them). A reply that
// reaches the listing's end says so with an entry named "" (no file's
// name) at the end's offset, which saves the client the read that would
// find nothing.
func (c *conn) readdirplus(ctx context.Context, m *Treaddirplus) (Message, error) {
	var last uint64 = m.Offset
	buf, end, err := c.listDir(ctx, &m.Treaddir, direntPlusSize, func(f *fid, buf []byte, d Dirent, e vfs.DirEntry) []byte {
		last = d.Offset
		return AppendDirentPlus(buf, DirentPlus{Dirent: d, Attr: c.host().entryAttr(ctx, f.node(), e)})
	})
	if end && len(buf)+direntPlusSize("") <= int(min(m.Count, c.msize-rreadHeader)) {
		buf = AppendDirentPlus(buf, DirentPlus{Dirent: Dirent{Offset: last}})
	}
	return &Rreaddirplus{Rreaddir{Data: buf}}, err
}

// entryAttr is the attributes of the entry e of dir, valid 0 if it has
// none (a dot, or a name gone since it was listed). A node looked up
// only for this is not forgotten explicitly: another fid may hold the
// same node, and nodes that hold resources let them go when collected.
// The lookup is made even where the listing had the attributes: whether
// the file has extended attributes is asked of its node.
func (h *hostNumbers) entryAttr(ctx context.Context, dir vfs.Node, e vfs.DirEntry) Rgetattr {
	if e.Name == "." || e.Name == ".." {
		return Rgetattr{}
	}
	kid, a, err := lookupAttr(ctx, dir, e.Name)
	switch {
	case err == nil:
		return *h.fileAttrToWire(ctx, kid, a)
	case e.Attr != nil:
		return *h.extAttrToWire(*e.Attr)
	}
	return Rgetattr{}
}

// fileAttrToWire is extAttrToWire for the file n, with AttrGsvfsNoXattrs
// set if it lists no extended attributes. A generated file (not a
// directory) has none: the trees that make them (procfs, sysfs, a
// FuncFile) keep none, and the wrappers over them (mounts, relink, a 9P
// client of another gsvfs) pass on their trees' none; so its list is not
// asked for (through a gateway, a device's file would cost a round trip)
// and the bit is set, which spares a client the kernel's getxattr of
// security.capability at every write of a session's ctl or stdin. A
// generated directory's list is asked for, as its volatility does not
// reach the wire (attrQID) and a client holds its attributes: the bit
// spares the client's own servers a listxattr round trip for it on
// every walk (a device's /proc/NAME, through a gateway).
func (h *hostNumbers) fileAttrToWire(ctx context.Context, n vfs.Node, a vfs.Attr) *Rgetattr {
	r := h.extAttrToWire(a)
	if a.Volatile && !a.IsDir() {
		r.Valid |= AttrGsvfsNoXattrs
	} else if x, ok := n.(vfs.Xattrer); ok {
		if names, err := x.ListXattr(ctx); err == nil && len(names) == 0 {
			r.Valid |= AttrGsvfsNoXattrs
		}
	}
	return r
}

// walkgetattr is a walk answered with the attributes of the file
// reached, which a client's lookup needs next.
func (c *conn) walkgetattr(ctx context.Context, m *Twalkgetattr) (Message, error) {
	w, err := c.walkAttr(ctx, &m.Twalk)
	if err != nil {
		return nil, err
	}
	r := &Rwalkgetattr{Rwalk: Rwalk{QIDs: w.qids}}
	if w.attr != nil && len(w.qids) == len(m.Names) {
		r.Attr = *c.host().fileAttrToWire(ctx, w.node, *w.attr)
	}
	return r, nil
}

// walkopen walks to a new fid and opens it, and makes nodefid on the
// same file if asked; a failure leaves no new fid.
func (c *conn) walkopen(ctx context.Context, m *Twalkopen) (Message, error) {
	if err := c.newFids("walkopen", "", m.Fid, m.NewFid, m.NodeFid); err != nil {
		return nil, err
	}
	w, err := c.walkAttr(ctx, &m.Twalk)
	if err != nil {
		return nil, err
	}
	if len(w.qids) != len(m.Names) { // stopped short: newfid was not made
		return nil, vfs.Error("walkopen", m.Names[len(w.qids)], syscall.ENOENT)
	}
	r, err := c.lopen(ctx, &Tlopen{Fid: m.NewFid, Flags: m.Flags})
	if err == nil {
		err = c.sameFid(ctx, m.NewFid, m.NodeFid)
	}
	if err != nil {
		c.clunk(ctx, &Tclunk{fidMsg{m.NewFid}})
		return nil, err
	}
	return &Rwalkopen{*r.(*Rlopen)}, nil
}

// walkreaddir is walkopen, then readdirplus of the new fid from its
// start; a failure of either leaves no new fid.
func (c *conn) walkreaddir(ctx context.Context, m *Twalkreaddir) (Message, error) {
	r, err := c.walkopen(ctx, &m.Twalkopen)
	if err != nil {
		return nil, err
	}
	// The open's answer goes ahead of the entries in the same frame.
	count := min(m.Count, c.msize-rreadHeader-rlopenSize)
	l, err := c.readdirplus(ctx, &Treaddirplus{Treaddir{Fid: m.NewFid, Count: count}})
	if err != nil {
		c.clunk(ctx, &Tclunk{fidMsg{m.NewFid}})
		if m.NodeFid != NoFid {
			c.clunk(ctx, &Tclunk{fidMsg{m.NodeFid}})
		}
		return nil, err
	}
	return &Rwalkreaddir{r.(*Rwalkopen).Rlopen, *l.(*Rreaddirplus)}, nil
}

// rlopenSize is an Rlopen's body: a qid and the iounit.
const rlopenSize = 13 + 4

// newFids checks the fids a request that makes two (newFid, and nodeFid
// unless NoFid) from fid names: three different ones, nodeFid unused (a
// walk checks newFid as it makes it).
func (c *conn) newFids(op, name string, fid, newFid, nodeFid uint32) error {
	if newFid == fid || nodeFid == fid || nodeFid == newFid {
		return vfs.Error(op, name, syscall.EINVAL)
	}
	if nodeFid != NoFid && c.hasFid(nodeFid) {
		return vfs.Error(op, name, syscall.EBADF)
	}
	return nil
}

// sameFid makes fid to (unless NoFid) stand where fid from does, not
// open.
func (c *conn) sameFid(ctx context.Context, from, to uint32) error {
	if to == NoFid {
		return nil
	}
	_, err := withFid(ctx, c, from, func(f *fid) (struct{}, error) {
		return struct{}{}, c.addFid(to, newFid(f.at.Load(), f.uid))
	})
	return err
}

// setattrget is setattr, then getattr (which says whether the file has
// extended attributes: a chown is followed by the kernel's question
// whether it has security.capability).
func (c *conn) setattrget(ctx context.Context, m *Tsetattrget) (Message, error) {
	if _, err := c.setattr(ctx, &m.Tsetattr); err != nil {
		return nil, err
	}
	r, err := c.statFid(ctx, m.Fid)
	if err != nil {
		return nil, err
	}
	return &Rsetattrget{*r}, nil
}

// createget clones the directory's fid to newfid, creates the file on
// it, walks nodefid to it and answers with its attributes and the
// directory's (whose times the create changed, and which a kernel asks
// for next); a failed create leaves neither new fid. A nodefid already in use fails the
// request before anything is made.
func (c *conn) createget(ctx context.Context, m *Tcreateget) (Message, error) {
	if err := c.newFids("create", m.Name, m.Fid, m.NewFid, m.NodeFid); err != nil {
		return nil, err
	}
	if _, err := c.walkAttr(ctx, &Twalk{Fid: m.Fid, NewFid: m.NewFid}); err != nil {
		return nil, err
	}
	r, err := c.lcreate(ctx, &Tlcreate{Fid: m.NewFid, Name: m.Name, Flags: m.Flags, Mode: m.Mode, Gid: m.Gid})
	if err != nil {
		c.clunk(ctx, &Tclunk{fidMsg{m.NewFid}})
		return nil, err
	}
	created := &Rcreateget{Rlopen: r.(*Rlcreate).Rlopen}
	if err := c.sameFid(ctx, m.NewFid, m.NodeFid); err != nil { // taken meanwhile
		c.clunk(ctx, &Tclunk{fidMsg{m.NewFid}})
		return nil, err
	}
	// Valid 0 where a stat fails: the client asks itself.
	if a, err := c.statFid(ctx, m.NewFid); err == nil {
		created.Attr = *a
	}
	if a, err := c.statFid(ctx, m.Fid); err == nil {
		created.DirAttr = *a
	}
	return created, nil
}

// statFid is the attributes of fid's file as an extended peer gets them,
// with whether it has extended attributes (fileAttrToWire).
func (c *conn) statFid(ctx context.Context, n uint32) (*Rgetattr, error) {
	return withFid(ctx, c, n, func(f *fid) (*Rgetattr, error) {
		a, err := f.attrOf(ctx)
		if err != nil {
			return nil, err
		}
		return c.host().fileAttrToWire(ctx, f.node(), a), nil
	})
}

// clunkmany clunks each fid as Tclunk does. A fid's own failure (one
// unknown here, an attribute write that fails at its commit) does not
// stop the others; the client has given them all up.
func (c *conn) clunkmany(ctx context.Context, m *Tclunkmany) (Message, error) {
	for _, n := range m.Fids {
		c.clunk(ctx, &Tclunk{fidMsg{n}})
	}
	return &Rclunkmany{}, nil
}

// mkdirget is mkdir that makes newfid on the new directory, as a walk to
// it would, and answers with its attributes and its parent's (whose
// times and link count the mkdir changed, and which a kernel asks for
// next). A newfid that cannot be made fails the request before anything
// is made.
func (c *conn) mkdirget(ctx context.Context, m *Tmkdirget) (Message, error) {
	if m.NewFid == m.Dfid || c.hasFid(m.NewFid) {
		return nil, vfs.Error("mkdir", m.Name, syscall.EBADF)
	}
	return withFid(ctx, c, m.Dfid, func(f *fid) (Message, error) {
		if err := vfs.CheckName("mkdir", m.Name); err != nil {
			return nil, err
		}
		dir := f.at.Load()
		kid, err := dir.node.Mkdir(callerCtx(ctx, f, m.Gid), m.Name, c.host().modeFromWire(m.Mode&wS_PERM))
		if err != nil {
			return nil, err
		}
		mayBlock(ctx, kid) // a quick directory's new one may not be
		a, err := kid.Attr(ctx)
		if err != nil {
			return nil, err // as Tmkdir's QID fails
		}
		if a.IsDir() && a.Watched {
			c.watch.hold(kid, a.Ino) // as a walk to it would
		}
		if err := c.addFid(m.NewFid, newFid(&place{node: kid, parent: dir, name: m.Name}, f.uid)); err != nil {
			return nil, err // taken meanwhile by a request of the client's own
		}
		r := &Rmkdirget{QID: attrQID(a), Attr: *c.host().fileAttrToWire(ctx, kid, a)}
		if d, err := f.attrOf(ctx); err == nil {
			r.DirAttr = *c.host().fileAttrToWire(ctx, dir.node, d)
		}
		return r, nil
	})
}
