package ninep

import (
	"container/list"
	"maps"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// The client's cache of what the server said: attributes, names found
// missing, directory listings and extended attributes (values and
// misses: security.selinux and the ACL names are asked of nearly every
// file and nearly always missing). It lives here, in the client, rather
// than in devices/ (whose remote device nodes wrap these), because both
// users of a gsvfs server over a link need it: a device at /mnt/ID and
// `gsvfs mount --server`, whose root is this client's node.
//
// What it holds stays true in one of two ways. On a connection that
// negotiated VersionExt, with the server's change notices flowing
// (Twatch), an entry for a file the server says it watches
// (AttrGsvfsWatched) is kept until a notice or this client's own change
// drops it (unless a notice of that file came while it was fetched). Anything else (a plain 9P2000.L peer, a refused Twatch, an
// unwatched file) is kept for CacheTTL only, so a change made on the far
// side shows within that. A reply fetched before a change dropped its
// file (a notice, or this client's own change: an fstat after an unlink
// must see no links) is not held at all. A lost notice drops
// everything; the cache dies with its connection, so a reconnect starts
// empty. It is bounded by ClientOptions.CacheSize, dropping the least
// recently used entries.
//
// Invariants, each checked by the tests named:
//  1. An entry of a watched file, fetched while the notices flow and
//     with no notice naming the file (or, for what a walk or a listing
//     found, its directory) applied during the fetch, is kept until a
//     notice or this client's own change drops it; anything else for
//     CacheTTL at most. Notices of other files leave it be
//     (TestCacheKeepsWhatNoticesVouchFor, TestNoticesKeepCacheTrue,
//     TestCacheTTLWithPlainPeer).
//  2. A reply fetched before a change dropped its file is not held
//     (TestCacheRefusesRepliesOlderThanDrop, TestStatOfRemovedOpenFile).
//  3. A notice drops what it makes stale and no more: attributes as
//     held stay (the echo of this client's own change), others go, a
//     name's change drops its directory's listing and the name's miss,
//     a loss drops everything (TestCacheApplyDropsWhatChanged,
//     TestOwnChangesKeepWhatIsHeld, TestOutsideChangesStillDrop).
//  4. Every change to a file's content that the client knows of moves
//     the file's count of content changes, which its read-ahead windows
//     check (cread.go): its own writes and setattrs once answered, a
//     notice of new content whatever its attributes say, a notice of
//     other attributes, a loss, the notices turning on or off
//     (TestCacheCountsContentChanges).
//  5. The entries cost at most the cache's size, one listing at most an
//     eighth of it (TestCacheBounded, TestNoticeFloodBounded).
//  6. On a server of this machine's disk (ClientOptions.Exact), where
//     the notices still come behind, no miss is answered from the cache
//     and an open holds the server's answer to it as the file's
//     attributes, so close-to-open is exact (TestExactOpenSeesTheDisk).
//  7. A directory opened from a held listing lists, from its start, what
//     is held then (else what the server lists), and a lookup is not
//     answered from an open listing's batch for a file dropped since the
//     batch was asked for: a kernel that caches what a
//     listing from the start gives (FOPEN_CACHE_DIR) never keeps one from
//     before a notice it was told of (TestRewindAfterNoticeListsTheDisk).

// CacheTTL is how long the client trusts what the server said without
// change notices.
const CacheTTL = time.Second

// DefaultCacheSize is the cache's bound, in entries: an attribute, a
// miss or an xattr value is one, a listing one per name in it.
const DefaultCacheSize = 1 << 16

// cacheKind is what an entry records about a file.
type cacheKind uint8

const (
	cAttr   cacheKind = iota // vfs.Attr of ino
	cMiss                    // name is not in directory ino
	cList                    // []vfs.DirEntry of directory ino
	cXattr                   // map[string]xattrValue: ino's values and misses
	cXnames                  // []string of ino's xattr names
	cEntry                   // uint64: the file name in directory ino led to
	cNames                   // map[string]struct{}: every name in directory ino
	cStatFS                  // vfs.StatFS of the filesystem ino is on, briefly
	cData                    // []byte: the whole of small stored file ino (cheld.go)
)

type cacheKey struct {
	kind cacheKind
	ino  uint64
	name string
}

// xattrValue is a value, or the errno that asking for it gave (ENODATA).
type xattrValue struct {
	val []byte
	err error
}

type cacheEntry struct {
	key   cacheKey
	val   any
	cost  int
	until time.Time // zero: kept until dropped (notices flow)
}

type cache struct {
	mu sync.Mutex
	// notified: the server's notices flow, so what it says it watches
	// may be kept until a notice drops it.
	notified bool
	// gen counts the drops and batches of notices applied, to date the
	// fetches against them.
	gen uint64
	// dropped is the generation each file was last dropped in: a reply
	// about it fetched before that is older than a change this client
	// knows of, and is not held at all.
	dropped marks
	// noticed is the generation of the last notice naming each file (a
	// directory: any of its names): a reply about it fetched across one
	// may be older than the change noticed, even where the notice
	// dropped nothing (it agreed with what was held), and is kept for
	// CacheTTL only. A notice about another file says nothing of it, so
	// a storm of changes elsewhere (a build, git's index) leaves what
	// is fetched here held as long as ever.
	noticed marks
	// own counts the changes of this client's in flight by the files and
	// directories they change, and waiting holds the notices that touch
	// them until they are answered (owning).
	own     map[uint64]int
	waiting []vfs.Change
	max     int
	cost    int
	held    int       // the cost of the content entries (cheld.go)
	lru     list.List // of *cacheEntry, most recent first
	byKey   map[cacheKey]*list.Element
	// contents is the count of content changes of each file open with
	// a read-ahead window, by inode number.
	contents map[uint64]*content
	now      func() time.Time
}

func newCache(size int) *cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &cache{max: size, byKey: map[cacheKey]*list.Element{}, dropped: newMarks(), noticed: newMarks(),
		contents: map[uint64]*content{}, now: time.Now}
}

