package ninep

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// What a client knows of the files it makes, so that making many (`tar
// x`, a build's output) costs a round trip each where it can. With the
// extensions a create is one Tcreateget, which brings the new file's
// attributes, its directory's, and a fid of the new file's own, and
// leaves the directory's fid as it was; a mkdir is one Tmkdirget, which
// brings the same for a directory. A directory's names are held
// (from a whole listing; empty for a directory this client made) and
// kept true across this client's own makes and removals, so the lookup
// a kernel makes before each create misses without a round trip; the
// notices of those changes, which the server sends back, agree with
// what is held and drop nothing (ccache.go, apply).

// changed forgets what the cache holds of name in n, which this client
// just changed (made, removed, renamed).
func (n *node) changed(name string) {
	n.c.cache.dropEntry(n.qid.Path, name)
}

// changing is changed for a change this client is about to make to
// name in n; what it returns is to be called once the change is made,
// to forget again what a lookup meanwhile may have fetched of the file
// the name led to, which the change leaves without the name (a removal,
// a rename away or over it).
func (n *node) changing(name string) (after func()) {
	inos := n.c.cache.entryFiles(n.qid.Path, name)
	n.changed(name)
	return func() {
		n.changed(name)
		for _, ino := range inos {
			n.c.cache.dropFile(ino)
		}
	}
}

// listedMiss reports whether every name of the directory is held
// (names, or a whole listing) and name is not among them: as good a miss
// as one held by name.
func (n *node) listedMiss(name string) bool {
	if has, held := n.c.cache.nameHeld(n.qid.Path, name); held {
		return !has
	}
	v, ok := n.c.cache.get(cacheKey{cList, n.qid.Path, ""})
	return ok && !slices.ContainsFunc(v.([]vfs.DirEntry), func(e vfs.DirEntry) bool { return e.Name == name })
}

// heldMiss reports whether the cache says name is not in n: by its own
// miss, or by a whole listing.
func (n *node) heldMiss(name string) bool {
	_, ok := n.c.cache.get(cacheKey{cMiss, n.qid.Path, name})
	return ok || n.listedMiss(name)
}

// lacks reports whether n's names are held and name is not among them.
func (n *node) lacks(name string) bool {
	has, held := n.c.cache.nameHeld(n.qid.Path, name)
	return held && !has
}

// madeName is changed for a name this client made (err nil) or tried
// to make.
func (n *node) madeName(name string, err error) {
	n.changed(name)
	n.named(name, true, err)
}

// named is what this client's change did to n's names, if it knows:
// name made (or found there: EEXIST) or gone (or not found: ENOENT).
func (n *node) named(name string, made bool, err error) {
	switch errno := vfs.Errno(err); {
	case err == nil:
		n.c.cache.named(n.qid.Path, name, made)
	case errno == syscall.EEXIST:
		n.c.cache.named(n.qid.Path, name, true)
	case errno == syscall.ENOENT:
		n.c.cache.named(n.qid.Path, name, false)
	}
}

// known answers a lookup from what the client holds: a miss (held by
// name, or by a whole listing), a file just made, a name just listed.
// found false: the server must be asked.
func (n *node) known(name string) (kid *node, a vfs.Attr, found bool, err error) {
	// On a server of this machine's disk a miss is asked again: an open
	// of the name depends on it (ClientOptions.Exact).
	if !n.c.exact && n.heldMiss(name) {
		return nil, vfs.Attr{}, true, vfs.Error("lookup", name, syscall.ENOENT)
	}
	if kid, a := n.fromListing(name); kid != nil {
		return kid, a, true, nil
	}
	if kid, a := n.fromHeld(name); kid != nil {
		return kid, a, true, nil
	}
	return nil, vfs.Attr{}, false, nil
}

