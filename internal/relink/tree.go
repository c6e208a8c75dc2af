// Package relink keeps a tree reached over a link usable while the link
// is lost and made again: a gateway's view of a device at /mnt/ID, and a
// `gsvfs mount --server` of a daemon that restarts.
//
// A tree is made of nodes that each know their path from the root and
// the node they were reached by on the link of the moment. When the far
// end comes back on a new link, a node walks its path again on it, so
// the edge's nodes (and the kernel's inodes of them) stay good across an
// outage; open files are opened again at their path and go on at the
// offsets their callers ask for, in Plan 9's aan spirit, unless the file
// there is another one now (EIO then). While the far end is away every
// call fails at once with EHOSTDOWN; the root alone still answers stat,
// with the attributes it last had, so a listing of its parent shows it
// as it was.
package relink

import (
	"context"
	"errors"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// Link is one connection's attach of the far tree. A new connection is a
// new Link: nodes compare pointers to know whether theirs still holds.
type Link struct{ Root vfs.Node }

// Options configures a Tree.
type Options struct {
	// Where names the tree's root in errors: "/mnt/ID", or "/".
	Where string
	// Current is the link of the moment, nil while the far end is away.
	Current func() *Link
	// Known is the root's attributes as last seen before this Tree
	// existed (kept by its owner across restarts); zero if never seen.
	Known vfs.Attr
	// Remember, if set, is given the root's attributes the first time
	// they are read on each link, for its owner to keep: once a link, so
	// a far end cannot make it write more often than it can link.
	Remember func(vfs.Attr)
	// Locks sends the locks of open files to the far end (vfs.Locker),
	// where they exclude its other clients and its disk's programs.
	// Without it they are the daemon's memory locks. Either way they do
	// not outlive a link: a far end that comes back holds none of them.
	Locks bool
	// Gate, if set, is what the root shows of who may enter: its
	// attributes, online and away alike, and its POSIX access ACL are
	// the Gate's, whatever the far end says (a gateway's /mnt/ID).
	Gate Gate
}

// Gate decides what a tree's root shows of its owner and permissions.
type Gate interface {
	// Attr is the root's attributes as shown, made from a, the far end's
	// (or the last known).
	Attr(a vfs.Attr) vfs.Attr
	// ACL is the root's system.posix_acl_access when it shows a, nil
	// for none.
	ACL(a vfs.Attr) []byte
}

// aclAccess is the extended attribute of a file's POSIX access ACL.
const aclAccess = "system.posix_acl_access"

// Tree is a remote tree whose nodes outlive the links they are reached by.
type Tree struct {
	o Options

	mu    sync.Mutex
	last  vfs.Attr // the root's, as last read (or Known)
	noted *Link    // the link the root's attributes were last remembered on

	relay relay // the watchers of the tree (watch.go)
}

// New makes the tree that o.Current's links lead to.
func New(o Options) *Tree { return &Tree{o: o, last: o.Known} }

// Root is the tree's root: it walks nothing and is never forgotten.
func (t *Tree) Root() vfs.Node { return &node{t: t} }

// ehostdown is how calls under a tree whose far end is away fail, at once.
const ehostdown = syscall.EHOSTDOWN

// identified is a node that knows its server's id of the file without a
// round trip (vfs/ninep's client nodes do).
type identified interface{ Identity() uint64 }

type node struct {
	t    *Tree
	path string // from the tree's root, "" for the root itself

	mu    sync.Mutex
	inner vfs.Node
	link  *Link // the link inner belongs to
}

var (
	_ vfs.Node         = (*node)(nil)
	_ vfs.Readlinker   = (*node)(nil)
	_ vfs.Symlinker    = (*node)(nil)
	_ vfs.Linker       = (*node)(nil)
	_ vfs.Mknoder      = (*node)(nil)
	_ vfs.StatFSer     = (*node)(nil)
	_ vfs.Xattrer      = (*node)(nil)
	_ vfs.Forgetter    = (*node)(nil)
	_ vfs.AttrLookuper = (*node)(nil)
)

// cur is the node on the current link, walked again if the link changed
// since it was last used.
func (n *node) cur(ctx context.Context, op string) (vfs.Node, *Link, error) {
	link := n.t.o.Current()
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
	in, err := vfs.Walk(ctx, link.Root, n.path)
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

func (n *node) where() string { return path.Join(n.t.o.Where, n.path) }

func forget(n vfs.Node) {
	if f, ok := n.(vfs.Forgetter); ok {
		f.Forget()
	}
}

// childBy makes (or finds) the child name with mk on the current inner
// node, as operation op, and wraps it as a child on the same link.
func (n *node) childBy(ctx context.Context, op, name string, mk func(in vfs.Node) (vfs.Node, error)) (vfs.Node, error) {
	in, link, err := n.cur(ctx, op)
	if err != nil {
		return nil, err
	}
	kid, err := mk(in)
	if err != nil {
		return nil, err
	}
	return n.child(name, kid, link), nil
}

// child wraps a node reached from n by name on link.
func (n *node) child(name string, in vfs.Node, link *Link) *node {
	return &node{t: n.t, path: path.Join(n.path, name), inner: in, link: link}
}

// sameTree reports whether other is a node of n's tree, which a rename
// or a link may name; another tree is another file system (EXDEV).
func (n *node) sameTree(other vfs.Node) (*node, bool) {
	o, ok := other.(*node)
	return o, ok && o.t == n.t
}

// Forget gives back the node's fid on its link. The root is the link's
// own attach, shared by every walk, and stays.
func (n *node) Forget() {
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

func (n *node) Attr(ctx context.Context) (vfs.Attr, error) {
	a, err := n.attr(ctx)
	return n.gated(a), err
}

// gated is a as shown: the Gate's view of the root's attributes.
func (n *node) gated(a vfs.Attr) vfs.Attr {
	if n.gate() == nil || a.Ino == 0 {
		return a
	}
	return n.t.o.Gate.Attr(a)
}

// gate is the tree's Gate if n is its root, else nil.
func (n *node) gate() Gate {
	if n.path != "" {
		return nil
	}
	return n.t.o.Gate
}

func (n *node) attr(ctx context.Context) (vfs.Attr, error) {
	in, link, err := n.cur(ctx, "stat")
	if n.path != "" {
		if err != nil {
			return vfs.Attr{}, err
		}
		return in.Attr(ctx)
	}
	if err != nil {
		if vfs.Errno(err) == ehostdown {
			return n.t.away(), nil
		}
		return vfs.Attr{}, err
	}
	a, err := in.Attr(ctx)
	if err == nil {
		n.t.seen(link, a)
	}
	return a, err
}

// seen keeps the root's attributes as read on link, and hands them to
// Remember on the first read of each link.
func (t *Tree) seen(link *Link, a vfs.Attr) {
	t.mu.Lock()
	t.last = a
	first := t.noted != link
	t.noted = link
	t.mu.Unlock()
	if first && t.o.Remember != nil {
		t.o.Remember(a)
	}
}

// away is how the root stats while the far end is away: as it last was,
// volatile so that no edge caches it; never seen, an empty directory
// nobody may enter, dated 1970.
func (t *Tree) away() vfs.Attr {
	t.mu.Lock()
	a := t.last
	t.mu.Unlock()
	if a.Mode == 0 {
		epoch := time.Unix(0, 0)
		a = vfs.Attr{Ino: 1, Mode: syscall.S_IFDIR, Nlink: 2, Atime: epoch, Mtime: epoch, Ctime: epoch}
	}
	a.Volatile, a.Fixed = true, false // a stand-in until the tree is back
	return a
}

func (n *node) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	in, _, err := n.cur(ctx, "setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	a, err := in.SetAttr(ctx, s)
	return n.gated(a), err
}

func (n *node) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	return n.childBy(ctx, "lookup", name, func(in vfs.Node) (vfs.Node, error) { return in.Lookup(ctx, name) })
}

// LookupAttr is Lookup with the child's attributes (vfs.AttrLookuper):
// one round trip to a gsvfs far end.
func (n *node) LookupAttr(ctx context.Context, name string) (vfs.Node, vfs.Attr, error) {
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

func (n *node) Open(ctx context.Context, flags int) (vfs.Handle, error) {
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

func (n *node) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
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

func (n *node) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	return n.childBy(ctx, "mkdir", name, func(in vfs.Node) (vfs.Node, error) { return in.Mkdir(ctx, name, mode) })
}

func (n *node) Remove(ctx context.Context, name string, dir bool) error {
	in, _, err := n.cur(ctx, "remove")
	if err != nil {
		return err
	}
	return in.Remove(ctx, name, dir)
}

// Rename passes the other directory's node on the same link.
func (n *node) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	to, ok := n.sameTree(newDir)
	if !ok {
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

func (n *node) Readlink(ctx context.Context) (string, error) {
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

func (n *node) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	return n.childBy(ctx, "symlink", name, func(in vfs.Node) (vfs.Node, error) { return vfs.Symlink(ctx, in, name, target) })
}

func (n *node) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	t, ok := n.sameTree(target)
	if !ok {
		return nil, vfs.Error("link", name, syscall.EXDEV)
	}
	return n.childBy(ctx, "link", name, func(in vfs.Node) (vfs.Node, error) {
		tIn, _, err := t.cur(ctx, "link")
		if err != nil {
			return nil, err
		}
		return vfs.Link(ctx, in, tIn, name)
	})
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	return n.childBy(ctx, "mknod", name, func(in vfs.Node) (vfs.Node, error) { return vfs.Mknod(ctx, in, name, mode, rdev) })
}

func (n *node) StatFS(ctx context.Context) (vfs.StatFS, error) {
	in, _, err := n.cur(ctx, "statfs")
	if err != nil {
		return vfs.StatFS{}, err
	}
	return vfs.StatFSOf(ctx, in)
}

// xattrs runs fn on the node's extended attributes, ENOTSUP if it has
// none.
func (n *node) xattrs(ctx context.Context, op string, fn func(vfs.Xattrer) error) error {
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

// GetXattr reads an extended attribute of the far end's file. While the
// far end is away, a POSIX ACL answers as absent rather than EHOSTDOWN:
// the kernel asks for it to check a permission and ls -l to mark ACLs,
// and an offline device's files keep showing their last attributes
// (gsvfs-devices(7)); any real use of the file still fails.
func (n *node) GetXattr(ctx context.Context, name string) (val []byte, err error) {
	if g := n.gate(); g != nil && name == aclAccess {
		if acl := n.acl(ctx, g); acl != nil {
			return acl, nil
		}
		return nil, vfs.Error("getxattr", n.where(), syscall.ENODATA)
	}
	err = n.xattrs(ctx, "getxattr", func(x vfs.Xattrer) error { val, err = x.GetXattr(ctx, name); return err })
	if errors.Is(err, ehostdown) && (name == "system.posix_acl_access" || name == "system.posix_acl_default") {
		return nil, vfs.Error("getxattr", n.where(), syscall.ENODATA)
	}
	return val, err
}

// acl is the ACL the root's gate g shows, online or away.
func (n *node) acl(ctx context.Context, g Gate) []byte {
	a, err := n.Attr(ctx)
	if err != nil {
		return nil
	}
	return g.ACL(a)
}

// SetXattr refuses the root's ACL where a Gate keeps it (EPERM).
func (n *node) SetXattr(ctx context.Context, name string, value []byte, flags int) error {
	if n.gate() != nil && name == aclAccess {
		return vfs.Error("setxattr", n.where(), syscall.EPERM)
	}
	return n.xattrs(ctx, "setxattr", func(x vfs.Xattrer) error { return x.SetXattr(ctx, name, value, flags) })
}

func (n *node) ListXattr(ctx context.Context) (names []string, err error) {
	err = n.xattrs(ctx, "listxattr", func(x vfs.Xattrer) error { names, err = x.ListXattr(ctx); return err })
	if g := n.gate(); g != nil && err == nil {
		names = slices.DeleteFunc(names, func(s string) bool { return s == aclAccess })
		if n.acl(ctx, g) != nil {
			names = append(names, aclAccess)
		}
	}
	return names, err
}

// RemoveXattr refuses as SetXattr does.
func (n *node) RemoveXattr(ctx context.Context, name string) error {
	if n.gate() != nil && name == aclAccess {
		return vfs.Error("removexattr", n.where(), syscall.EPERM)
	}
	return n.xattrs(ctx, "removexattr", func(x vfs.Xattrer) error { return x.RemoveXattr(ctx, name) })
}