// content counts the changes to one file's content that the client
// knows of (its own writes and truncates, the server's notices, a loss
// of notices), shared by the file's open handles: a read-ahead window
// serves what it read only while the count stays as it was when the
// read was sent (cread.go). Read on every read, so without the lock.
type content struct {
	changes atomic.Uint64
	refs    int // the handles holding it; under cache.mu
}

// openContent is ino's count, for a handle opened on it until it gives
// it back with closeContent.
func (c *cache) openContent(ino uint64) *content {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.contents[ino]
	if n == nil {
		n = &content{}
		c.contents[ino] = n
	}
	n.refs++
	return n
}

func (c *cache) closeContent(ino uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.contents[ino]; n != nil {
		if n.refs--; n.refs == 0 {
			delete(c.contents, ino)
		}
	}
}

// changedContent counts a change of ino's content, and forgets the
// content held.
func (c *cache) changedContent(ino uint64) {
	c.mu.Lock()
	if n := c.contents[ino]; n != nil {
		n.changes.Add(1)
	}
	_, held := c.byKey[cacheKey{cData, ino, ""}]
	c.mu.Unlock()
	if held {
		c.drop(cacheKey{cData, ino, ""})
	}
}

// get returns what k holds, if it holds anything still good.
func (c *cache) get(k cacheKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[k]
	if el == nil {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !e.until.IsZero() && !c.now().Before(e.until) {
		c.removeLocked(el)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e.val, true
}

// getVouched is get of what is held until a notice drops it (the
// notices vouch for it), not for CacheTTL.
func (c *cache) getVouched(k cacheKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[k]
	if el == nil || !el.Value.(*cacheEntry).until.IsZero() {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry).val, true
}

// watched says whether the server reports changes to ino (and, for a
// directory, to its entries), as far as the cache knows.
func (c *cache) watched(ino uint64) bool {
	v, ok := c.get(cacheKey{cAttr, ino, ""})
	return ok && v.(vfs.Attr).Watched
}

// clock is the cache's time.
func (c *cache) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now()
}

// since is the generation a fetch starts in, to give put.
func (c *cache) since() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put records v, fetched in generation gen, under k: until a notice
// drops it if the file is watched and no notice of it came since, else
// for CacheTTL.
func (c *cache) put(k cacheKey, v any, cost int, watched bool, gen uint64) {
	c.putVia(k, v, cost, watched, gen, 0)
}

// putVia is put of what was found through directory dir (a walk of a
// name, a listing's entry): a notice of any of dir's names since the
// fetch may be of this one, so it is then kept for CacheTTL only.
func (c *cache) putVia(k cacheKey, v any, cost int, watched bool, gen, dir uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.staleLocked(k.ino, gen) {
		return
	}
	c.putLocked(k, v, cost, watched && c.notified && c.vouchedLocked(k.ino, gen) && (dir == 0 || c.vouchedLocked(dir, gen)))
}

// vouchedLocked: no notice named ino since generation gen. c.mu is held.
func (c *cache) vouchedLocked(ino, gen uint64) bool { return !c.noticed.since(ino, gen) }

// droppedSince reports whether what was fetched of ino in generation gen
// is older than a change that dropped the file since.
func (c *cache) droppedSince(ino, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.staleLocked(ino, gen)
}

// staleLocked: what was fetched of ino in generation gen is older than
// a change that dropped the file. c.mu is held.
func (c *cache) staleLocked(ino, gen uint64) bool { return c.dropped.since(ino, gen) }

// putBrief holds v under k for CacheTTL: the server's answer to a
// change this client just made (after dropping what the change made
// stale), true as of now but perhaps not as of the notices to come.
func (c *cache) putBrief(k cacheKey, v any, cost int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v, cost, false)
}

