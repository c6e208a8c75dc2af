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
	}
	return c.dispatchBase(ctx, m)
}

// readdirplus is readdir with each entry's attributes: what the backend
// listed with the entry, else a lookup and stat of it here, next to the
// disk, which saves the client a walk and a getattr over the network
// for each entry. The dots carry none (clients drop them).
func (c *conn) readdirplus(ctx context.Context, m *Treaddirplus) (Message, error) {
	buf, err := c.listDir(ctx, &m.Treaddir, direntPlusSize, func(f *fid, buf []byte, d Dirent, e vfs.DirEntry) []byte {
		return AppendDirentPlus(buf, DirentPlus{Dirent: d, Attr: entryAttr(ctx, f.node(), e)})
	})
	return &Rreaddirplus{Rreaddir{Data: buf}}, err
}

// entryAttr is the attributes of the entry e of dir, valid 0 if it has
// none (a dot, or a name gone since it was listed). A node looked up
// only for this is not forgotten explicitly: another fid may hold the
// same node, and nodes that hold resources let them go when collected.
func entryAttr(ctx context.Context, dir vfs.Node, e vfs.DirEntry) Rgetattr {
	switch {
	case e.Name == "." || e.Name == "..":
		return Rgetattr{}
	case e.Attr != nil:
		return *extAttrToWire(*e.Attr)
	}
	_, a, err := lookupAttr(ctx, dir, e.Name)
	if err != nil {
		return Rgetattr{}
	}
	return *extAttrToWire(a)
}

// walkgetattr is a walk answered with the attributes of the file
// reached, which a client's lookup needs next.
func (c *conn) walkgetattr(ctx context.Context, m *Twalkgetattr) (Message, error) {
	qids, a, err := c.walkAttr(ctx, &m.Twalk)
	if err != nil {
		return nil, err
	}
	r := &Rwalkgetattr{Rwalk: Rwalk{QIDs: qids}}
	if a != nil && len(qids) == len(m.Names) {
		r.Attr = *extAttrToWire(*a)
	}
	return r, nil
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
