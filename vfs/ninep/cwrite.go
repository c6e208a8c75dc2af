package ninep

import (
	"context"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// Write-behind: a Twrite answered before the next is sent moves one
// message per round trip, so `dd bs=1M` over a link with 10 ms each way
// wrote at 35 MiB/s however fast the link. A client given a window
// (ClientOptions.WriteBehind) acknowledges a write of a stored file as
// soon as its copy is on the way, and keeps up to the window's bytes in
// flight, as sshfs does and NFS's unstable writes do.
//
// What a caller may rely on does not change:
//   - Order. Every other request of the connection (a stat, a read, a
//     truncate, a lock, a clunk, another file's open) waits until the
//     writes sent before it are answered, so nothing sees the file
//     before those writes or acts on it ahead of them. Writes to ranges
//     of the same file that overlap one in flight wait for it, so the
//     last write to a byte is the one that stays.
//   - Errors. A write that fails makes the writing handle's next write,
//     Flush (close(2) through the mount) or Sync fail with its error,
//     once, as Linux reports a failed writeback.
//   - close(2). The handle is a vfs.Flusher: the edge's flush waits for
//     the writes and returns their error, so a file closed through the
//     mount is on the server, as it would be without the window. Only
//     writes whose caller says it flushes at close (vfs.WithFlushAtClose:
//     the FUSE edge) go behind; a gateway's 9P server passing its
//     clients' writes on waits for each, since their close reaches it as
//     a clunk that reports nothing (their own client writes behind).
//
// Only files the server says are stored (a non-zero QID version) opened
// for writing without O_APPEND are written behind: a generated file's
// write (a session's ctl) may be refused for what it says, and an append's
// offset is the server's.
//
// Invariants, each checked by the tests named:
//  1. Every other request of the connection waits for the writes sent
//     before it; a write over bytes in flight waits for them; the bytes
//     in flight stay within the window, one write larger than it going
//     alone (TestBehindWindowRules, TestWritesGoBehind,
//     TestOverlappingWritesKeepOrder).
//  2. A write that fails is reported once, at the handle's next write,
//     Flush or Sync (TestWriteBehindErrors, TestFailedWriteReportedAtNextWrite).
//  3. Flush waits for every write sent, a signal notwithstanding
//     (TestWritesGoBehind, TestFlushNotCutShortBySignal).
//  4. Only writes of stored files, not appends, whose caller flushes at
//     close go behind (TestWhatIsNotWrittenBehind, TestUnflushedWritesWait).
//  5. A write drops what the cache holds of the file, its other handles'
//     read-ahead windows included, when it is sent and again once it
//     landed, so a stat or a read after it sees it
//     (TestWritesGoBehind, TestOwnChangesReachWindows).

// DefaultWriteBehind is a window that keeps a link with 10 ms each way
// busy at some 400 MiB/s.
const DefaultWriteBehind = 8 << 20

// behind is a client's writes in flight: acknowledged to their callers,
// not yet answered by the server.
type behind struct {
	window int64

	mu       sync.Mutex
	held     int64 // bytes in flight
	next     uint64
	inflight map[uint64]span // by order of sending
	changed  chan struct{}   // closed and replaced when a write ends
}

// span is the bytes of one file a write in flight covers.
type span struct {
	ino      uint64
	off, end int64
}

func newBehind(window int64) *behind {
	return &behind{window: window, inflight: map[uint64]span{}, changed: make(chan struct{})}
}

// behindKey marks the context of a write sent behind: it is not made to
// wait for the writes sent before it (see barrier).
type behindKey struct{}

// barrier waits until every write sent behind before it is answered.
func (b *behind) barrier(ctx context.Context) error {
	b.mu.Lock()
	mark, idle := b.next, len(b.inflight) == 0
	b.mu.Unlock()
	for !idle {
		b.mu.Lock()
		ch, clear := b.changed, true
		for seq := range b.inflight {
			if seq < mark {
				clear = false
				break
			}
		}
		b.mu.Unlock()
		if clear {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// admit waits for room in the window and for the writes in flight that
// overlap s, then counts s in flight under the sequence number it returns.
func (b *behind) admit(ctx context.Context, s span) (uint64, error) {
	size := s.end - s.off
	for {
		b.mu.Lock()
		ch := b.changed
		if (b.held == 0 || b.held+size <= b.window) && !b.overlaps(s) {
			seq := b.next
			b.next++
			b.held += size
			b.inflight[seq] = s
			b.mu.Unlock()
			return seq, nil
		}
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// overlaps says whether a write in flight covers any byte of s. Called
// with mu held; the window bounds how many there are.
func (b *behind) overlaps(s span) bool {
	for _, w := range b.inflight {
		if w.ino == s.ino && w.off < s.end && s.off < w.end {
			return true
		}
	}
	return false
}

// done ends the write seq and wakes whoever waits on the window.
func (b *behind) done(seq uint64) {
	b.mu.Lock()
	s := b.inflight[seq]
	delete(b.inflight, seq)
	b.held -= s.end - s.off
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// writingHandle is an open stored file whose writes go behind.
type writingHandle struct {
	*handle
	mu     sync.Mutex
	failed error // the first write that failed since one was last reported
}

var (
	_ vfs.Flusher = (*writingHandle)(nil)
	_ vfs.Syncer  = (*writingHandle)(nil)
)

// writesBehind says whether a handle of q opened with flags writes behind.
func (c *Client) writesBehind(q QID, flags int) bool {
	return c.behind != nil && q.Type == QTFile && q.Version != 0 &&
		flags&syscall.O_ACCMODE != syscall.O_RDONLY && flags&syscall.O_APPEND == 0
}

// WriteAt sends p in iounit-sized writes behind and reports it written
// once every chunk is on its way, when its caller flushes at close;
// otherwise it waits for the answers, after the writes sent before.
func (h *writingHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if err := h.report(); err != nil {
		return 0, err
	}
	if !vfs.FlushesAtClose(ctx) {
		return h.handle.WriteAt(ctx, p, off)
	}
	h.dropAhead()
	h.c.cache.dropChanged(h.ino)
	for done := 0; done < len(p); {
		n := min(len(p)-done, h.c.iounit())
		if err := h.send(ctx, p[done:done+n], off+int64(done)); err != nil {
			return done, err
		}
		done += n
	}
	return len(p), nil
}

// send writes a copy of p at off behind.
func (h *writingHandle) send(ctx context.Context, p []byte, off int64) error {
	b := h.c.behind
	seq, err := b.admit(ctx, span{h.ino, off, off + int64(len(p))})
	if err != nil {
		return vfs.Error("write", "", vfs.Errno(err))
	}
	data := append([]byte(nil), p...)
	owned := h.c.cache.owning(h.ino)
	go func() {
		defer b.done(seq)
		defer owned()
		ctx := context.WithValue(h.c.life, behindKey{}, true)
		r, err := do[*Rwrite](ctx, h.c, &Twrite{Fid: h.fid, Offset: uint64(off), Data: data})
		if err == nil && int(r.Count) < len(data) {
			err = syscall.EIO
		}
		// What the write changed is dropped once it has landed: a stat
		// the server answered between the two was of the file before it.
		h.c.cache.dropChanged(h.ino)
		if err != nil {
			h.fail(asErr("write", err))
		}
	}()
	return nil
}

func (h *writingHandle) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed == nil {
		h.failed = err
	}
}

// report returns, once, the error of a write that failed.
func (h *writingHandle) report() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.failed
	h.failed = nil
	return err
}

// Flush waits for the writes sent so far and returns their error: the
// edge calls it at close(2). A signal to the closing process does not cut
// the wait short: close(2) failing with EINTR would leave the caller not
// knowing whether its data landed (and Go, like most callers, does not
// close again). The wait is bounded all the same: a link that stops
// answering fails its writes within the client's liveness bound.
func (h *writingHandle) Flush(ctx context.Context) error {
	if err := h.c.behind.barrier(context.WithoutCancel(ctx)); err != nil {
		return vfs.Error("flush", "", vfs.Errno(err))
	}
	return h.report()
}

// Sync is Tfsync, sent once the writes before it are answered, and the
// error of any of them that failed.
func (h *writingHandle) Sync(ctx context.Context) error {
	if err := h.handle.Sync(ctx); err != nil {
		return err
	}
	return h.report()
}

// Close waits for the writes still in flight, however long the link
// takes, before the clunk, whose wait is bounded.
func (h *writingHandle) Close() error {
	h.c.behind.barrier(h.c.life)
	return h.handle.Close()
}
