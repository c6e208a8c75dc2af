package ninep

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// With a gsvfs server (the extensions negotiated), a lookup with its
// stat costs one round trip and the lookups of what a listing just listed
// cost none, which is what `ls -l` does: list, then lookup and stat every
// entry.
//
// LookupAttr walks with Twalkgetattr. A listing made with Treaddirplus
// (or read from the cache, whose entries came so) leaves the names and
// attributes of its last batch with the directory's node while it is
// open; a lookup of one of them makes a node from them
// without asking the server, each listed name serving one lookup. Such a
// node gets its fid when it is first used, walked by name from its
// directory (with the attributes, if that first use is a stat); a file
// found there that is not the one listed (renamed or replaced since)
// fails with ESTALE.

var _ vfs.AttrLookuper = (*node)(nil)

// ext is what the extensions add to a client node.
type ext struct {
	mu sync.Mutex
	// from is the directory a node made from a listing is walked from,
	// by name, when first used; nil once walked (or if it never was).
	from *node
	name string
	gen  uint64 // the listed file's generation, 0 if unknown
	// pins counts nodes made from this directory's listings and not yet
	// walked; its fid, which they walk from, outlives a Forget until then.
	// So does from, if the directory was never walked itself (listed
	// from the cache): they walk it first.
	pins      int
	forgotten bool
	letGo     bool // forgotten and unpinned: its fid, or its pin, went
	listed    *listedBatch
}

// listedBatch is the last batch of attributes an open listing of a
// directory brought, by name.
type listedBatch struct {
	by    vfs.Handle           // the open listing's: a *dirHandle or *cachedDir
	names map[string]*vfs.Attr // the listing's own, until looked up
	total int
	at    time.Time
	gen   uint64 // the cache's generation when the batch was asked for
}

// listedFresh is how long a batch answers lookups: as long as the FUSE
// edge lets the kernel keep attributes it was told (its CacheTime), so a
// listing held open does not hand out a mode changed since.
const listedFresh = time.Second

// ready makes sure the node has its fid, walking it if it was made from
// a listing.
func (n *node) ready(ctx context.Context) error {
	_, _, err := n.readyAttr(ctx)
	return err
}

// readyAttr is ready; when it had to walk, the walk brought the file's
// attributes too (ok).
func (n *node) readyAttr(ctx context.Context) (vfs.Attr, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	dir := n.from
	if dir == nil {
		return vfs.Attr{}, false, nil
	}
	// The directory may itself have been made from a listing (opened
	// and listed by name, never walked): it is walked first.
	if err := dir.ready(ctx); err != nil {
		return vfs.Attr{}, false, err
	}
	fid, r, err := dir.walkAttrFid(ctx, n.name)
	if err == nil && (r.QIDs[0].Path != n.qid.Path || n.gen != 0 && r.Attr.Gen != n.gen) { // another file has the name now
		n.c.clunk(fid)
		err = syscall.ESTALE
	}
	if err != nil {
		return vfs.Attr{}, false, n.staleFrom(dir, err)
	}
	n.walkedAs(fid, dir)
	return n.c.wireAttr(&r.Attr), r.Attr.Valid != 0, nil
}

// staleFrom is the error of a walk by name from dir to the file n was
// made for: the name missing, or leading elsewhere, is ESTALE, and what
// made the node is dropped, so the next lookup of the name (the kernel's
// retry of a stale open) walks to what it is now. n.mu is held.
func (n *node) staleFrom(dir *node, err error) error {
	if vfs.Errno(asErr("walk", err)) == syscall.ENOENT {
		err = syscall.ESTALE
	}
	if err == syscall.ESTALE {
		n.c.cache.dropEntry(dir.qid.Path, n.name)
	}
	return err
}

// walkedAs makes fid, walked from dir by name, n's own. n.mu is held.
// A node forgotten already is walked only for the nodes made from its
// listing (pins): the last of them to let go clunks the fid (unpin), so
// the collector must not too.
func (n *node) walkedAs(fid uint32, dir *node) {
	n.fid, n.from = fid, nil
	n.cleanup.Stop()
	if !n.forgotten {
		n.cleanup = runtime.AddCleanup(n, n.c.clunkLater, fid)
	}
	dir.unpin()
}

