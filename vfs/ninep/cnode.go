package ninep

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
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
	c.cache.sameFile(q)
	// A node nobody forgets explicitly gives its fid back when collected.
	// A method sending n.fid keeps n alive until its call ends
	// (runtime.KeepAlive): else a caller that holds the node nowhere else
	// could see its fid clunked, or given to another file, mid-call.
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
	defer runtime.KeepAlive(n) // see newNode
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

// Attr answers from the cache when it can (ccache.go).
func (n *node) Attr(ctx context.Context) (vfs.Attr, error) {
	defer runtime.KeepAlive(n) // see newNode
	k := cacheKey{cAttr, n.qid.Path, ""}
	if v, ok := n.c.cache.get(k); ok {
		return v.(vfs.Attr), nil
	}
	gen := n.c.cache.since()
	a, walked, err := n.readyAttr(ctx)
	if err == nil && !walked {
		return n.c.statHeld(ctx, n.fid, gen)
	}
	if err != nil {
		return vfs.Attr{}, asErr("getattr", err)
	}
	n.c.putAttr(a, gen)
	return a, nil
}

// statHeld asks the server for fid's attributes, fetched in generation
// gen, and holds what it said (heldStat): with the extensions, whether
// the file has extended attributes too, which spares a stat's follower
// (ls -l's getxattr) its round trip.
func (c *Client) statHeld(ctx context.Context, fid uint32, gen uint64) (vfs.Attr, error) {
	r, err := do[*Rgetattr](ctx, c, &Tgetattr{Fid: fid, Mask: AttrBasic})
	if err != nil {
		return vfs.Attr{}, asErr("getattr", err)
	}
	return c.heldStat(r, gen), nil
}

// heldStat is what the server said of a file (r, fetched in generation
// gen), held: its attributes and, if it said so, that it has no
// extended attributes.
func (c *Client) heldStat(r *Rgetattr, gen uint64) vfs.Attr { return c.heldStatVia(r, gen, 0) }

// heldStatVia is heldStat of a file found by name in directory dir
// (cache.putVia). That a file has no extended attributes is held for a
// generated file too, whose attributes are not: the server says so of
// every generated file (fileAttrToWire), and the kernel asks for
// security.capability at every write (a session's ctl).
func (c *Client) heldStatVia(r *Rgetattr, gen, dir uint64) vfs.Attr {
	a := c.wireAttr(r)
	c.putAttrVia(a, gen, dir)
	c.cache.putNoXattrs(r, gen)
	return a
}

// heldReply is heldStat for the server's answer to a change this client
// just made, after it dropped what the change made stale: held briefly
// (cache.putBrief).
func (c *Client) heldReply(r *Rgetattr) vfs.Attr {
	a := c.wireAttr(r)
	if !a.Volatile {
		c.cache.putBrief(cacheKey{cAttr, a.Ino, ""}, a, 1)
	}
	c.cache.putBriefNoXattrs(r)
	return a
}

// putAttr holds a, fetched in generation gen. Only a gsvfs server marks
// generated files by QID version 0; to a plain one (diod) it means
// nothing, and its files are held.
func (c *Client) putAttr(a vfs.Attr, gen uint64) { c.putAttrVia(a, gen, 0) }

// putAttrVia is putAttr of a file found by name in directory dir.
// Fixed attributes are held until dropped, generated file or not, with
// notices or without: no change to come can make them stale.
func (c *Client) putAttrVia(a vfs.Attr, gen, dir uint64) {
	switch {
	case a.Fixed:
		c.cache.putFixed(a, gen)
	case !(a.Volatile && c.extended):
		c.cache.putVia(cacheKey{cAttr, a.Ino, ""}, a, 1, a.Watched, gen, dir)
	}
}

// watched says whether the server reports changes to n (and, for a
// directory, to its entries), as far as the cache knows.
func (n *node) watched() bool { return n.c.cache.watched(n.qid.Path) }