func (c *cache) putLocked(k cacheKey, v any, cost int, long bool) {
	cost = max(cost, 1)
	if cost > c.maxListing() {
		return // one listing may not crowd out the rest
	}
	e := &cacheEntry{key: k, val: v, cost: cost}
	if !long {
		e.until = c.now().Add(CacheTTL)
	}
	if el := c.byKey[k]; el != nil {
		c.removeLocked(el)
	}
	c.byKey[k] = c.lru.PushFront(e)
	c.cost += cost
	if k.kind == cData {
		c.held += cost
	}
	for c.cost > c.max {
		c.removeLocked(c.lru.Back())
	}
}

// maxListing is the most one entry may cost: an eighth of the cache.
func (c *cache) maxListing() int { return c.max / 8 }

func (c *cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.byKey, e.key)
	c.cost -= e.cost
	if e.key.kind == cData {
		c.held -= e.cost
	}
}

// xattr returns the value (or miss) of ino's attribute name.
func (c *cache) xattr(ino uint64, name string) (xattrValue, bool) {
	v, ok := c.get(cacheKey{cXattr, ino, ""})
	if !ok {
		return xattrValue{}, false
	}
	x, ok := v.(map[string]xattrValue)[name]
	return x, ok
}

// putXattr adds the value of ino's attribute name to those held. The
// values of a file are one entry, dropped together; it is trusted for
// as long as its least trusted value.
func (c *cache) putXattr(ino uint64, name string, x xattrValue, watched bool, gen uint64) {
	k := cacheKey{cXattr, ino, ""}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.staleLocked(ino, gen) {
		return
	}
	long := watched && c.notified && c.vouchedLocked(ino, gen)
	m := map[string]xattrValue{}
	cost := 0
	if el := c.byKey[k]; el != nil {
		e := el.Value.(*cacheEntry)
		long = long && e.until.IsZero()
		m = maps.Clone(e.val.(map[string]xattrValue))
		cost = e.cost
	}
	if len(m) >= maxXattrsHeld {
		return
	}
	m[name] = x
	c.putLocked(k, m, cost+1+len(x.val)/64, long)
}

// putNoXattrs holds that the file r describes has no extended
// attributes, if the server said so (AttrGsvfsNoXattrs): its list of
// names is empty, and getxattr misses without asking.
func (c *cache) putNoXattrs(r *Rgetattr, gen uint64) {
	if r.Valid&AttrGsvfsNoXattrs != 0 {
		c.put(cacheKey{cXnames, r.QID.Path, ""}, []string(nil), 1, r.Valid&AttrGsvfsWatched != 0, gen)
	}
}

// putBriefNoXattrs is putNoXattrs for the answer to this client's own
// change (putBrief).
func (c *cache) putBriefNoXattrs(r *Rgetattr) {
	if r.Valid&AttrGsvfsNoXattrs != 0 {
		c.putBrief(cacheKey{cXnames, r.QID.Path, ""}, []string(nil), 1)
	}
}

// maxXattrsHeld bounds the attribute names held for one file.
const maxXattrsHeld = 64

// drop forgets the entries under ks.
// A fetch in flight across a drop is not trusted long: it may have
// read the file before the change that made the drop.
func (c *cache) drop(ks ...cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range ks {
		c.dropped.mark(k.ino, c.gen)
		if el := c.byKey[k]; el != nil {
			c.removeLocked(el)
		}
	}
}

