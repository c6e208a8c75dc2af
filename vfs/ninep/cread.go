package ninep

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"
)

// Read-ahead: one Tread at a time moves one message per round trip, so a
// file read in sequence over a link with delay runs at msize/RTT (FUSE
// asks 128 KiB at a time: 6 MiB/s at 10 ms each way). Once a handle has
// been read in sequence, the client keeps the next bytes in flight in
// chunks, a window that grows with the run read so far (bandwidth ×
// delay is what a run that keeps waiting reaches) up to raMax. The
// kernel's own read-ahead sends its reads a little out of order, so a
// read near the last one still counts as in sequence, and the chunks
// just behind it are kept.
//
// Memory: chunks hold their replies, reserved from the connection's reply
// memory (ClientLimits.Memory) like any call; windows together take at
// most half of it and fill no further, so a call never waits on memory a
// window holds for a reader that has stopped. Only files whose content
// the server says is stored (a non-zero QID version) are read ahead: a
// generated file's read may block or have effects.
//
// Invariants, each checked by the tests named:
//  1. A read returns what the server has after every change to the file
//     that the client knows of: its own writes and truncates, through
//     any handle or node (TestOwnChangesReachWindows), and a change on
//     the server's disk once its notice came
//     (TestDiskOverwritesReachHeldHandle, TestDiskSizeChangesReachHeldHandle,
//     TestDiskTruncateMidPageEndsRead). A chunk sent before the file's
//     count of content changes moved (ccache.go) is read anew.
//  2. A read that reaches the end of the file drops the window: the next
//     read asks the server, so a file that grew shows (TestWindowEndAskedAgain);
//     a reader that keeps reading at the end of a growing file (tail -f)
//     sends one Tread per read, and no window (TestReadAtEndOneTread).
//     A read comes short only at the end (vfs.Handle), and says so
//     (io.EOF), so a small file costs one Tread (TestSmallFileOneRead):
//     a chunk that failed after others were copied leaves the rest to a
//     direct read.
//  3. A chunk of a file the server does not watch is served for CacheTTL
//     at most (TestUnwatchedWindowExpires).
//  4. A file read in sequence has several reads in flight, and its
//     window's memory is given back at close
//     (TestSequentialReadKeepsReadsInFlight); all windows together hold
//     at most half of the reply memory (TestWindowsTakeHalfTheMemory).
//  5. A generated file is never read ahead (TestGeneratedFileNotReadAhead).

const (
	raChunk  = 256 << 10 // bytes one read-ahead Tread asks for
	raMax    = 8 << 20   // the largest window
	raBehind = 1 << 20   // how far behind the last read a read is still in sequence
)

// readAhead is the read-ahead window of one open file.
type readAhead struct {
	mu      sync.Mutex
	content *content // the file's count of content changes (ccache.go)
	// vouched: the server's notices keep the file's content true (it is
	// watched), so a chunk is good until a change; else for CacheTTL.
	// Set at each read.
	vouched bool
	now     time.Time  // the cache's clock at the read
	chunks  []*raFetch // in order, each raChunk after the one before
	lastEnd int64      // where the last read ended
	run     int64      // bytes read in sequence so far
}

// raFetch is one chunk's Tread, in flight or done.
type raFetch struct {
	off    int64
	seen   uint64    // the file's content changes when the Tread was sent
	at     time.Time // when the reply came
	done   chan struct{}
	cancel context.CancelFunc // flushes the Tread of a chunk dropped in flight
	mu     sync.Mutex
	data   []byte // aliases rr's frame
	rr     reply
	err    error
	gone   bool // dropped: the reply is released when it comes
}

// readAhead reads p at off through h's window.
func (h *handle) readAhead(ctx context.Context, p []byte, off int64) (int, error) {
	ra := h.ra
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.vouched, ra.now = h.c.cache.watched(h.ino), h.c.cache.clock()
	if off < ra.lastEnd-raBehind || off > ra.lastEnd+raBehind {
		ra.drop(h.c)
		ra.run = 0
	}
	if slices.ContainsFunc(ra.chunks, ra.stale) {
		ra.drop(h.c) // the file changed since: read it anew, in sequence still
	}
	if ra.run == 0 || !ra.covers(off) && !ra.fill(h, off, off+int64(len(p))) {
		n, err := h.c.readAt(ctx, h.fid, p, off)
		ra.note(off, n)
		if n < len(p) {
			// The end, as a window's end (below): no window starts
			// from it, so a reader that keeps reading where a growing
			// file ends (tail -f) sends one Tread per read; and it says
			// so, so that a caller filling its buffer does not ask past
			// it again.
			ra.run = 0
			if err == nil {
				err = io.EOF
			}
		}
		return n, err
	}
	ra.fill(h, off, off+int64(len(p))+min(raMax, max(ra.run, 2*raChunk)))
	n, eof, err := ra.copy(ctx, h.c, p, off)
	if err == nil && !eof && n < len(p) { // past what memory let the window hold
		var more int
		more, err = h.c.readAt(ctx, h.fid, p[n:], off+int64(n))
		eof = n+more < len(p) // a direct read comes short only at the end
		if n += more; err == io.EOF {
			err = nil
		}
	}
	ra.note(off, n)
	ra.trim(h.c, off-raBehind)
	if eof {
		// Where the file ended is asked again by the next read, which
		// starts the window anew: the file may grow with nothing said
		// (a plain peer), and a reader at the end (tail -f) asks once.
		ra.drop(h.c)
		ra.run = 0
	}
	if err == nil && n < len(p) && (eof || n == 0) {
		err = io.EOF
	}
	return n, err
}