// getattr stats fid. A file is watched only while the server's notices
// flow on this connection.
func (c *Client) getattr(ctx context.Context, fid uint32) (vfs.Attr, error) {
	r, err := do[*Rgetattr](ctx, c, &Tgetattr{Fid: fid, Mask: AttrBasic})
	if err != nil {
		return vfs.Attr{}, asErr("getattr", err)
	}
	return c.wireAttr(r), nil
}

// wireAttr is what the server said of a file, watched only while its
// notices flow on this connection (a server's mark alone does not keep
// the cache true), generated only if a gsvfs server says so: to a plain
// one (diod) QID version 0 means nothing, and what this client's own
// server says of a generated file (fileAttrToWire: no extended
// attributes) must not be said of one of its.
func (c *Client) wireAttr(r *Rgetattr) vfs.Attr {
	a := c.ids.attr(c.host.attrFromWire(r))
	a.Watched = a.Watched && c.notices.on.Load()
	a.Volatile = a.Volatile && c.extended
	a.Fixed = a.Fixed && c.extended
	return a
}

// generated reports whether q is a generated file's, as gsvfs's server
// marks them: a plain file of QID version 0 (attrQID). Its content is
// never cached, its attributes held only if the server says they are
// fixed (AttrGsvfsFixed).
func (q QID) generated() bool { return q.Type == QTFile && q.Version == 0 }

// attrFromWire converts Rgetattr. A regular file with QID version 0 is
// taken as volatile: gsvfs's server marks generated files that way.
func (h *hostNumbers) attrFromWire(r *Rgetattr) vfs.Attr {
	return vfs.Attr{
		Ino: r.QID.Path, Gen: r.Gen, Mode: h.modeFromWire(r.Mode), Nlink: uint32(r.Nlink),
		Uid: r.Uid, Gid: r.Gid, Rdev: h.devFromWire(r.Rdev), Size: int64(r.Size),
		Blocks: int64(r.Blocks), Blksize: uint32(r.Blksize),
		Atime:    time.Unix(int64(r.AtimeSec), int64(r.AtimeNsec)),
		Mtime:    time.Unix(int64(r.MtimeSec), int64(r.MtimeNsec)),
		Ctime:    time.Unix(int64(r.CtimeSec), int64(r.CtimeNsec)),
		Volatile: r.Mode&wS_IFMT == wS_IFREG && r.QID.Version == 0,
		Watched:  r.Valid&AttrGsvfsWatched != 0,
		Fixed:    r.Valid&AttrGsvfsFixed != 0,
	}
}

func (n *node) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	defer runtime.KeepAlive(n) // see newNode
	if err := n.ready(ctx); err != nil {
		return vfs.Attr{}, asErr("setattr", err)
	}
	return n.c.setattr(ctx, n.fid, n.qid.Path, s)
}

// setattr changes fid's file, ino, and drops what the cache held of it
// (a mode change changes its ACL too).
// setattr changes the file's attributes and returns them: with the
// extensions in one round trip (Tsetattrget), the answer held briefly
// (the kernel asks for them again at once), else a Tsetattr and a
// Tgetattr.
func (c *Client) setattr(ctx context.Context, fid uint32, ino uint64, s vfs.SetAttr) (vfs.Attr, error) {
	defer c.cache.owning(ino)()
	s, err := c.ids.toServer(s)
	if err != nil {
		return vfs.Attr{}, err
	}
	if c.extended {
		r, err := do[*Rsetattrget](ctx, c, &Tsetattrget{*c.host.setattrToWire(fid, s)})
		c.cache.dropChanged(ino)
		if err != nil {
			return vfs.Attr{}, asErr("setattr", err)
		}
		return c.heldReply(&r.Rgetattr), nil
	}
	_, err = do[*Rsetattr](ctx, c, c.host.setattrToWire(fid, s))
	c.cache.dropChanged(ino)
	if err != nil {
		return vfs.Attr{}, asErr("setattr", err)
	}
	return c.getattr(ctx, fid)
}

