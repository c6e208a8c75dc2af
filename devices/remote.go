package devices

import (
	"context"
	"errors"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// A device's tree at /mnt/ID is made of rnodes: each knows its path from
// the device's root and the node it was reached by on the link of the
// moment. When the device comes back on a new link, an rnode walks its
// path again on it, so the gateway's nodes (and the kernel's inodes of
// them) stay good across an outage; open files are opened again at
// their path and go on at the offsets their callers ask for, in Plan 9's
// aan spirit, unless the file there is another one now (EIO then). While
// the device is offline every call fails at once with EHOSTDOWN; the
// root alone still answers stat, so /mnt lists it.

// identified is a node that knows its server's id of the file without a
// round trip (vfs/ninep's client nodes do).
type identified interface{ Identity() uint64 }

type rnode struct {
	g    *Gateway
	id   string
	path string // from the device's root, "" for the root itself

	mu    sync.Mutex
	inner vfs.Node
	link  *remote // the link inner belongs to
}

var (
	_ vfs.Node       = (*rnode)(nil)
	_ vfs.Readlinker = (*rnode)(nil)
	_ vfs.Symlinker  = (*rnode)(nil)
	_ vfs.Linker     = (*rnode)(nil)
	_ vfs.Mknoder    = (*rnode)(nil)
	_ vfs.StatFSer   = (*rnode)(nil)
	_ vfs.Xattrer    = (*rnode)(nil)
	_ vfs.Forgetter  = (*rnode)(nil)
)

// DeviceRoot is /mnt/ID.
func (g *Gateway) deviceRoot(id string) *rnode { return &rnode{g: g, id: id} }

// cur is the node on the device's current link, walked again if the
// link changed since it was last used.
func (n *rnode) cur(ctx context.Context, op string) (vfs.Node, *remote, error) {
	link := n.g.link(n.id)
	if link == nil {
		return nil, nil, vfs.Error(op, n.where(), ehostdown)
	}
	n.mu.Lock()
	if n.link == link {
		in := n.inner
		n.mu.Unlock()
		return in, link, nil
	}
	n.mu.Unlock()
	in, err := vfs.Walk(ctx, link.root, n.path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			err = vfs.Error(op, n.where(), syscall.ESTALE) // gone while away
		}
		return nil, nil, err
	}
	n.mu.Lock()
	n.inner, n.link = in, link
	n.mu.Unlock()
	return in, link, nil
}

func (n *rnode) where() string { return path.Join("/mnt", n.id, n.path) }

func forget(n vfs.Node) {
	if f, ok := n.(vfs.Forgetter); ok {
		f.Forget()
	}
}

// child wraps a node reached from n by name on link.
func (n *rnode) child(name string, in vfs.Node, link *remote) *rnode {
	return &rnode{g: n.g, id: n.id, path: path.Join(n.path, name), inner: in, link: link}
}

// Forget gives back the node's fid on its link. The root is the link's
// own attach, shared by every walk, and stays.
func (n *rnode) Forget() {
	if n.path == "" {
		return
	}
	n.mu.Lock()
	in := n.inner
	n.inner, n.link = nil, nil
	n.mu.Unlock()
	if in != nil {
		forget(in)
	}
}

func (n *rnode) Attr(ctx context.Context) (vfs.Attr, error) {
	in, _, err := n.cur(ctx, "stat")
	if err != nil {
		if n.path == "" && vfs.Errno(err) == ehostdown {
			return offlineRootAttr(), nil
		}
		return vfs.Attr{}, err
	}
	return in.Attr(ctx)
}

// offlineRootAttr is how /mnt/ID stats while its device is offline: an
// empty directory nobody may enter, so that /mnt lists it.
func offlineRootAttr() vfs.Attr {
	return vfs.Attr{Ino: 1, Mode: syscall.S_IFDIR, Nlink: 2, Volatile: true,
		Atime: time.Unix(0, 0), Mtime: time.Unix(0, 0), Ctime: time.Unix(0, 0)}
}

func (n *rnode) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	in, _, err := n.cur(ctx, "setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	return in.SetAttr(ctx, s)
}

func (n *rnode) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	in, link, err := n.cur(ctx, "lookup")
	if err != nil {
		return nil, err
	}
	kid, err := in.Lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

// LookupAttr is Lookup with the child's attributes (vfs.AttrLookuper):
// one round trip to a gsvfs device.
func (n *rnode) LookupAttr(ctx context.Context, name string) (vfs.Node, vfs.Attr, error) {
	in, link, err := n.cur(ctx, "lookup")
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	kid, a, err := vfs.LookupAttr(ctx, in, name)
	if err != nil {
		return nil, vfs.Attr{}, err
	}
	return n.child(name, kid, link), a, nil
}

func (n *rnode) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	in, link, err := n.cur(ctx, "open")
	if err != nil {
		return nil, err
	}
	h, err := in.Open(ctx, flags)
	if err != nil {
		return nil, err
	}
	return n.handle(in, link, h, flags), nil
}

