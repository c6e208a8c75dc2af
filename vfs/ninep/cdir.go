package ninep

import (
	"context"
	"slices"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// A directory read whole from its start is cached (ccache.go), and a
// later open of it for reading lists from the cache without a round
// trip: an `ls -lR` again costs the server nothing for listings. Such
// an open read from its start again lists what the cache holds then,
// never what it held at the open (ccache.go's invariant 7).

// dirFill collects the listing of a directory handle while it is read
// from the start, in order, to the end.
type dirFill struct {
	n    *node
	gen  uint64 // the cache's generation when the directory was opened
	all  []vfs.DirEntry
	at   uint64 // the offset the next read must start at to go on
	skip bool   // the reads left the order: nothing is cached
}

// add takes one ReadDir's outcome at off.
func (f *dirFill) add(off uint64, out []vfs.DirEntry, err error) {
	switch {
	case off == 0:
		f.all, f.at, f.skip = nil, 0, false
	case off != f.at:
		f.skip = true
	}
	if f.skip || err != nil {
		f.skip = true
		return
	}
	if len(out) == 0 { // the end: the listing is whole
		c := f.n.c.cache
		c.put(cacheKey{cList, f.n.qid.Path, ""}, f.all, 1+len(f.all), f.n.watched(), f.gen)
		names := make(map[string]struct{}, len(f.all))
		for _, e := range f.all {
			names[e.Name] = struct{}{}
		}
		c.putNames(f.n.qid.Path, names, f.n.watched(), f.gen)
		f.skip = true
		return
	}
	f.all = append(f.all, out...)
	f.at = out[len(out)-1].Next
	if len(f.all) > f.n.c.cache.maxListing() { // more than the cache takes
		f.all, f.skip = nil, true
	}
}

// cachedDir is a directory opened for reading while its listing is
// cached. A read from the start lists the directory as it is then, as a
// rewinddir does: from the listing the cache holds then (no notice has
// dropped it), else from the server. A kernel caching listings (FUSE's
// FOPEN_CACHE_DIR) keeps what a read from the start gives as the
// listing at the directory's mtime of that moment, so a listing taken at
// the open and handed out after a change's notice would stay there for
// good. What a listing does not answer (fsync, locks) opens the
// directory on the server then.
type cachedDir struct {
	deferredOpen // d.real: the directory opened on the server
	// held: ents is the cache's listing read from since the last read
	// from the start; else the reads go to the server (real). Under mu.
	held bool
	ents []vfs.DirEntry
}

var (
	_ vfs.DirReader    = (*cachedDir)(nil)
	_ vfs.HandleAttrer = (*cachedDir)(nil)
	_ vfs.Syncer       = (*cachedDir)(nil)
	_ vfs.Locker       = (*cachedDir)(nil)
)

// cachedDirChunk is how many entries one ReadDir of a cached listing
// returns.
const cachedDirChunk = 1024

// cachedDir is the open of n for reading, if n is a directory whose
// listing the cache holds.
func (n *node) cachedDir(flags int) *cachedDir {
	if n.qid.Type&QTDir == 0 || flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil
	}
	d := &cachedDir{deferredOpen: deferredOpen{n: n, flags: syscall.O_RDONLY, fill: true}}
	if !d.rewind() {
		return nil
	}
	return d
}

// rewind takes the listing the cache holds now, and says whether it
// holds one; its entries answer lookups (cwalk.go) as of the
// generation before it was taken, so that a notice applied meanwhile
// makes them stale.
func (d *cachedDir) rewind() bool {
	c := d.n.c.cache
	gen := c.since()
	v, ok := c.get(cacheKey{cList, d.n.qid.Path, ""})
	var ents []vfs.DirEntry
	if ok {
		ents = v.([]vfs.DirEntry)
		d.n.noteListed(d, ents, gen)
	}
	d.mu.Lock()
	d.held, d.ents = ok, ents
	d.mu.Unlock()
	return ok
}

func (d *cachedDir) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	if off == 0 {
		d.rewind()
	}
	d.mu.Lock()
	held, ents := d.held, d.ents
	d.mu.Unlock()
	if !held {
		h, err := d.opened(ctx)
		if err != nil {
			return nil, err
		}
		return h.(vfs.DirReader).ReadDir(ctx, off)
	}
	i := 0
	if off != 0 {
		i = slices.IndexFunc(ents, func(e vfs.DirEntry) bool { return e.Next == off }) + 1
		if i == 0 {
			return nil, vfs.Error("readdir", "", syscall.EINVAL)
		}
	}
	return slices.Clone(ents[i:min(len(ents), i+cachedDirChunk)]), nil
}

func (d *cachedDir) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", "", syscall.EISDIR)
}

func (d *cachedDir) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "", syscall.EISDIR)
}

func (d *cachedDir) Close() error {
	d.n.dropListed(d)
	return d.closeReal()
}