// dropFile forgets everything about ino.
func (c *cache) dropFile(ino uint64) {
	c.drop(c.unfixed(ino, cacheKey{cList, ino, ""}, cacheKey{cXattr, ino, ""}, cacheKey{cXnames, ino, ""}, cacheKey{cData, ino, ""})...)
}

// putFixed holds a, fixed attributes fetched in generation gen, until a
// drop: only a drop since gen (the link lost, say) makes them too old.
func (c *cache) putFixed(a vfs.Attr, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.staleLocked(a.Ino, gen) {
		c.putLocked(cacheKey{cAttr, a.Ino, ""}, a, 1, true)
	}
}

// unfixed is ks with ino's attributes added, unless they are fixed
// (vfs.Attr.Fixed): no change makes those stale, so a change in a
// directory of them (a session made or removed in /proc) or a write to
// one (a session's ctl) leaves them held.
func (c *cache) unfixed(ino uint64, ks ...cacheKey) []cacheKey {
	if v, ok := c.get(cacheKey{cAttr, ino, ""}); ok && v.(vfs.Attr).Fixed {
		return ks
	}
	return append(ks, cacheKey{cAttr, ino, ""})
}

// dropChanged forgets what this client's write or setattr of ino made
// stale, its content included: as dropFile, but that the file has no
// extended attributes stays known, as neither adds one (and the kernel
// asks whether a file has security.capability at a write and a chown).
// Called once the change is answered (a read sent while it was in
// flight may have read the file before it), and for a write sent
// behind when it is sent too.
func (c *cache) dropChanged(ino uint64) {
	ks := c.unfixed(ino, cacheKey{cList, ino, ""}, cacheKey{cXattr, ino, ""}, cacheKey{cData, ino, ""})
	if v, ok := c.get(cacheKey{cXnames, ino, ""}); ok && len(v.([]string)) > 0 {
		ks = append(ks, cacheKey{cXnames, ino, ""})
	}
	c.drop(ks...)
	c.changedContent(ino)
}

// dropEntry forgets what changes when name in dir comes, goes or
// changes: the directory, the file the name led to (as far as the cache
// knows), and the name's miss. The note of what the name led to stays
// until a walk of the name replaces it: a notice of a change to the file
// leaves the name leading to it, and a removal of the name by this
// client must still find the file to drop its link count. A note left
// stale makes a later change drop a file that did not change, no more.
func (c *cache) dropEntry(dir uint64, name string) {
	for _, ino := range c.entryFiles(dir, name) {
		c.dropFile(ino)
	}
	c.dropFile(dir)
	c.drop(cacheKey{cMiss, dir, name})
}

// entryFiles is the files the cache knows name in dir to lead to: by its
// listing, and by the note of a walk.
func (c *cache) entryFiles(dir uint64, name string) []uint64 {
	var inos []uint64
	if v, ok := c.get(cacheKey{cList, dir, ""}); ok {
		for _, e := range v.([]vfs.DirEntry) {
			if e.Name == name {
				inos = append(inos, e.Ino)
			}
		}
	}
	if v, ok := c.get(cacheKey{cEntry, dir, name}); ok {
		inos = append(inos, v.(uint64))
	}
	return inos
}

// walked notes that name in dir led to ino, so that a change of the
// name drops what is held of the file (its link count, its times). A
// note is only ever used to drop, so it needs no time limit.
func (c *cache) walked(dir uint64, name string, ino uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(cacheKey{cEntry, dir, name}, ino, 1, true)
}

// dropAll forgets everything, every file's content included.
func (c *cache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.contents {
		n.changes.Add(1)
	}
	c.gen++
	c.dropped.reset(c.gen) // what was asked before may be older than what was lost
	c.noticed.reset(c.gen)
	c.lru.Init()
	c.byKey = map[cacheKey]*list.Element{}
	c.cost = 0
}

// size is the entries' cost, for tests and stats.
func (c *cache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cost
}

// notify says whether the server's notices flow; either way, nothing
// held so far is trusted any more.
func (c *cache) notify(on bool) {
	c.mu.Lock()
	c.notified = on
	c.gen++
	c.mu.Unlock()
	c.dropAll()
}