// setattrToWire is the Tsetattr that asks for s.
func (h *hostNumbers) setattrToWire(fid uint32, s vfs.SetAttr) *Tsetattr {
	m := &Tsetattr{Fid: fid, Mode: h.modeToWire(s.Mode), Uid: s.Uid, Gid: s.Gid, Size: uint64(s.Size)}
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

// Lookup answers a name known missing from the cache.
func (n *node) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	if err := vfs.CheckName("lookup", name); err != nil {
		return nil, err
	}
	if kid, _, found, err := n.known(name); found {
		if err != nil {
			return nil, err
		}
		return kid, nil
	}
	miss := cacheKey{cMiss, n.qid.Path, name}
	gen := n.c.cache.since()
	child, err := n.walkTo(ctx, name)
	if errors.Is(err, syscall.ENOENT) {
		n.c.cache.put(miss, nil, 1, n.watched(), gen)
	}
	return child, err
}

// walkTo walks a new fid to the child name and makes it a node.
func (n *node) walkTo(ctx context.Context, name string) (vfs.Node, error) {
	fid, q, err := n.walkFid(ctx, name)
	if err != nil {
		return nil, asErr("lookup", err)
	}
	n.c.cache.walked(n.qid.Path, name, q.Path)
	return n.c.newNode(fid, q, n.uid), nil
}

// walkFid walks a new fid to the child name. On failure the fid number
// is free again.
func (n *node) walkFid(ctx context.Context, name string) (uint32, QID, error) {
	defer runtime.KeepAlive(n) // see newNode
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

// givesAway reports whether a file this client makes for the caller in
// ctx is then given to the caller, and to whom. 9P names one user per
// attach, so a daemon attached as root on behalf of many users (a FUSE
// mount with allow_other) says whose each new file is with a chown, as a
// local filesystem would have made it.
func (n *node) givesAway(ctx context.Context) (uint32, bool) {
	cl, ok := vfs.CallerFrom(ctx)
	return cl.Uid, ok && n.uid == 0 && cl.Uid != 0
}

// unmake removes the entry name that this client just made, whose chown
// to its caller the server refused: a failed create leaves nothing. It
// runs even if ctx ended, since the entry would stay otherwise.
func (n *node) unmake(ctx context.Context, name string, dir bool) {
	n.Remove(context.WithoutCancel(ctx), name, dir)
}

// made returns the node of a file this client just created, given to the
// caller (givesAway); if that fails, the file is removed again.
func (n *node) made(ctx context.Context, name string) (vfs.Node, error) {
	child, err := n.walkTo(ctx, name)
	if err != nil {
		return nil, err
	}
	// The server may give a new file the inode number of one removed
	// moments ago, whose attributes the cache may still hold (its
	// removal's notice not come yet, or the removal our own, by name).
	defer n.c.cache.dropFile(child.(*node).qid.Path)
	uid, gives := n.givesAway(ctx)
	if !gives {
		return child, nil
	}
	kid := child.(*node)
	if _, err := n.c.setattr(ctx, kid.fid, kid.qid.Path, vfs.SetAttr{Valid: vfs.SetUid, Uid: uid}); err != nil {
		n.unmake(ctx, name, kid.qid.Type&QTDir != 0)
		return nil, asErr("chown", err)
	}
	return child, nil
}

// Open answers from the cache what it can without the server (clazy.go):
// a directory whose listing is held, a stored file for reading whose
// attributes the notices vouch for.
func (n *node) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if h := n.cachedDir(flags); h != nil {
		return h, nil
	}
	if h := n.cachedFile(flags); h != nil {
		return h, nil
	}
	return n.openFilling(ctx, flags)
}

// openFilling opens the file on the server; a directory's listing read
// whole from its start is cached (cdir.go).
func (n *node) openFilling(ctx context.Context, flags int) (vfs.Handle, error) {
	gen := n.c.cache.since()
	h, err := n.open(ctx, flags)
	if d, ok := h.(*dirHandle); ok {
		d.fill = &dirFill{n: n, gen: gen}
	}
	return h, err
}