func (n *rnode) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	in, link, err := n.cur(ctx, "create")
	if err != nil {
		return nil, nil, err
	}
	kid, h, err := in.Create(ctx, name, flags, mode)
	if err != nil {
		return nil, nil, err
	}
	c := n.child(name, kid, link)
	return c, c.handle(kid, link, h, flags&^(os.O_CREATE|os.O_EXCL|os.O_TRUNC)), nil
}

func (n *rnode) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	in, link, err := n.cur(ctx, "mkdir")
	if err != nil {
		return nil, err
	}
	kid, err := in.Mkdir(ctx, name, mode)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

func (n *rnode) Remove(ctx context.Context, name string, dir bool) error {
	in, _, err := n.cur(ctx, "remove")
	if err != nil {
		return err
	}
	return in.Remove(ctx, name, dir)
}

// Rename passes the other directory's node on the same link; another
// device's directory is another tree (EXDEV).
func (n *rnode) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	to, ok := newDir.(*rnode)
	if !ok || to.g != n.g || to.id != n.id {
		return vfs.Error("rename", oldName, syscall.EXDEV)
	}
	in, _, err := n.cur(ctx, "rename")
	if err != nil {
		return err
	}
	toIn, _, err := to.cur(ctx, "rename")
	if err != nil {
		return err
	}
	return in.Rename(ctx, oldName, toIn, newName)
}

func (n *rnode) Readlink(ctx context.Context) (string, error) {
	in, _, err := n.cur(ctx, "readlink")
	if err != nil {
		return "", err
	}
	r, ok := in.(vfs.Readlinker)
	if !ok {
		return "", vfs.Error("readlink", n.where(), syscall.EINVAL)
	}
	return r.Readlink(ctx)
}

func (n *rnode) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	in, link, err := n.cur(ctx, "symlink")
	if err != nil {
		return nil, err
	}
	s, ok := in.(vfs.Symlinker)
	if !ok {
		return nil, vfs.Error("symlink", n.where(), syscall.EPERM)
	}
	kid, err := s.Symlink(ctx, name, target)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

func (n *rnode) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	t, ok := target.(*rnode)
	if !ok || t.g != n.g || t.id != n.id {
		return nil, vfs.Error("link", name, syscall.EXDEV)
	}
	in, link, err := n.cur(ctx, "link")
	if err != nil {
		return nil, err
	}
	tIn, _, err := t.cur(ctx, "link")
	if err != nil {
		return nil, err
	}
	l, ok := in.(vfs.Linker)
	if !ok {
		return nil, vfs.Error("link", n.where(), syscall.EPERM)
	}
	kid, err := l.Link(ctx, tIn, name)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

func (n *rnode) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	in, link, err := n.cur(ctx, "mknod")
	if err != nil {
		return nil, err
	}
	m, ok := in.(vfs.Mknoder)
	if !ok {
		return nil, vfs.Error("mknod", n.where(), syscall.EPERM)
	}
	kid, err := m.Mknod(ctx, name, mode, rdev)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

func (n *rnode) StatFS(ctx context.Context) (vfs.StatFS, error) {
	in, _, err := n.cur(ctx, "statfs")
	if err != nil {
		return vfs.StatFS{}, err
	}
	s, ok := in.(vfs.StatFSer)
	if !ok {
		return vfs.StatFS{}, vfs.Error("statfs", n.where(), syscall.ENOSYS)
	}
	return s.StatFS(ctx)
}

// xattrs runs fn on the node's extended attributes, ENOTSUP if it has
// none.
func (n *rnode) xattrs(ctx context.Context, op string, fn func(vfs.Xattrer) error) error {
	in, _, err := n.cur(ctx, op)
	if err != nil {
		return err
	}
	x, ok := in.(vfs.Xattrer)
	if !ok {
		return vfs.Error(op, n.where(), syscall.ENOTSUP)
	}
	return fn(x)
}

func (n *rnode) GetXattr(ctx context.Context, name string) (val []byte, err error) {
	err = n.xattrs(ctx, "getxattr", func(x vfs.Xattrer) error { val, err = x.GetXattr(ctx, name); return err })
	return val, err
}

func (n *rnode) SetXattr(ctx context.Context, name string, value []byte, flags int) error {
	return n.xattrs(ctx, "setxattr", func(x vfs.Xattrer) error { return x.SetXattr(ctx, name, value, flags) })
}

func (n *rnode) ListXattr(ctx context.Context) (names []string, err error) {
	err = n.xattrs(ctx, "listxattr", func(x vfs.Xattrer) error { names, err = x.ListXattr(ctx); return err })
	return names, err
}

func (n *rnode) RemoveXattr(ctx context.Context, name string) error {
	return n.xattrs(ctx, "removexattr", func(x vfs.Xattrer) error { return x.RemoveXattr(ctx, name) })
}