// apply drops what a batch of the server's changes made stale. A change
// that leaves a file as the cache holds it (the notice of this client's
// own write, whose answer it already holds) drops nothing of the file's
// attributes, and a directory's names stay held while the change agrees
// with them (a name made is held, a name gone is not). A change of the
// content (Data) counts as one whatever the attributes say: two writes
// within one tick of the disk's clock leave size and times as they were.
func (c *cache) apply(cs []vfs.Change) {
	c.mu.Lock()
	now := make([]vfs.Change, 0, len(cs))
	for _, ch := range cs {
		switch {
		case ch.Lost:
			c.waiting = nil // everything goes
		case c.ownedLocked(ch) && len(c.waiting) < maxWaiting:
			c.waiting = append(c.waiting, ch)
			continue
		}
		now = append(now, ch)
	}
	c.mu.Unlock()
	c.applyNow(now)
}

// maxWaiting bounds the notices held back for changes of this client's
// in flight; past it they are applied at once (dropping more than they
// need to, no more).
const maxWaiting = 4096

// A notice of a change this client is making comes ahead of the
// change's reply (the server writes every change made before a reply
// ahead of it), while the cache still holds what the change replaces:
// applied then, it looks like another's change and drops what the
// reply is about to make true (the names of a directory the client
// made, that a file has no extended attributes). So a notice touching
// a file or directory that a change of this client's is in flight on
// waits until that change is answered, and is then judged against what
// the answer left, as the echo of the change it most likely is; one
// that disagrees with the answer drops what it makes stale, as ever.
// Another's change to the same file in the same moment shows as late as
// the client's own change is answered.

// owning marks inos as changed by this client until done is called,
// once the change's answer is in the cache: notices touching them wait
// until then.
func (c *cache) owning(inos ...uint64) (done func()) {
	c.mu.Lock()
	if c.own == nil {
		c.own = map[uint64]int{}
	}
	for _, ino := range inos {
		c.own[ino]++
	}
	c.mu.Unlock()
	return sync.OnceFunc(func() {
		c.mu.Lock()
		for _, ino := range inos {
			if c.own[ino]--; c.own[ino] <= 0 {
				delete(c.own, ino)
			}
		}
		ready := c.readyLocked()
		c.mu.Unlock()
		c.applyNow(ready)
	})
}

// ownedLocked says whether ch touches what a change of this client's in
// flight changes. c.mu is held.
func (c *cache) ownedLocked(ch vfs.Change) bool {
	return ch.Dir != 0 && c.own[ch.Dir] > 0 || ch.Attr.Ino != 0 && c.own[ch.Attr.Ino] > 0
}

// readyLocked takes the waiting notices that no change in flight holds
// back any more, in the order they came. c.mu is held.
func (c *cache) readyLocked() []vfs.Change {
	var ready []vfs.Change
	kept := c.waiting[:0]
	for _, ch := range c.waiting {
		if c.ownedLocked(ch) {
			kept = append(kept, ch)
		} else {
			ready = append(ready, ch)
		}
	}
	c.waiting = kept
	return ready
}

// applyNow applies notices: what they make stale is dropped.
func (c *cache) applyNow(cs []vfs.Change) {
	if len(cs) == 0 {
		return
	}
	c.mu.Lock()
	c.gen++
	for _, ch := range cs {
		c.noticed.mark(ch.Dir, c.gen)
		c.noticed.mark(ch.Attr.Ino, c.gen)
	}
	c.mu.Unlock()
	stated := map[uint64]bool{} // the batch's files with their attributes
	for _, ch := range cs {
		stated[ch.Attr.Ino] = true
	}
	for _, ch := range cs {
		switch {
		case ch.Lost:
			c.dropAll()
		case ch.Dir != 0:
			c.noticeEntry(ch.Dir, ch.Name, ch.Attr, stated[ch.Dir])
		}
		if a := ch.Attr; a.Ino != 0 {
			same := c.holdsAsIs(a)
			if !same {
				c.dropFile(a.Ino)
			}
			if !same || ch.Data {
				c.changedContent(a.Ino)
			}
		}
	}
}