// open opens a fid of its own on the file: a directory for reading with
// its first entries in the same round trip, where the server can
// (clist.go).
func (n *node) open(ctx context.Context, flags int) (vfs.Handle, error) {
	if h, ok, err := n.openListing(ctx, flags); ok {
		return h, err
	}
	fid, r, err := n.openFid(ctx, flags)
	if err != nil {
		return nil, asErr("open", err)
	}
	h := n.c.newHandle(fid, r.QID, flags)
	if d, ok := h.(*dirHandle); ok {
		d.dir = n // its listings may prefill n's lookups
	} else if n.c.exact && !(n.c.extended && r.QID.generated()) {
		if err := n.c.vouch(ctx, fid); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// vouch makes what the cache holds of the file just opened through fid
// the server's answer now (ClientOptions.Exact: a notice of a change
// made before the open may not have come yet). Held otherwise, the file
// changed: what was held is dropped, its content's count moved, and the
// answer held briefly, as one to this client's own change is. A
// generated file is not vouched for: nothing of it is held (putAttrVia,
// heldReply) and its handles read no window ahead (newHandle), so the
// answer would change nothing, and it cost a round trip at every open
// of a session's ctl or wait through a gateway.
func (c *Client) vouch(ctx context.Context, fid uint32) error {
	r, err := do[*Rgetattr](ctx, c, &Tgetattr{Fid: fid, Mask: AttrBasic})
	if err != nil {
		return asErr("getattr", err)
	}
	if a := c.wireAttr(r); !c.cache.holdsAsIs(a) {
		c.cache.dropFile(a.Ino)
		c.cache.changedContent(a.Ino)
		c.heldReply(r)
	}
	return nil
}

// openFid walks a new fid to the file and opens it: with the extensions
// in one Twalkopen, else a Twalk and a Tlopen. A node made from a listing
// and never walked is walked by name from its directory in the same
// request, which gives it its own fid too (the server then holds the
// file, and watches a directory, for as long as the node lives).
func (n *node) openFid(ctx context.Context, flags int) (uint32, *Rlopen, error) {
	return n.openFidBy(ctx, flags, n.c.walkOpen)
}

// openFidBy is openFid sending the Twalkopen with send (which gives it
// its new fid).
func (n *node) openFidBy(ctx context.Context, flags int, send func(context.Context, *Twalkopen) (uint32, *Rlopen, error)) (uint32, *Rlopen, error) {
	if !n.c.extended {
		fid, err := n.clone(ctx)
		if err != nil {
			return 0, nil, err
		}
		r, err := do[*Rlopen](ctx, n.c, &Tlopen{Fid: fid, Flags: n.c.host.openToWire(flags)})
		if err != nil {
			n.c.clunk(fid)
			return 0, nil, err
		}
		return fid, r, nil
	}
	defer runtime.KeepAlive(n) // see newNode
	n.mu.Lock()
	defer n.mu.Unlock()
	dir := n.from
	if dir == nil {
		return send(ctx, &Twalkopen{NodeFid: NoFid, Twalk: Twalk{Fid: n.fid}, Flags: n.c.host.openToWire(flags)})
	}
	// The directory may itself have been made from a listing: it is
	// walked first (readyAttr).
	if err := dir.ready(ctx); err != nil {
		return 0, nil, err
	}
	nodeFid := n.c.newFid()
	fid, r, err := send(ctx, &Twalkopen{NodeFid: nodeFid, Twalk: Twalk{Fid: dir.fid, Names: []string{n.name}}, Flags: n.c.host.openToWire(flags)})
	if err == nil && r.QID.Path != n.qid.Path { // another file has the name now
		n.c.clunk(fid)
		n.c.clunk(nodeFid)
		err = syscall.ESTALE
	} else if err != nil {
		n.c.releaseFid(nodeFid)
	}
	if err != nil {
		return 0, nil, n.staleFrom(dir, err)
	}
	n.walkedAs(nodeFid, dir)
	return fid, r, nil
}

// walkOpen sends m with a new fid for the open; on failure the fid
// number is free again.
func (c *Client) walkOpen(ctx context.Context, m *Twalkopen) (uint32, *Rlopen, error) {
	m.NewFid = c.newFid()
	r, err := do[*Rwalkopen](ctx, c, m)
	if err != nil {
		c.releaseFid(m.NewFid)
		return 0, nil, err
	}
	return m.NewFid, &r.Rlopen, nil
}

func (n *node) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if err := vfs.CheckName("create", name); err != nil {
		return nil, nil, err
	}
	if _, gives := n.givesAway(ctx); !gives || flags&os.O_EXCL != 0 {
		return n.create(ctx, name, flags, mode)
	}
	// Only a file this call made may be given to the caller (or removed
	// if that fails): the server makes it anew, or it is opened as it is.
	kid, h, err := n.create(ctx, name, flags|os.O_EXCL, mode)
	if !errors.Is(err, syscall.EEXIST) {
		return kid, h, err
	}
	if kid, err = n.Lookup(ctx, name); err != nil {
		return nil, nil, err
	}
	if h, err = kid.Open(ctx, flags&^(os.O_CREATE|os.O_EXCL)); err != nil {
		return nil, nil, err
	}
	return kid, h, nil
}

// create is Create of a file the caller may be given.
func (n *node) create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if n.c.extended {
		return n.createGet(ctx, name, flags, mode)
	}
	fid, err := n.clone(ctx)
	if err != nil {
		return nil, nil, asErr("create", err)
	}
	defer n.c.cache.owning(n.qid.Path)()
	r, err := do[*Rlcreate](ctx, n.c, &Tlcreate{Fid: fid, Name: name, Flags: n.c.host.openToWire(flags), Mode: n.c.host.modeToWire(mode), Gid: n.c.ids.newGid(ctx)})
	n.madeName(name, err)
	if err != nil {
		n.c.clunk(fid)
		return nil, nil, asErr("create", err)
	}
	h := n.c.newHandle(fid, r.QID, flags)
	child, err := n.made(ctx, name)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return child, h, nil
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	defer runtime.KeepAlive(n) // see newNode
	if err := vfs.CheckName("mkdir", name); err != nil {
		return nil, err
	}
	if err := n.ready(ctx); err != nil {
		return nil, asErr("mkdir", err)
	}
	defer n.c.cache.owning(n.qid.Path)()
	m := Tmkdir{Dfid: n.fid, Name: name, Mode: n.c.host.modeToWire(mode), Gid: n.c.ids.newGid(ctx)}
	if n.c.extended && !n.c.noMkdirGet.Load() {
		if kid, err := n.mkdirGet(ctx, m); !errors.Is(err, syscall.EOPNOTSUPP) {
			return kid, err
		}
	}
	_, err := do[*Rmkdir](ctx, n.c, &m)
	n.madeName(name, err)
	if err != nil {
		return nil, asErr("mkdir", err)
	}
	if n.c.extended {
		return n.walkMadeDir(ctx, name, n.c.cache.since())
	}
	return n.made(ctx, name)
}

