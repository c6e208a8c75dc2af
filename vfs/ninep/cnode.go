package ninep

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// node is a remote file seen through the client: a fid walked to it and
// never opened (opens clone it), so one node serves any number of handles.
type node struct {
	c       *Client
	fid     uint32 // set once ready: at once, unless made from a listing
	qid     QID
	uid     uint32 // the user the fid was attached as
	once    sync.Once
	cleanup runtime.Cleanup
	ext     // what the extensions add (cwalk.go)
}

var (
	_ vfs.Node       = (*node)(nil)
	_ vfs.Readlinker = (*node)(nil)
	_ vfs.Symlinker  = (*node)(nil)
	_ vfs.Linker     = (*node)(nil)
	_ vfs.Mknoder    = (*node)(nil)
	_ vfs.StatFSer   = (*node)(nil)
	_ vfs.Xattrer    = (*node)(nil)
	_ vfs.Forgetter  = (*node)(nil)
)

func (c *Client) newNode(fid uint32, q QID, uid uint32) *node {
	n := &node{c: c, fid: fid, qid: q, uid: uid}
	// A node nobody forgets explicitly gives its fid back when collected.
	n.cleanup = runtime.AddCleanup(n, c.clunkLater, fid)
	return n
}

// Identity is the server's unique id of the file (its QID path), known
// without a round trip: a client that reaches the file again by name on
// another connection can tell whether it is the same file.
func (n *node) Identity() uint64 { return n.qid.Path }

// Forget gives the node's fid back (vfs.Forgetter): the edge will not use
// the node again. The clunk is queued, so a kernel's forget never waits
// on the server.
func (n *node) Forget() {
	n.once.Do(n.release)
}

// clone walks a new fid to the same file, for opening or creating.
func (n *node) clone(ctx context.Context) (uint32, error) {
	if err := n.ready(ctx); err != nil {
		return 0, err
	}
	fid := n.c.newFid()
	if _, err := do[*Rwalk](ctx, n.c, &Twalk{Fid: n.fid, NewFid: fid}); err != nil {
		n.c.releaseFid(fid)
		return 0, err
	}
	return fid, nil
}

// releaseFid returns a fid number that the server never took.
func (c *Client) releaseFid(fid uint32) {
	c.mu.Lock()
	c.fids.put(fid)
	c.mu.Unlock()
}

func (n *node) Attr(ctx context.Context) (vfs.Attr, error) {
	if a, ok, err := n.readyAttr(ctx); ok || err != nil {
		return a, asErr("getattr", err)
	}
	return n.c.getattr(ctx, n.fid)
}

func (c *Client) getattr(ctx context.Context, fid uint32) (vfs.Attr, error) {
	r, err := do[*Rgetattr](ctx, c, &Tgetattr{Fid: fid, Mask: AttrBasic})
	if err != nil {
		return vfs.Attr{}, asErr("getattr", err)
	}
	return attrFromWire(r), nil
}

// attrFromWire converts Rgetattr. A regular file with QID version 0 is
// taken as volatile: gsvfs's server marks generated files that way.
func attrFromWire(r *Rgetattr) vfs.Attr {
	return vfs.Attr{
		Ino: r.QID.Path, Gen: r.Gen, Mode: r.Mode, Nlink: uint32(r.Nlink),
		Uid: r.Uid, Gid: r.Gid, Rdev: r.Rdev, Size: int64(r.Size),
		Blocks: int64(r.Blocks), Blksize: uint32(r.Blksize),
		Atime:    time.Unix(int64(r.AtimeSec), int64(r.AtimeNsec)),
		Mtime:    time.Unix(int64(r.MtimeSec), int64(r.MtimeNsec)),
		Ctime:    time.Unix(int64(r.CtimeSec), int64(r.CtimeNsec)),
		Volatile: r.Mode&syscall.S_IFMT == syscall.S_IFREG && r.QID.Version == 0,
	}
}

func (n *node) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if err := n.ready(ctx); err != nil {
		return vfs.Attr{}, asErr("setattr", err)
	}
	return n.c.setattr(ctx, n.fid, s)
}

func (c *Client) setattr(ctx context.Context, fid uint32, s vfs.SetAttr) (vfs.Attr, error) {
	if _, err := do[*Rsetattr](ctx, c, setattrToWire(fid, s)); err != nil {
		return vfs.Attr{}, asErr("setattr", err)
	}
	return c.getattr(ctx, fid)
}

