package ninep

import (
	"context"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// inDir runs fn on the directory f stands on after checking name, with
// the caller's identity for anything fn creates.
func (c *conn) inDir(ctx context.Context, dfid uint32, op, name string, gid uint32,
	fn func(ctx context.Context, dir vfs.Node) (vfs.Node, error)) (QID, error) {
	return withFid(ctx, c, dfid, func(f *fid) (QID, error) {
		if err := vfs.CheckName(op, name); err != nil {
			return QID{}, err
		}
		n, err := fn(callerCtx(ctx, f, gid), f.node())
		if err != nil {
			return QID{}, err
		}
		return nodeQID(ctx, n)
	})
}

func (c *conn) mkdir(ctx context.Context, m *Tmkdir) (Message, error) {
	q, err := c.inDir(ctx, m.Dfid, "mkdir", m.Name, m.Gid, func(ctx context.Context, d vfs.Node) (vfs.Node, error) {
		return d.Mkdir(ctx, m.Name, c.host().modeFromWire(m.Mode&wS_PERM))
	})
	return &Rmkdir{rqid{q}}, err
}

func (c *conn) symlink(ctx context.Context, m *Tsymlink) (Message, error) {
	q, err := c.inDir(ctx, m.Fid, "symlink", m.Name, m.Gid, func(ctx context.Context, d vfs.Node) (vfs.Node, error) {
		return vfs.Symlink(ctx, d, m.Name, m.Target)
	})
	return &Rsymlink{rqid{q}}, err
}

func (c *conn) mknod(ctx context.Context, m *Tmknod) (Message, error) {
	q, err := c.inDir(ctx, m.Dfid, "mknod", m.Name, m.Gid, func(ctx context.Context, d vfs.Node) (vfs.Node, error) {
		return vfs.Mknod(ctx, d, m.Name, c.host().modeFromWire(m.Mode), c.host().devJoin(m.Major, m.Minor))
	})
	return &Rmknod{rqid{q}}, err
}

func (c *conn) link(ctx context.Context, m *Tlink) (Message, error) {
	target, err := c.getFid(m.Fid)
	if err != nil {
		return nil, err
	}
	defer c.putFid(target)
	mayBlock(ctx, target.node())
	_, err = c.inDir(ctx, m.Dfid, "link", m.Name, 0, func(ctx context.Context, d vfs.Node) (vfs.Node, error) {
		return vfs.Link(ctx, d, target.node(), m.Name)
	})
	return &Rlink{}, err
}

func (c *conn) readlink(ctx context.Context, m *Treadlink) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		r, ok := f.node().(vfs.Readlinker)
		if !ok {
			return nil, vfs.Error("readlink", "", syscall.EINVAL)
		}
		t, err := r.Readlink(ctx)
		if err != nil {
			return nil, err
		}
		return &Rreadlink{Target: t}, nil
	})
}

// twoFids runs fn with references on two fids held.
func (c *conn) twoFids(ctx context.Context, a, b uint32, fn func(fa, fb *fid) error) error {
	fa, err := c.getFid(a)
	if err != nil {
		return err
	}
	defer c.putFid(fa)
	fb, err := c.getFid(b)
	if err != nil {
		return err
	}
	defer c.putFid(fb)
	mayBlock(ctx, fa.node())
	mayBlock(ctx, fb.node())
	return fn(fa, fb)
}

func (c *conn) renameat(ctx context.Context, m *Trenameat) (Message, error) {
	err := c.twoFids(ctx, m.OldDfid, m.NewDfid, func(from, to *fid) error {
		if err := vfs.CheckName("rename", m.OldName); err != nil {
			return err
		}
		if err := vfs.CheckName("rename", m.NewName); err != nil {
			return err
		}
		return from.node().Rename(callerCtx(ctx, from, 0), m.OldName, to.node(), m.NewName)
	})
	return &Rrenameat{}, err
}

// rename is the older Trename: the fid itself moves into dfid as name.
func (c *conn) rename(ctx context.Context, m *Trename) (Message, error) {
	err := c.twoFids(ctx, m.Fid, m.Dfid, func(f, to *fid) error {
		p := f.at.Load()
		if p.parent == nil {
			return vfs.Error("rename", m.Name, syscall.EBUSY) // the attach root
		}
		if err := vfs.CheckName("rename", m.Name); err != nil {
			return err
		}
		dest := to.at.Load()
		mayBlock(ctx, p.parent.node)
		if err := p.parent.node.Rename(callerCtx(ctx, f, 0), p.name, dest.node, m.Name); err != nil {
			return err
		}
		f.at.Store(&place{node: p.node, parent: dest, name: m.Name})
		return nil
	})
	return &Rrename{}, err
}

func (c *conn) unlinkat(ctx context.Context, m *Tunlinkat) (Message, error) {
	_, err := withFid(ctx, c, m.Dfid, func(f *fid) (struct{}, error) {
		if err := vfs.CheckName("unlink", m.Name); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, f.node().Remove(ctx, m.Name, m.Flags&AtRemoveDir != 0)
	})
	return &Runlinkat{}, err
}

// remove is Tremove: unlink what the fid stands on, and clunk it whatever
// the outcome, as the protocol says.
func (c *conn) remove(ctx context.Context, m *Tremove) (Message, error) {
	f, err := c.clunkFid(m.Fid)
	if err != nil {
		return nil, err
	}
	defer c.putFid(f)
	p := f.at.Load()
	if p.parent == nil {
		return nil, vfs.Error("remove", "", syscall.EBUSY)
	}
	mayBlock(ctx, p.node)
	mayBlock(ctx, p.parent.node)
	a, err := p.node.Attr(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.parent.node.Remove(ctx, p.name, a.IsDir()); err != nil {
		return nil, err
	}
	return &Rremove{}, nil
}