// stale says whether f, answered, may be older than the file: it was
// sent before a change to the content that the client knows of, or the
// file is not watched and the reply is CacheTTL old.
func (ra *readAhead) stale(f *raFetch) bool {
	if f.seen != ra.content.changes.Load() {
		return true
	}
	select {
	case <-f.done:
		return !ra.vouched && ra.now.Sub(f.at) >= CacheTTL
	default:
		return false // in flight: checked again once answered
	}
}

// dropAhead gives up h's window (a write through h, its close).
func (h *handle) dropAhead() {
	if h.ra != nil {
		h.ra.mu.Lock()
		h.ra.drop(h.c)
		h.ra.run = 0
		h.ra.mu.Unlock()
	}
}

// note records a read of n bytes at off.
func (ra *readAhead) note(off int64, n int) {
	ra.run += int64(n)
	ra.lastEnd = off + int64(n)
}

// covers reports whether the window holds off.
func (ra *readAhead) covers(off int64) bool {
	return len(ra.chunks) > 0 && off >= ra.chunks[0].off && off < ra.end()
}

func (ra *readAhead) end() int64 {
	if len(ra.chunks) == 0 {
		return 0
	}
	return ra.chunks[len(ra.chunks)-1].off + raChunk
}

// fill sends the Treads that make the window reach to, from off if the
// window does not hold off; false if memory allows none.
func (ra *readAhead) fill(h *handle, off, to int64) bool {
	if !ra.covers(off) {
		ra.drop(h.c)
	}
	next := ra.end()
	if len(ra.chunks) == 0 {
		next = off
	}
	for ; next < to; next += raChunk {
		if h.c.raHeld.Add(raChunk) > h.c.limits.Memory/2 {
			h.c.raHeld.Add(-raChunk)
			break
		}
		ctx, cancel := context.WithCancel(h.c.life)
		f := &raFetch{off: next, seen: ra.content.changes.Load(), done: make(chan struct{}), cancel: cancel}
		ra.chunks = append(ra.chunks, f)
		go f.fetch(ctx, h.c, h.fid)
	}
	return len(ra.chunks) > 0
}

// fetch runs the chunk's Tread until it is answered or dropped.
func (f *raFetch) fetch(ctx context.Context, c *Client, fid uint32) {
	defer f.cancel()
	r, rr, err := call[*Rread](ctx, c, &Tread{Fid: fid, Offset: uint64(f.off), Count: raChunk})
	f.mu.Lock()
	if err == nil {
		f.data, f.rr = r.Data, rr
	}
	f.at = c.cache.clock()
	f.err = asErr("read", err)
	if f.gone {
		f.release(c)
	}
	f.mu.Unlock()
	close(f.done)
}

// release gives back the reply and the window's share; called with f.mu
// held, once the reply is in or the chunk dropped, whichever is last.
func (f *raFetch) release(c *Client) {
	f.rr.release()
	f.rr, f.data = reply{}, nil
	c.raHeld.Add(-raChunk)
}

// drop gives up a chunk: released now if its reply is in, else when it
// comes.
func (f *raFetch) drop(c *Client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = true
	select {
	case <-f.done:
		f.release(c)
	default:
		f.cancel()
	}
}

// drop gives up the whole window.
func (ra *readAhead) drop(c *Client) {
	for _, f := range ra.chunks {
		f.drop(c)
	}
	ra.chunks = nil
}

// trim drops the chunks that end before off.
func (ra *readAhead) trim(c *Client, off int64) {
	for len(ra.chunks) > 0 && ra.chunks[0].off+raChunk <= off {
		ra.chunks[0].drop(c)
		ra.chunks = ra.chunks[1:]
	}
}

// copy fills p from the window at off, waiting for chunks as needed,
// and stops at the end of the file (eof) or of the window.
func (ra *readAhead) copy(ctx context.Context, c *Client, p []byte, off int64) (done int, eof bool, err error) {
	for done < len(p) {
		pos := off + int64(done)
		f := ra.chunkAt(pos)
		if f == nil {
			return done, false, nil
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return done, false, asErr("read", ctx.Err())
		}
		if ra.stale(f) { // the file changed while the chunk was read
			ra.drop(c)
			return done, false, nil
		}
		if f.err != nil {
			ra.drop(c) // the next read asks again
			if done > 0 {
				// Not the end: the rest is asked directly, so what
				// comes short is the file's end alone (vfs.Handle).
				return done, false, nil
			}
			return 0, false, f.err
		}
		n := 0
		if at := pos - f.off; at < int64(len(f.data)) {
			n = copy(p[done:], f.data[at:])
		}
		done += n
		if len(f.data) < raChunk && pos+int64(n) >= f.off+int64(len(f.data)) {
			return done, true, nil // a short chunk ends the file
		}
	}
	return done, false, nil
}

// chunkAt is the chunk holding off, if any.
func (ra *readAhead) chunkAt(off int64) *raFetch {
	if !ra.covers(off) {
		return nil
	}
	return ra.chunks[(off-ra.chunks[0].off)/raChunk]
}