func setattrToWire(fid uint32, s vfs.SetAttr) *Tsetattr {
	m := &Tsetattr{Fid: fid, Mode: s.Mode, Uid: s.Uid, Gid: s.Gid, Size: uint64(s.Size)}
	bits := []struct {
		has  vfs.SetMask
		wire uint32
	}{
		{vfs.SetMode, SetattrMode}, {vfs.SetUid, SetattrUid}, {vfs.SetGid, SetattrGid},
		{vfs.SetSize, SetattrSize}, {vfs.SetAtimeNow, SetattrAtime}, {vfs.SetMtimeNow, SetattrMtime},
		{vfs.SetAtime, SetattrAtime | SetattrAtimeSet}, {vfs.SetMtime, SetattrMtime | SetattrMtimeSet},
	}
	for _, b := range bits {
		if s.Has(b.has) {
			m.Valid |= b.wire
		}
	}
	if s.Has(vfs.SetAtime) {
		m.AtimeSec, m.AtimeNsec = wireTime(s.Atime)
	}
	if s.Has(vfs.SetMtime) {
		m.MtimeSec, m.MtimeNsec = wireTime(s.Mtime)
	}
	return m
}

func (n *node) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	if err := vfs.CheckName("lookup", name); err != nil {
		return nil, err
	}
	if child, _ := n.fromListing(name); child != nil {
		return child, nil
	}
	return n.walkTo(ctx, name)
}

// walkTo walks a new fid to the child name and makes it a node.
func (n *node) walkTo(ctx context.Context, name string) (vfs.Node, error) {
	fid, q, err := n.walkFid(ctx, name)
	if err != nil {
		return nil, asErr("lookup", err)
	}
	return n.c.newNode(fid, q, n.uid), nil
}

// walkFid walks a new fid to the child name. On failure the fid number
// is free again.
func (n *node) walkFid(ctx context.Context, name string) (uint32, QID, error) {
	if err := n.ready(ctx); err != nil {
		return 0, QID{}, err
	}
	fid := n.c.newFid()
	r, err := do[*Rwalk](ctx, n.c, &Twalk{Fid: n.fid, NewFid: fid, Names: []string{name}})
	if err == nil && len(r.QIDs) != 1 {
		err = syscall.ENOENT
	}
	if err != nil {
		n.c.releaseFid(fid)
		return 0, QID{}, err
	}
	return fid, r.QIDs[0], nil
}

// made returns the node of a file this client just created, owned by the
// caller. 9P names one user per attach, so a daemon attached as root on
// behalf of many users (a FUSE mount with allow_other) says whose each
// new file is with a chown, as a local filesystem would have made it.
func (n *node) made(ctx context.Context, name string) (vfs.Node, error) {
	child, err := n.walkTo(ctx, name)
	if err != nil {
		return nil, err
	}
	cl, ok := vfs.CallerFrom(ctx)
	if !ok || n.uid != 0 || cl.Uid == 0 {
		return child, nil
	}
	fid := child.(*node).fid
	if _, err := do[*Rsetattr](ctx, n.c, &Tsetattr{Fid: fid, Valid: SetattrUid, Uid: cl.Uid}); err != nil {
		return nil, asErr("chown", err)
	}
	return child, nil
}

func (n *node) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	fid, err := n.clone(ctx)
	if err != nil {
		return nil, asErr("open", err)
	}
	r, err := do[*Rlopen](ctx, n.c, &Tlopen{Fid: fid, Flags: uint32(flags)})
	if err != nil {
		n.c.clunk(fid)
		return nil, asErr("open", err)
	}
	h := n.c.newHandle(fid, r.QID)
	if d, ok := h.(*dirHandle); ok {
		d.dir = n // its listings may prefill n's lookups
	}
	return h, nil
}

// callerGid is the group new files get: the caller's, else ours.
func callerGid(ctx context.Context) uint32 {
	if cl, ok := vfs.CallerFrom(ctx); ok {
		return cl.Gid
	}
	return uint32(os.Getegid())
}

