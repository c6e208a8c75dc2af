package mounts

import (
	"context"
	"os"
	"path"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// node is a node of the composed tree: a backend node (inner) with the
// namespace path it was reached by, or a virtual directory (inner nil).
type node struct {
	t     *Table
	path  string
	inner vfs.Node
	mnt   *mount
	view  *view // nil: the whole table
}

func (n *node) virtual() bool { return n.inner == nil }

// tally counts a call on the node's tree, and its failure (/sys/stats).
// A lookup that finds nothing is an answer, not a failure.
func (n *node) tally(err *error) {
	st := n.t.rootStats
	if n.mnt != nil {
		st = &n.mnt.stats
	}
	st.requests.Add(1)
	if *err != nil && vfs.Errno(*err) != syscall.ENOENT {
		st.errors.Add(1)
	}
}

func (n *node) fold(a vfs.Attr) vfs.Attr { return n.mnt.foldAttr(a) }

func (n *node) Attr(ctx context.Context) (_ vfs.Attr, err error) {
	defer n.tally(&err)
	if n.virtual() {
		ino := n.t.virtualIno(n.path)
		c := n.t.created
		// Its entries change only with the table, which says so to
		// whoever watches it (remounted).
		return vfs.Attr{Ino: ino, Mode: syscall.S_IFDIR | 0o555, Nlink: 2, Uid: n.t.uid, Gid: n.t.gid,
			Atime: c, Mtime: c, Ctime: c, Watched: n.t.watch.feed.Active()}, nil
	}
	a, err := n.inner.Attr(ctx)
	if err != nil {
		return a, err
	}
	return n.fold(a), nil
}

func (n *node) SetAttr(ctx context.Context, s vfs.SetAttr) (_ vfs.Attr, err error) {
	defer n.tally(&err)
	if n.virtual() {
		return vfs.Attr{}, vfs.Error("setattr", n.path, syscall.EROFS)
	}
	a, err := n.inner.SetAttr(ctx, s)
	if err != nil {
		return a, err
	}
	return n.fold(a), nil
}

// child wraps a backend node reached at name.
func (n *node) child(name string, inner vfs.Node) *node {
	return &node{t: n.t, path: path.Join(n.path, name), inner: inner, mnt: n.mnt, view: n.view}
}

// at is the namespace node for p, seen through n's view.
func (n *node) at(p string) *node {
	m := n.t.nodeAt(p)
	m.view = n.view
	return m
}

func (n *node) Lookup(ctx context.Context, name string) (_ vfs.Node, err error) {
	defer n.tally(&err)
	if err := vfs.CheckName("lookup", name); err != nil {
		return nil, err
	}
	p := path.Join(n.path, name)
	if n.refuses(name) {
		return nil, vfs.Error("lookup", p, syscall.ENOENT)
	}
	if n.t.mountAt(p) != nil {
		return n.at(p), nil
	}
	err = vfs.Error("lookup", p, syscall.ENOENT)
	if !n.virtual() {
		var inner vfs.Node
		if inner, err = n.inner.Lookup(ctx, name); err == nil {
			return n.child(name, inner), nil
		}
	}
	// A name on the way to a mount point exists even where the backend
	// has no such entry.
	if vfs.Errno(err) == syscall.ENOENT && n.t.busy(p) {
		return n.at(p), nil
	}
	return nil, err
}

// LookupAttr is Lookup with the child's attributes (vfs.AttrLookuper),
// in one step where the backend can: a device's tree walks and stats in
// one round trip.
func (n *node) LookupAttr(ctx context.Context, name string) (vfs.Node, vfs.Attr, error) {
	p := path.Join(n.path, name)
	if !n.virtual() && vfs.ValidName(name) && !n.refuses(name) && n.t.mountAt(p) == nil {
		kid, a, err := n.lookupInner(ctx, name)
		if err == nil || vfs.Errno(err) != syscall.ENOENT || !n.t.busy(p) {
			return kid, a, err
		}
	}
	kid, err := n.Lookup(ctx, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	a, err := kid.Attr(ctx)
	return kid, a, err
}

// lookupInner looks name up in the backend, with its attributes.
func (n *node) lookupInner(ctx context.Context, name string) (_ vfs.Node, _ vfs.Attr, err error) {
	defer n.tally(&err)
	inner, a, err := vfs.LookupAttr(ctx, n.inner, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	return n.child(name, inner), n.fold(a), nil
}

func (n *node) Open(ctx context.Context, flags int) (_ vfs.Handle, err error) {
	defer n.tally(&err)
	if n.virtual() {
		if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, vfs.Error("open", n.path, syscall.EISDIR)
		}
		return &dirHandle{n: n, mounts: n.childMounts()}, nil
	}
	h, err := n.inner.Open(ctx, flags)
	if err != nil {
		return nil, err
	}
	return n.guarded(n.wrap(h), flags), nil
}

// wrap puts a backend handle into the namespace: a directory listing gains
// the mount points beneath and folded inode numbers.
func (n *node) wrap(h vfs.Handle) vfs.Handle {
	if dr, ok := h.(vfs.DirReader); ok {
		return &dirHandle{n: n, inner: h, dr: dr, mounts: n.childMounts(), host: n.hostPath()}
	}
	fh := &fileHandle{inner: h, n: n}
	if fl, ok := h.(vfs.Flusher); ok {
		return &flushingHandle{fh, fl}
	}
	return fh
}

// mutable fails for a virtual directory and for a name that is a mount
// point or lies on the way to one.
func (n *node) mutable(op, name string) error {
	if err := vfs.CheckName(op, name); err != nil {
		return err
	}
	p := path.Join(n.path, name)
	if n.refuses(name) {
		return vfs.Error(op, p, syscall.ENOENT)
	}
	if n.virtual() {
		return vfs.Error(op, p, syscall.EROFS)
	}
	if n.t.busy(p) {
		return vfs.Error(op, p, syscall.EBUSY)
	}
	return nil
}

// creating is mutable, but an existing mount point is EEXIST, as for any
// existing name.
func (n *node) creating(op, name string) error {
	if n.refuses(name) {
		return vfs.Error(op, path.Join(n.path, name), syscall.EACCES)
	}
	err := n.mutable(op, name)
	if vfs.Errno(err) == syscall.EBUSY {
		return vfs.Error(op, path.Join(n.path, name), syscall.EEXIST)
	}
	return err
}

func (n *node) Create(ctx context.Context, name string, flags int, mode uint32) (_ vfs.Node, _ vfs.Handle, err error) {
	defer n.tally(&err)
	if err := n.creating("create", name); err != nil {
		return nil, nil, err
	}
	inner, h, err := n.inner.Create(ctx, name, flags, mode)
	if err != nil {
		return nil, nil, err
	}
	c := n.child(name, inner)
	return c, c.guarded(c.wrap(h), flags), nil
}

// CreateTemp makes a file with no name in a backend directory that can.
func (n *node) CreateTemp(ctx context.Context, flags int, mode uint32) (_ vfs.Node, _ vfs.Handle, err error) {
	defer n.tally(&err)
	tc, ok := n.inner.(vfs.TempCreator)
	if n.virtual() || !ok {
		return nil, nil, vfs.Error("tmpfile", n.path, syscall.EOPNOTSUPP)
	}
	inner, h, err := tc.CreateTemp(ctx, flags, mode)
	if err != nil {
		return nil, nil, err
	}
	c := n.child("", inner)
	return c, c.wrap(h), nil
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32) (_ vfs.Node, err error) {
	defer n.tally(&err)
	if err := n.creating("mkdir", name); err != nil {
		return nil, err
	}
	inner, err := n.inner.Mkdir(ctx, name, mode)
	if err != nil {
		return nil, err
	}
	return n.child(name, inner), nil
}

func (n *node) Remove(ctx context.Context, name string, dir bool) (err error) {
	defer n.tally(&err)
	if err := n.mutable("remove", name); err != nil {
		return err
	}
	return n.inner.Remove(ctx, name, dir)
}

// peer returns the namespace node other as a node of the same mount as n,
// or EXDEV.
func (n *node) peer(op string, other vfs.Node) (*node, error) {
	o, ok := other.(*node)
	if !ok || o.t != n.t || o.mnt != n.mnt || o.virtual() {
		return nil, vfs.Error(op, n.path, syscall.EXDEV)
	}
	return o, nil
}

func (n *node) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	return n.RenameFlags(ctx, oldName, newDir, newName, 0)
}

// RenameFlags renames with renameat2(2) flags where the backend takes
// them (vfs.FlagRenamer); elsewhere any flag is EINVAL.
func (n *node) RenameFlags(ctx context.Context, oldName string, newDir vfs.Node, newName string, flags uint32) (err error) {
	defer n.tally(&err)
	if err := vfs.CheckName("rename", oldName); err != nil {
		return err
	}
	to, err := n.peer("rename", newDir)
	if err != nil {
		return err
	}
	if err := n.renameRefused(ctx, oldName, to, newName, flags); err != nil {
		return err
	}
	if err := n.mutable("rename", oldName); err != nil {
		return err
	}
	if err := to.mutable("rename", newName); err != nil {
		return err
	}
	if flags == 0 {
		return n.inner.Rename(ctx, oldName, to.inner, newName)
	}
	fr, ok := n.inner.(vfs.FlagRenamer)
	if !ok {
		return vfs.Error("rename", n.path, syscall.EINVAL)
	}
	return fr.RenameFlags(ctx, oldName, to.inner, newName, flags)
}

func (n *node) Link(ctx context.Context, target vfs.Node, name string) (_ vfs.Node, err error) {
	defer n.tally(&err)
	if err := n.creating("link", name); err != nil {
		return nil, err
	}
	t, err := n.peer("link", target)
	if err != nil {
		return nil, err
	}
	inner, err := vfs.Link(ctx, n.inner, t.inner, name)
	if err != nil {
		return nil, err
	}
	return n.child(name, inner), nil
}

func (n *node) Symlink(ctx context.Context, name, target string) (_ vfs.Node, err error) {
	defer n.tally(&err)
	if err := n.creating("symlink", name); err != nil {
		return nil, err
	}
	inner, err := vfs.Symlink(ctx, n.inner, name, target)
	if err != nil {
		return nil, err
	}
	return n.child(name, inner), nil
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (_ vfs.Node, err error) {
	defer n.tally(&err)
	if err := n.creating("mknod", name); err != nil {
		return nil, err
	}
	inner, err := vfs.Mknod(ctx, n.inner, name, mode, rdev)
	if err != nil {
		return nil, err
	}
	return n.child(name, inner), nil
}

func (n *node) Readlink(ctx context.Context) (_ string, err error) {
	defer n.tally(&err)
	r, ok := n.inner.(vfs.Readlinker)
	if !ok {
		return "", vfs.Error("readlink", n.path, syscall.EINVAL)
	}
	return r.Readlink(ctx)
}

// StatFS reports the filesystem of the node's backend. The namespace's
// own directories and synthetic trees have no capacity of their own: they
// report the stored trees' (the state directory's filesystem), so df of
// the mount says how much room its files have.
func (n *node) StatFS(ctx context.Context) (_ vfs.StatFS, err error) {
	defer n.tally(&err)
	if s, ok := n.inner.(vfs.StatFSer); ok {
		return s.StatFS(ctx)
	}
	if s, ok := n.t.storage(); ok {
		return s.StatFS(ctx)
	}
	return vfs.NoCapacity, nil
}

// Forget passes an edge's last reference on to the backend.
func (n *node) Forget() {
	if f, ok := n.inner.(vfs.Forgetter); ok {
		f.Forget()
	}
}

// xattrs returns the backend's extended attributes, or an error for op.
func (n *node) xattrs(op string) (vfs.Xattrer, error) {
	x, ok := n.inner.(vfs.Xattrer)
	if !ok {
		return nil, vfs.Error(op, n.path, syscall.ENOTSUP)
	}
	return x, nil
}

func (n *node) GetXattr(ctx context.Context, name string) (_ []byte, err error) {
	defer n.tally(&err)
	x, err := n.xattrs("getxattr")
	if err != nil {
		return nil, vfs.Error("getxattr", n.path, syscall.ENODATA)
	}
	return x.GetXattr(ctx, name)
}

func (n *node) SetXattr(ctx context.Context, name string, value []byte, flags int) (err error) {
	defer n.tally(&err)
	x, err := n.xattrs("setxattr")
	if err != nil {
		return err
	}
	return x.SetXattr(ctx, name, value, flags)
}

func (n *node) ListXattr(ctx context.Context) (_ []string, err error) {
	defer n.tally(&err)
	x, err := n.xattrs("listxattr")
	if err != nil {
		return nil, nil
	}
	return x.ListXattr(ctx)
}

func (n *node) RemoveXattr(ctx context.Context, name string) (err error) {
	defer n.tally(&err)
	x, err := n.xattrs("removexattr")
	if err != nil {
		return err
	}
	return x.RemoveXattr(ctx, name)
}

// Quick passes on the mounted tree's promise; the namespace's own
// directories are in memory (vfs.Quick). Either way a listing stats the
// mount points beneath (dirHandle.mountEntries), so a directory holding
// one that is not quick (a device's root, under /mnt) is not quick
// either: a 9P edge that listed it on the goroutine reading its
// connection left the connection unread for as long as the devices took
// to answer, and its client, hearing nothing, gave the connection up.
func (n *node) Quick() bool {
	return (n.virtual() || vfs.IsQuick(n.inner)) && n.t.childMountsQuick(n.path)
}