func (n *node) Remove(ctx context.Context, name string, dir bool) error {
	defer runtime.KeepAlive(n) // see newNode
	if err := vfs.CheckName("remove", name); err != nil {
		return err
	}
	var flags wireUnlinkFlags
	if dir {
		flags = AtRemoveDir
	}
	if err := n.ready(ctx); err != nil {
		return asErr("remove", err)
	}
	defer n.c.cache.owning(append(n.c.cache.entryFiles(n.qid.Path, name), n.qid.Path)...)()
	after := n.changing(name) // the file's link count, its name's entry
	_, err := do[*Runlinkat](ctx, n.c, &Tunlinkat{Dfid: n.fid, Name: name, Flags: flags})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = n.removeByFid(ctx, name, dir) // diod has no Tunlinkat
	}
	after()
	n.named(name, false, err)
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
	defer runtime.KeepAlive(n) // see newNode
	to, ok := newDir.(*node)
	if !ok || to.c != n.c {
		return vfs.Error("rename", newName, syscall.EXDEV)
	}
	defer runtime.KeepAlive(to)
	for _, name := range []string{oldName, newName} {
		if err := vfs.CheckName("rename", name); err != nil {
			return err
		}
	}
	if err := readyBoth(ctx, n, to); err != nil {
		return asErr("rename", err)
	}
	// Both entries, both directories, the file moved and the one it
	// replaces (its link count).
	moved := append(n.c.cache.entryFiles(n.qid.Path, oldName), n.c.cache.entryFiles(to.qid.Path, newName)...)
	defer n.c.cache.owning(append(moved, n.qid.Path, to.qid.Path)...)()
	afterOld, afterNew := n.changing(oldName), to.changing(newName)
	// Onto a name not there, the old name goes; onto one there, it may be
	// another link of the same file, and then both stay (rename(2)).
	fresh := to.lacks(newName)
	_, err := do[*Rrenameat](ctx, n.c, &Trenameat{OldDfid: n.fid, OldName: oldName, NewDfid: to.fid, NewName: newName})
	if errors.Is(err, syscall.EOPNOTSUPP) {
		err = n.renameByFid(ctx, oldName, to, newName) // diod has no Trenameat
	}
	afterOld()
	afterNew()
	switch {
	case err == nil && fresh:
		n.named(oldName, false, nil)
		to.named(newName, true, nil)
	case err == nil:
		n.c.cache.drop(cacheKey{cNames, n.qid.Path, ""}, cacheKey{cNames, to.qid.Path, ""})
	}
	return asErr("rename", err)
}