func (n *node) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if err := vfs.CheckName("create", name); err != nil {
		return nil, nil, err
	}
	fid, err := n.clone(ctx)
	if err != nil {
		return nil, nil, asErr("create", err)
	}
	r, err := do[*Rlcreate](ctx, n.c, &Tlcreate{Fid: fid, Name: name, Flags: uint32(flags), Mode: mode, Gid: callerGid(ctx)})
	if err != nil {
		n.c.clunk(fid)
		return nil, nil, asErr("create", err)
	}
	h := n.c.newHandle(fid, r.QID)
	child, err := n.made(ctx, name)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return child, h, nil
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	if err := vfs.CheckName("mkdir", name); err != nil {
		return nil, err
	}
	if err := n.ready(ctx); err != nil {
		return nil, asErr("mkdir", err)
	}
	if _, err := do[*Rmkdir](ctx, n.c, &Tmkdir{Dfid: n.fid, Name: name, Mode: mode, Gid: callerGid(ctx)}); err != nil {
		return nil, asErr("mkdir", err)
	}
	return n.made(ctx, name)
}

func (n *node) Remove(ctx context.Context, name string, dir bool) error {
	if err := vfs.CheckName("remove", name); err != nil {
		return err
	}
	var flags uint32
	if dir {
		flags = AtRemoveDir
	}
	if err := n.ready(ctx); err != nil {
		return asErr("remove", err)
	}
	_, err := do[*Runlinkat](ctx, n.c, &Tunlinkat{Dfid: n.fid, Name: name, Flags: flags})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = n.removeByFid(ctx, name, dir) // diod has no Tunlinkat
	}
	return asErr("remove", err)
}

// removeByFid is Remove for servers without Tunlinkat, as Linux's client
// falls back: walk to the child, check its type, and Tremove it.
func (n *node) removeByFid(ctx context.Context, name string, dir bool) error {
	fid, q, err := n.walkFid(ctx, name)
	if err != nil {
		return err
	}
	switch isDir := q.Type&QTDir != 0; {
	case dir && !isDir:
		n.c.clunk(fid)
		return syscall.ENOTDIR
	case !dir && isDir:
		n.c.clunk(fid)
		return syscall.EISDIR
	}
	_, err = do[*Rremove](ctx, n.c, &Tremove{fidMsg{fid}})
	n.c.releaseFid(fid) // Tremove clunks the fid whatever the outcome
	return err
}

func (n *node) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	to, ok := newDir.(*node)
	if !ok || to.c != n.c {
		return vfs.Error("rename", newName, syscall.EXDEV)
	}
	for _, name := range []string{oldName, newName} {
		if err := vfs.CheckName("rename", name); err != nil {
			return err
		}
	}
	if err := readyBoth(ctx, n, to); err != nil {
		return asErr("rename", err)
	}
	_, err := do[*Rrenameat](ctx, n.c, &Trenameat{OldDfid: n.fid, OldName: oldName, NewDfid: to.fid, NewName: newName})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = n.renameByFid(ctx, oldName, to, newName) // diod has no Trenameat
	}
	return asErr("rename", err)
}

// renameByFid is Rename for servers without Trenameat, as Linux's client
// falls back: walk to the child and Trename it.
func (n *node) renameByFid(ctx context.Context, oldName string, to *node, newName string) error {
	fid, _, err := n.walkFid(ctx, oldName)
	if err != nil {
		return err
	}
	defer n.c.clunk(fid)
	_, err = do[*Rrename](ctx, n.c, &Trename{Fid: fid, Dfid: to.fid, Name: newName})
	return err
}

func (n *node) Readlink(ctx context.Context) (string, error) {
	if err := n.ready(ctx); err != nil {
		return "", asErr("readlink", err)
	}
	r, err := do[*Rreadlink](ctx, n.c, &Treadlink{Fid: n.fid})
	if err != nil {
		return "", asErr("readlink", err)
	}
	return r.Target, nil
}

func (n *node) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	if err := vfs.CheckName("symlink", name); err != nil {
		return nil, err
	}
	if err := n.ready(ctx); err != nil {
		return nil, asErr("symlink", err)
	}
	if _, err := do[*Rsymlink](ctx, n.c, &Tsymlink{Fid: n.fid, Name: name, Target: target, Gid: callerGid(ctx)}); err != nil {
		return nil, asErr("symlink", err)
	}
	return n.made(ctx, name)
}