// readyBoth readies two nodes of one call (rename, link).
func readyBoth(ctx context.Context, a, b *node) error {
	if err := a.ready(ctx); err != nil {
		return err
	}
	return b.ready(ctx)
}

// release is Forget: the fid goes, once no node made from a listing of
// this directory still has to walk from it. A directory never walked
// (listed from the cache) has no fid, and nodes made from its listing
// walk it first: until the last of them lets go, it keeps what it is
// walked from.
func (n *node) release() {
	n.mu.Lock()
	n.cleanup.Stop()
	n.forgotten = true
	n.mu.Unlock()
	n.letGoUnpinned()
}

// unpin is called when a node made from n's listing no longer needs n's
// fid (walked, forgotten or collected).
func (n *node) unpin() {
	n.mu.Lock()
	n.pins--
	n.mu.Unlock()
	n.letGoUnpinned()
}

// letGoUnpinned lets go of what a node forgotten and pinned by no other
// holds, once: its fid, or, never walked, its own pin on the directory
// it would have been walked from.
func (n *node) letGoUnpinned() {
	n.mu.Lock()
	if !n.forgotten || n.pins > 0 || n.letGo {
		n.mu.Unlock()
		return
	}
	fid, dir := n.fid, n.from
	n.from, n.letGo = nil, true
	n.mu.Unlock()
	if dir != nil { // never walked: there is no fid
		dir.unpin()
		return
	}
	n.c.clunkLater(fid)
}

// LookupAttr is Lookup with the child's attributes (vfs.AttrLookuper):
// from the open listing if it has the name, else one Twalkgetattr; a
// plain server takes a walk and a getattr.
func (n *node) LookupAttr(ctx context.Context, name string) (vfs.Node, vfs.Attr, error) {
	if !n.c.extended {
		kid, err := n.Lookup(ctx, name) // with the cache's misses
		if err != nil {
			return nil, vfs.Attr{}, err
		}
		a, err := kid.Attr(ctx)
		return kid, a, err
	}
	if err := vfs.CheckName("lookup", name); err != nil {
		return nil, vfs.Attr{}, err
	}
	if kid, a, found, err := n.known(name); found {
		return kid, a, err
	}
	miss := cacheKey{cMiss, n.qid.Path, name}
	if err := n.ready(ctx); err != nil {
		return nil, vfs.Attr{}, asErr("lookup", err)
	}
	gen := n.c.cache.since()
	fid, r, err := n.walkAttrFid(ctx, name)
	if errors.Is(err, syscall.ENOENT) {
		n.c.cache.put(miss, nil, 1, n.watched(), gen)
	}
	if err != nil {
		return nil, vfs.Attr{}, asErr("lookup", err)
	}
	kid := n.c.newNode(fid, r.QIDs[0], n.uid)
	n.c.cache.walked(n.qid.Path, name, r.QIDs[0].Path)
	if r.Attr.Valid == 0 { // the server could not stat what it walked to
		a, err := kid.Attr(ctx)
		return kid, a, err
	}
	return kid, n.c.heldStatVia(&r.Attr, gen, n.qid.Path), nil
}

// walkAttrFid walks a new fid to the child name with Twalkgetattr. On
// failure the fid number is free again.
func (n *node) walkAttrFid(ctx context.Context, name string) (uint32, *Rwalkgetattr, error) {
	fid := n.c.newFid()
	r, err := do[*Rwalkgetattr](ctx, n.c, &Twalkgetattr{Twalk{Fid: n.fid, NewFid: fid, Names: []string{name}}})
	if err == nil && len(r.QIDs) != 1 {
		err = syscall.ENOENT
	}
	if err != nil {
		n.c.releaseFid(fid)
		return 0, nil, err
	}
	return fid, r, nil
}

