package ninep

import (
	"bytes"
	"context"
	"errors"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// A directory opened for reading, on a server that knows Twalkreaddir,
// is walked to, opened and listed from its start in one round trip: the
// open brings the listing's first batch, which the handle's first read
// from the start answers. With the lookups a listing answers (cwalk.go)
// and its end said in the same batch, a first `ls -lR` of a tree costs
// about one round trip a directory. A server that refuses the request
// (an older gsvfs) is asked in two, from then on.

// firstBatch is the entries a directory's open brought, for the
// handle's first read from the start.
type firstBatch struct {
	data []byte
	gen  uint64 // the cache's generation when the open was sent
}

// openListing opens n, a directory, for reading with its first entries,
// if the server can; ok false: it cannot, and nothing was sent that
// changed anything.
func (n *node) openListing(ctx context.Context, flags int) (h vfs.Handle, ok bool, err error) {
	c := n.c
	if !c.extended || c.noWalkReaddir.Load() || n.qid.Type&QTDir == 0 || flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, false, nil
	}
	first := &firstBatch{gen: c.cache.since()}
	fid, r, err := n.openFidBy(ctx, flags, func(ctx context.Context, m *Twalkopen) (uint32, *Rlopen, error) {
		return c.walkReaddir(ctx, m, first)
	})
	if errors.Is(err, syscall.EOPNOTSUPP) && c.noWalkReaddir.Load() {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, asErr("open", err)
	}
	d, isDir := c.newHandle(fid, r.QID, flags).(*dirHandle)
	if !isDir { // a file has the name now: its open is of no use
		d.Close()
		return nil, true, vfs.Error("open", "", syscall.ESTALE)
	}
	d.dir, d.first = n, first
	return d, true, nil
}

// walkReaddir sends m as a Twalkreaddir with a new fid, keeping the
// entries it brings in first. A server that does not know the request
// makes the client stop asking it.
func (c *Client) walkReaddir(ctx context.Context, m *Twalkopen, first *firstBatch) (uint32, *Rlopen, error) {
	m.NewFid = c.newFid()
	r, rr, err := call[*Rwalkreaddir](ctx, c, &Twalkreaddir{Twalkopen: *m, Count: uint32(c.iounit())})
	if err != nil {
		c.releaseFid(m.NewFid)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			c.noWalkReaddir.Store(true)
		}
		return 0, nil, err
	}
	open := r.Rlopen
	first.data = bytes.Clone(r.Data)
	rr.release()
	return m.NewFid, &open, nil
}