// noticeEntry is dropEntry for a change the server noticed: the entry
// name in dir now leads to now (Ino 0: nothing). dirStated: the batch
// brings dir's attributes as they are now too (a gsvfs disk tree's
// does), which are then judged as any file's, and only its listing
// goes; else the change moved the directory's times, and what is held
// of it goes.
func (c *cache) noticeEntry(dir uint64, name string, now vfs.Attr, dirStated bool) {
	for _, ino := range c.entryFiles(dir, name) {
		if ino != now.Ino || !c.holdsAsIs(now) {
			c.dropFile(ino)
		}
	}
	if has, held := c.nameHeld(dir, name); held && has != (now.Ino != 0) {
		c.drop(cacheKey{cNames, dir, ""})
	}
	if dirStated {
		c.drop(cacheKey{cList, dir, ""}) // its entries changed, whatever its times say
	} else {
		c.dropFile(dir)
	}
	c.drop(cacheKey{cMiss, dir, name})
}

// holdsAsIs reports whether the cache holds a's file with the attributes
// a gives it (all but the access time, which reads change unreported):
// then nothing held of it is stale. A change of its extended attributes
// changes its ctime.
func (c *cache) holdsAsIs(a vfs.Attr) bool {
	v, ok := c.get(cacheKey{cAttr, a.Ino, ""})
	if !ok {
		return false
	}
	h := v.(vfs.Attr)
	return h.Gen == a.Gen && h.Mode == a.Mode && h.Nlink == a.Nlink && h.Uid == a.Uid && h.Gid == a.Gid &&
		h.Rdev == a.Rdev && h.Size == a.Size && h.Blocks == a.Blocks &&
		h.Mtime.Equal(a.Mtime) && h.Ctime.Equal(a.Ctime)
}

// nameHeld reports whether every name of directory dir is held, and
// whether name is among them.
func (c *cache) nameHeld(dir uint64, name string) (has, held bool) {
	v, ok := c.get(cacheKey{cNames, dir, ""})
	if !ok {
		return false, false
	}
	_, has = v.(map[string]struct{})[name]
	return has, true
}

// putNames holds names as every name in directory dir (a whole listing,
// or a directory this client made), fetched in generation gen, if the
// server watches dir: a generated directory (a /proc session's, made by
// a mkdir) is neither empty when made nor told of when its names change.
func (c *cache) putNames(dir uint64, names map[string]struct{}, watched bool, gen uint64) {
	if watched {
		c.put(cacheKey{cNames, dir, ""}, names, 1+len(names)/8, watched, gen)
	}
}

// named keeps a held set of dir's names true across this client's own
// change: name is in dir now (made) or is not. The set is copied, as
// readers look in theirs unlocked.
func (c *cache) named(dir uint64, name string, made bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[cacheKey{cNames, dir, ""}]
	if el == nil {
		return
	}
	e := el.Value.(*cacheEntry)
	old := e.val.(map[string]struct{})
	if _, has := old[name]; has == made {
		return
	}
	m := maps.Clone(old)
	if made {
		m[name] = struct{}{}
	} else {
		delete(m, name)
	}
	e.val = m
}

// sameFile drops what is held of q's file if it was another file's: an
// inode number the server gave again to a file of another type, which
// the kernel would take for a file changing its type (EIO).
func (c *cache) sameFile(q QID) {
	v, ok := c.get(cacheKey{cAttr, q.Path, ""})
	if !ok {
		return
	}
	typ := v.(vfs.Attr).Mode & syscall.S_IFMT
	if (typ == syscall.S_IFDIR) != (q.Type&QTDir != 0) || (typ == syscall.S_IFLNK) != (q.Type&QTSymlink != 0) {
		c.dropFile(q.Path)
	}
}

// marks is the generation each file was last marked in (dropped, or
// named by a notice), bounded by maxMarks: past it, the marks are
// forgotten and floor stands for them all, marking every file.
type marks struct {
	at    map[uint64]uint64
	floor uint64
}

// maxMarks bounds the files whose last mark a cache remembers.
const maxMarks = 4096

func newMarks() marks { return marks{at: map[uint64]uint64{}} }

// mark records that ino was marked in generation gen (0: no file).
func (m *marks) mark(ino, gen uint64) {
	if ino == 0 {
		return
	}
	if len(m.at) >= maxMarks {
		m.reset(gen)
	}
	m.at[ino] = gen
}

// since reports whether ino may have been marked after generation gen.
func (m *marks) since(ino, gen uint64) bool { return gen < m.floor || m.at[ino] > gen }

// reset forgets the marks, as if every file was marked in gen.
func (m *marks) reset(gen uint64) {
	clear(m.at)
	m.floor = gen
}