// createGet is Create in one Tcreateget, which brings the new file's
// own fid too.
func (n *node) createGet(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	defer runtime.KeepAlive(n) // see newNode
	if err := n.ready(ctx); err != nil {
		return nil, nil, asErr("create", err)
	}
	defer n.c.cache.owning(n.qid.Path)()
	fid, nodeFid := n.c.newFid(), n.c.newFid()
	m := &Tcreateget{NewFid: fid, NodeFid: nodeFid,
		Tlcreate: Tlcreate{Fid: n.fid, Name: name, Flags: n.c.host.openToWire(flags), Mode: n.c.host.modeToWire(mode), Gid: n.c.ids.newGid(ctx)}}
	r, err := do[*Rcreateget](ctx, n.c, m)
	n.madeName(name, err)
	if err != nil {
		n.c.releaseFid(fid)
		n.c.releaseFid(nodeFid)
		return nil, nil, asErr("create", err)
	}
	if r.DirAttr.Valid != 0 && r.DirAttr.QID.Path == n.qid.Path {
		n.c.heldReply(&r.DirAttr)
	}
	h := n.c.newHandle(fid, r.QID, flags)
	kid := n.c.newNode(nodeFid, r.QID, n.uid)
	if _, err := n.ownMade(ctx, name, nodeFid, &r.Attr, r.QID); err != nil {
		h.Close()
		return nil, nil, err
	}
	n.c.cache.walked(n.qid.Path, name, r.QID.Path)
	return kid, h, nil
}

// ownMade gives a file made (name, q, reached through fid) to the
// caller, where the server made it as this client's user (root) for
// another (made does the same, and removes it if that fails), and
// returns its attributes, held briefly: those the server gave (r) if it
// need not. What was held under q's number was another file's (made).
func (n *node) ownMade(ctx context.Context, name string, fid uint32, r *Rgetattr, q QID) (vfs.Attr, error) {
	n.c.cache.dropFile(q.Path)
	if uid, gives := n.givesAway(ctx); gives {
		a, err := n.c.setattr(ctx, fid, q.Path, vfs.SetAttr{Valid: vfs.SetUid, Uid: uid})
		if err != nil {
			n.unmake(ctx, name, q.Type&QTDir != 0)
			return a, asErr("chown", err)
		}
		n.c.cache.putBriefNoXattrs(r) // a chown adds none
		return a, nil
	}
	if r.Valid == 0 { // the server could not stat it
		a, err := n.c.getattr(ctx, fid)
		if err == nil && !a.Volatile {
			n.c.cache.putBrief(cacheKey{cAttr, a.Ino, ""}, a, 1)
		}
		return a, err
	}
	return n.c.heldReply(r), nil
}

// mkdirGet is Mkdir in one Tmkdirget, which brings the new directory's
// fid and attributes, and its parent's. A server that refuses it (an
// older gsvfs: EOPNOTSUPP) is not asked again on this connection, and
// the caller then sends Tmkdir and a walk.
func (n *node) mkdirGet(ctx context.Context, m Tmkdir) (vfs.Node, error) {
	defer runtime.KeepAlive(n) // see newNode
	fid := n.c.newFid()
	r, err := do[*Rmkdirget](ctx, n.c, &Tmkdirget{NewFid: fid, Tmkdir: m})
	if err != nil {
		n.c.releaseFid(fid)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			n.c.noMkdirGet.Store(true)
			return nil, err
		}
		n.madeName(m.Name, err)
		return nil, asErr("mkdir", err)
	}
	n.madeName(m.Name, nil)
	gen := n.c.cache.since() // as of the mkdir's answer, after what it dropped
	if r.DirAttr.Valid != 0 && r.DirAttr.QID.Path == n.qid.Path {
		n.c.heldReply(&r.DirAttr)
	}
	return n.madeDir(ctx, m.Name, fid, r.QID, &r.Attr, gen)
}

// walkMadeDir is the walk after a Tmkdir, with the extensions: one
// Twalkgetattr; the directory made is then as mkdirGet leaves it
// (madeDir). gen is the generation the mkdir was answered in.
func (n *node) walkMadeDir(ctx context.Context, name string, gen uint64) (vfs.Node, error) {
	fid, r, err := n.walkAttrFid(ctx, name)
	if err != nil {
		return nil, asErr("lookup", err)
	}
	return n.madeDir(ctx, name, fid, r.QIDs[0], &r.Attr, gen)
}

// madeDir is the node of the directory name this client just made,
// reached through fid (q, the server's attributes r): those held
// briefly (as an answer to a change of this client's), and the new
// directory known empty if the server watches it (a stored one): its
// names held from gen, the generation the mkdir was answered in, as long
// as notices allow.
func (n *node) madeDir(ctx context.Context, name string, fid uint32, q QID, r *Rgetattr, gen uint64) (vfs.Node, error) {
	n.c.cache.putNames(q.Path, map[string]struct{}{}, n.c.wireAttr(r).Watched, gen)
	kid := n.c.newNode(fid, q, n.uid)
	a, err := n.ownMade(ctx, name, fid, r, q)
	if err != nil {
		return nil, err
	}
	n.c.cache.walked(n.qid.Path, name, a.Ino)
	return kid, nil
}