// renameByFid is Rename for servers without Trenameat, as Linux's client
// falls back: walk to the child and Trename it.
func (n *node) renameByFid(ctx context.Context, oldName string, to *node, newName string) error {
	defer runtime.KeepAlive(to)
	fid, _, err := n.walkFid(ctx, oldName)
	if err != nil {
		return err
	}
	defer n.c.clunk(fid)
	_, err = do[*Rrename](ctx, n.c, &Trename{Fid: fid, Dfid: to.fid, Name: newName})
	return err
}

func (n *node) Readlink(ctx context.Context) (string, error) {
	defer runtime.KeepAlive(n) // see newNode
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
	return makeEntry[*Rsymlink](ctx, n, "symlink", name, func() Message {
		return &Tsymlink{Fid: n.fid, Name: name, Target: target, Gid: n.c.ids.newGid(ctx)}
	})
}

// makeEntry makes the entry name in n with the request that req builds,
// and returns its node; op names the call in errors. req runs once n is
// ready, since readying n may give it a new fid.
func makeEntry[R Message](ctx context.Context, n *node, op, name string, req func() Message) (vfs.Node, error) {
	defer runtime.KeepAlive(n) // see newNode
	if err := vfs.CheckName(op, name); err != nil {
		return nil, err
	}
	if err := n.ready(ctx); err != nil {
		return nil, asErr(op, err)
	}
	defer n.c.cache.owning(n.qid.Path)()
	_, err := do[R](ctx, n.c, req())
	n.madeName(name, err)
	if err != nil {
		return nil, asErr(op, err)
	}
	return n.made(ctx, name)
}

func (n *node) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	defer runtime.KeepAlive(n) // see newNode
	t, ok := target.(*node)
	if !ok || t.c != n.c {
		return nil, vfs.Error("link", name, syscall.EXDEV)
	}
	defer runtime.KeepAlive(t)
	if err := vfs.CheckName("link", name); err != nil {
		return nil, err
	}
	if err := readyBoth(ctx, n, t); err != nil {
		return nil, asErr("link", err)
	}
	defer n.c.cache.owning(n.qid.Path, t.qid.Path)()
	_, err := do[*Rlink](ctx, n.c, &Tlink{Dfid: n.fid, Fid: t.fid, Name: name})
	n.madeName(name, err)
	n.c.cache.dropFile(t.qid.Path) // its link count
	if err != nil {
		return nil, asErr("link", err)
	}
	return n.walkTo(ctx, name)
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	major, minor := n.c.host.devSplit(rdev)
	return makeEntry[*Rmknod](ctx, n, "mknod", name, func() Message {
		return &Tmknod{Dfid: n.fid, Name: name, Mode: n.c.host.modeToWire(mode), Major: major, Minor: minor, Gid: n.c.ids.newGid(ctx)}
	})
}

