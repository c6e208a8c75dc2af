package ninep

import (
	"io"
	"slices"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// Held content: the whole of a small stored file, once read whole
// through a handle, is held in the cache beside its attributes for as
// long as the notices vouch for both, and a read through an open the
// cache answered (clazy.go) is served from it without a request.
//
// Why: the pages of a file opened from the cache are the kernel's, and
// a kernel may drop them whenever it likes (memory pressure, a
// hypervisor's proactive reclaim of cold pages); the read that follows
// would then open and read the file across the link, one round trip
// each, for bytes that have not changed. A gateway's /mnt/ID is served
// to local clients whose kernels do the caching, so without this each
// page they lose costs the device link.
//
// Invariants, each checked by the tests named:
//  1. Content is held only when it was read whole (a read from offset 0
//     that came short), is at most maxHeldContent bytes, fits in its
//     share of the cache (heldShare), and its file's
//     attributes are held as vouched for by the notices, of its size, in
//     a generation no notice or drop of the file has passed since
//     (TestHeldContentServesReads).
//  2. A change to the file, noticed or this client's own, forgets the
//     content with the attributes (TestCachedOpenAfterNotice,
//     TestHeldContentGoesWithChange).

// maxHeldContent bounds the size of a file whose content is held: the
// small files an agent's tools read again and again (sources,
// configuration), not a build's outputs. Each costs the cache
// 1+size/256 of its entries (an entry of attributes takes a few hundred
// bytes).
const maxHeldContent = 64 << 10

// heldShare: content takes at most 1/heldShare of the cache (4 MiB of
// the default's 2^16 entries, or about 800 files of 4 KiB), so that
// reading many files never crowds out the attributes and listings a
// walk needs; past it, no more is held until content held goes (a
// change, or the cache's own eviction of what is used least).
const heldShare = 4

// putContent holds data as the whole content of ino, read in generation
// gen, if invariant 1 allows.
func (c *cache) putContent(ino uint64, data []byte, gen uint64) {
	if len(data) > maxHeldContent {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.notified || c.staleLocked(ino, gen) || !c.vouchedLocked(ino, gen) {
		return
	}
	if a, ok := c.longAttrLocked(ino); !ok || a.Size != int64(len(data)) {
		return
	}
	cost := 1 + len(data)/256
	if c.held+cost > c.max/heldShare {
		return // the rest of the cache is for attributes and listings
	}
	c.putLocked(cacheKey{cData, ino, ""}, slices.Clone(data), cost, true)
}

// longAttrLocked is the attributes of ino, if they are held as vouched
// for by the notices and are a stored regular file's. c.mu is held.
func (c *cache) longAttrLocked(ino uint64) (vfs.Attr, bool) {
	el := c.byKey[cacheKey{cAttr, ino, ""}]
	if el == nil || !el.Value.(*cacheEntry).until.IsZero() {
		return vfs.Attr{}, false
	}
	a := el.Value.(*cacheEntry).val.(vfs.Attr)
	return a, a.Watched && !a.Volatile && a.Mode&syscall.S_IFMT == syscall.S_IFREG
}

// readHeld reads ino's held content into p from off, as a handle would
// (short only at the end, with io.EOF); ok is false where none is held.
func (c *cache) readHeld(ino uint64, p []byte, off int64) (n int, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[cacheKey{cData, ino, ""}]
	if el == nil {
		return 0, false, nil
	}
	data := el.Value.(*cacheEntry).val.([]byte)
	if a, held := c.longAttrLocked(ino); !held || a.Size != int64(len(data)) {
		return 0, false, nil
	}
	c.lru.MoveToFront(el)
	if off >= int64(len(data)) {
		return 0, true, io.EOF
	}
	n = copy(p, data[off:])
	if n < len(p) {
		err = io.EOF
	}
	return n, true, err
}