func (n *node) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	t, ok := target.(*node)
	if !ok || t.c != n.c {
		return nil, vfs.Error("link", name, syscall.EXDEV)
	}
	if err := vfs.CheckName("link", name); err != nil {
		return nil, err
	}
	if err := readyBoth(ctx, n, t); err != nil {
		return nil, asErr("link", err)
	}
	if _, err := do[*Rlink](ctx, n.c, &Tlink{Dfid: n.fid, Fid: t.fid, Name: name}); err != nil {
		return nil, asErr("link", err)
	}
	return n.walkTo(ctx, name)
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	if err := vfs.CheckName("mknod", name); err != nil {
		return nil, err
	}
	major := uint32(rdev>>32&0xfffff000 | rdev>>8&0xfff)
	minor := uint32(rdev>>12&0xffffff00 | rdev&0xff)
	if err := n.ready(ctx); err != nil {
		return nil, asErr("mknod", err)
	}
	m := &Tmknod{Dfid: n.fid, Name: name, Mode: mode, Major: major, Minor: minor, Gid: callerGid(ctx)}
	if _, err := do[*Rmknod](ctx, n.c, m); err != nil {
		return nil, asErr("mknod", err)
	}
	return n.made(ctx, name)
}

func (n *node) StatFS(ctx context.Context) (vfs.StatFS, error) {
	if err := n.ready(ctx); err != nil {
		return vfs.StatFS{}, asErr("statfs", err)
	}
	r, err := do[*Rstatfs](ctx, n.c, &Tstatfs{Fid: n.fid})
	if err != nil {
		return vfs.StatFS{}, asErr("statfs", err)
	}
	return vfs.StatFS{Bsize: r.Bsize, Frsize: r.Bsize, Blocks: r.Blocks, Bfree: r.Bfree,
		Bavail: r.Bavail, Files: r.Files, Ffree: r.Ffree, NameLen: r.Namelen}, nil
}

func (n *node) GetXattr(ctx context.Context, name string) ([]byte, error) {
	return n.xattrRead(ctx, name)
}

func (n *node) ListXattr(ctx context.Context) ([]string, error) {
	b, err := n.xattrRead(ctx, "")
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// xattrRead walks a fid to an attribute (or the name list) and reads it.
func (n *node) xattrRead(ctx context.Context, name string) ([]byte, error) {
	if err := n.ready(ctx); err != nil {
		return nil, asErr("getxattr", err)
	}
	fid := n.c.newFid()
	r, err := do[*Rxattrwalk](ctx, n.c, &Txattrwalk{Fid: n.fid, NewFid: fid, Name: name})
	if err != nil {
		n.c.releaseFid(fid)
		return nil, asErr("getxattr", err)
	}
	defer n.c.clunk(fid)
	if r.Size > xattrMax {
		return nil, vfs.Error("getxattr", name, syscall.E2BIG)
	}
	buf := make([]byte, r.Size)
	got, err := n.c.readAt(ctx, fid, buf, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return buf[:got], nil
}

func (n *node) SetXattr(ctx context.Context, name string, value []byte, flags int) error {
	return n.xattrWrite(ctx, name, value, flags)
}

func (n *node) RemoveXattr(ctx context.Context, name string) error {
	return n.xattrWrite(ctx, name, nil, xattrReplace)
}

// xattrWrite sets an attribute: Txattrcreate, the value in Twrites, and
// the clunk that commits it (and reports the outcome).
func (n *node) xattrWrite(ctx context.Context, name string, value []byte, flags int) error {
	fid, err := n.clone(ctx)
	if err != nil {
		return asErr("setxattr", err)
	}
	m := &Txattrcreate{Fid: fid, Name: name, Size: uint64(len(value)), Flags: uint32(flags)}
	if _, err := do[*Rxattrcreate](ctx, n.c, m); err != nil {
		n.c.clunk(fid)
		return asErr("setxattr", err)
	}
	if _, err := n.c.writeAt(ctx, fid, value, 0); err != nil {
		n.c.clunk(fid)
		return err
	}
	_, err = do[*Rclunk](ctx, n.c, &Tclunk{fidMsg{fid}})
	n.c.releaseFid(fid) // clunked whatever the answer
	return asErr("setxattr", err)
}