// StatFS is held for CacheTTL: free space changes with every write, and
// no notice tells of it, but `find` and `df` asking again within a
// second need not cost a round trip each.
func (n *node) StatFS(ctx context.Context) (vfs.StatFS, error) {
	defer runtime.KeepAlive(n) // see newNode
	k := cacheKey{cStatFS, n.qid.Path, ""}
	if v, ok := n.c.cache.get(k); ok {
		return v.(vfs.StatFS), nil
	}
	if err := n.ready(ctx); err != nil {
		return vfs.StatFS{}, asErr("statfs", err)
	}
	r, err := do[*Rstatfs](ctx, n.c, &Tstatfs{Fid: n.fid})
	if err != nil {
		return vfs.StatFS{}, asErr("statfs", err)
	}
	st := vfs.StatFS{Bsize: r.Bsize, Frsize: r.Bsize, Blocks: r.Blocks, Bfree: r.Bfree,
		Bavail: r.Bavail, Files: r.Files, Ffree: r.Ffree, NameLen: r.Namelen}
	n.c.cache.putBrief(k, st, 1)
	return st, nil
}

// GetXattr answers from the cache when it can, misses included: a name
// held, or one missing from the file's list of names held.
func (n *node) GetXattr(ctx context.Context, name string) ([]byte, error) {
	if n.c.ids.hidesXattr(name) {
		return nil, vfs.Error("getxattr", name, syscall.ENODATA)
	}
	if x, ok := n.c.cache.xattr(n.qid.Path, name); ok {
		return bytes.Clone(x.val), x.err
	}
	if v, ok := n.c.cache.get(cacheKey{cXnames, n.qid.Path, ""}); ok && !slices.Contains(v.([]string), name) {
		return nil, vfs.Error("getxattr", name, syscall.ENODATA)
	}
	gen := n.c.cache.since()
	val, err := n.xattrRead(ctx, name)
	if err == nil || errors.Is(err, syscall.ENODATA) {
		n.c.cache.putXattr(n.qid.Path, name, xattrValue{bytes.Clone(val), err}, n.watched(), gen)
	}
	return val, err
}

func (n *node) ListXattr(ctx context.Context) ([]string, error) {
	names, err := n.listXattr(ctx)
	return slices.DeleteFunc(names, n.c.ids.hidesXattr), err
}

func (n *node) listXattr(ctx context.Context) ([]string, error) {
	k := cacheKey{cXnames, n.qid.Path, ""}
	if v, ok := n.c.cache.get(k); ok {
		return slices.Clone(v.([]string)), nil
	}
	gen := n.c.cache.since()
	b, err := n.xattrRead(ctx, "")
	if err != nil {
		return nil, err
	}
	var names []string
	if len(b) > 0 {
		names = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	n.c.cache.put(k, slices.Clone(names), 1+len(names), n.watched(), gen)
	return names, nil
}

// xattrRead walks a fid to an attribute (or the name list) and reads it.
func (n *node) xattrRead(ctx context.Context, name string) ([]byte, error) {
	defer runtime.KeepAlive(n) // see newNode
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
	if n.c.ids.hidesXattr(name) {
		return vfs.Error("setxattr", name, syscall.EOPNOTSUPP)
	}
	return n.xattrWrite(ctx, name, value, n.c.host.xattrToWire(flags))
}

// RemoveXattr is a Txattrcreate of no value with XATTR_REPLACE, which is
// how 9P2000.L says removexattr.
func (n *node) RemoveXattr(ctx context.Context, name string) error {
	if n.c.ids.hidesXattr(name) {
		return vfs.Error("removexattr", name, syscall.EOPNOTSUPP)
	}
	return n.xattrWrite(ctx, name, nil, wXATTR_REPLACE)
}

// xattrWrite sets an attribute: Txattrcreate, the value in Twrites, and
// the clunk that commits it (and reports the outcome).
func (n *node) xattrWrite(ctx context.Context, name string, value []byte, flags wireXattrFlags) error {
	fid, err := n.clone(ctx)
	if err != nil {
		return asErr("setxattr", err)
	}
	defer n.c.cache.dropFile(n.qid.Path)
	m := &Txattrcreate{Fid: fid, Name: name, Size: uint64(len(value)), Flags: flags}
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