// fromListing makes the node of name from the open listing's last batch,
// if it has the name, without a round trip.
func (n *node) fromListing(name string) (*node, vfs.Attr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listed == nil || n.forgotten || time.Since(n.listed.at) > listedFresh {
		return nil, vfs.Attr{}
	}
	e, ok := n.listed.names[name]
	// A file dropped since the batch was asked for (a notice of its
	// name's change, removal included, or this client's own change)
	// may be gone or other than listed; so may any name of a directory
	// dropped since (a notice of one of its names, which may be this
	// one: the batch's names were not held when it came).
	if !ok || n.c.cache.droppedSince(e.Ino, n.listed.gen) || n.c.cache.droppedSince(n.qid.Path, n.listed.gen) {
		return nil, vfs.Attr{}
	}
	delete(n.listed.names, name)
	n.c.cache.walked(n.qid.Path, name, e.Ino)
	// Held as a stat's answer would be, so that what is asked of the
	// node next (its xattrs' misses) is held as long.
	if !e.Volatile {
		n.c.cache.putVia(cacheKey{cAttr, e.Ino, ""}, *e, 1, e.Watched, n.listed.gen, n.qid.Path)
	}
	// The QID's type as the server would give it: a directory's node
	// lists from the cache only if it knows it is one.
	return n.lazyKidLocked(name, QID{Path: e.Ino, Type: direntQIDType(e.Mode & syscall.S_IFMT)}, e.Gen), *e
}

// fromHeld makes the node of name from what the cache holds, without a
// round trip: the directory's whole listing has the name, and the
// file's own attributes are held (a notice of a change to either drops
// it; the listing's copy of the attributes is not trusted, as a notice
// of the file alone leaves the listing be). A warm walk whose kernel
// entries expired, or were pushed out, then costs the server nothing.
// On a server of this machine's disk the server is asked
// (ClientOptions.Exact); a plain server has no walk by name with the
// attributes, which such a node needs.
func (n *node) fromHeld(name string) (*node, vfs.Attr) {
	if n.c.exact || !n.c.extended {
		return nil, vfs.Attr{}
	}
	v, ok := n.c.cache.get(cacheKey{cList, n.qid.Path, ""})
	if !ok {
		return nil, vfs.Attr{}
	}
	ents := v.([]vfs.DirEntry)
	i := slices.IndexFunc(ents, func(e vfs.DirEntry) bool { return e.Name == name })
	if i < 0 {
		return nil, vfs.Attr{}
	}
	held, ok := n.c.cache.get(cacheKey{cAttr, ents[i].Ino, ""})
	if !ok {
		return nil, vfs.Attr{}
	}
	a := held.(vfs.Attr)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.forgotten { // its fid, which the node would walk from, may be gone
		return nil, vfs.Attr{}
	}
	n.c.cache.walked(n.qid.Path, name, a.Ino)
	return n.lazyKidLocked(name, QID{Path: a.Ino, Type: direntQIDType(a.Mode & syscall.S_IFMT)}, a.Gen), a
}

// lazyKidLocked is a node for the file name in n, whose QID is known,
// walked from n by name when first used (ready). n.mu is held: n's fid,
// which the kid pins, cannot go meanwhile.
func (n *node) lazyKidLocked(name string, q QID, gen uint64) *node {
	n.pins++
	kid := &node{c: n.c, qid: q, uid: n.uid}
	kid.from, kid.name, kid.gen = n, name, gen
	// A kid collected unwalked lets its directory's fid go.
	kid.cleanup = runtime.AddCleanup(kid, (*node).unpin, n)
	return kid
}

// noteListed keeps the batch d just listed for lookups, in place of the
// last one; entries without attributes are left out.
func (n *node) noteListed(d vfs.Handle, ents []vfs.DirEntry, gen uint64) {
	b := &listedBatch{by: d, names: make(map[string]*vfs.Attr, len(ents)), gen: gen}
	for _, e := range ents {
		if e.Attr != nil {
			b.names[e.Name] = e.Attr
		}
	}
	b.total, b.at = len(b.names), time.Now()
	n.mu.Lock()
	n.listed = b
	n.mu.Unlock()
}

// listedUsed reports whether at least half of the last batch d listed
// was looked up; a batch that brought no attributes was of no use.
func (n *node) listedUsed(d vfs.Handle) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.listed
	if b == nil || b.by != d {
		return true // another listing's: nothing to tell by
	}
	return b.total > 0 && 2*(b.total-len(b.names)) >= b.total
}

// dropListed forgets what d listed: the listing is closed.
func (n *node) dropListed(d vfs.Handle) {
	n.mu.Lock()
	if n.listed != nil && n.listed.by == d {
		n.listed = nil
	}
	n.mu.Unlock()
}
