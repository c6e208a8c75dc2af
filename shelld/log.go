package shelld

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrGone is the error of a read below a log's Start: those bytes were
// dropped to keep the log within its cap.
var ErrGone = errors.New("shelld: output dropped from the head of the log")

// Log is a session's output: an append-only byte stream of which only the
// last Cap bytes are kept. Offsets are absolute (the count of bytes ever
// written before a byte), so they stay valid while the head is dropped,
// and any number of readers can each follow the whole stream.
type Log struct {
	max   int
	clock func() time.Time

	mu      sync.Mutex
	buf     []byte // the kept tail, starting at offset start
	start   int64
	mtime   time.Time
	closed  bool
	changed chan struct{} // closed and replaced at every write and at Close
}

// NewLog returns an empty log keeping at most max bytes.
func NewLog(max int, clock func() time.Time) *Log {
	return &Log{max: max, clock: clock, mtime: clock(), changed: make(chan struct{})}
}

// Write appends p, dropping the oldest bytes beyond the cap. It never
// blocks on readers, so a process nobody reads keeps running.
func (l *Log) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		// Reslicing drops the head; the next append that runs out of
		// room copies only the kept tail, so memory stays within a
		// small multiple of the cap.
		l.start += int64(over)
		l.buf = l.buf[over:]
	}
	l.mtime = l.clock()
	l.wakeLocked()
	return len(p), nil
}

// Trim drops the kept bytes before offset start (no further than the
// end): a keeper of whole lines cuts at a line's start.
func (l *Log) Trim(start int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := min(start, l.start+int64(len(l.buf))) - l.start
	if cut > 0 {
		l.buf = l.buf[cut:]
		l.start += cut
	}
}

// Close marks the end of the output: followers see EOF once they have
// read everything.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.wakeLocked()
	}
}

func (l *Log) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Stat reports the offset of the first kept byte, the end (every byte ever
// written), the time of the last write and whether the output has ended.
func (l *Log) Stat() (start, end int64, mtime time.Time, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start, l.start + int64(len(l.buf)), l.mtime, l.closed
}

// ReadAt copies the bytes at absolute offset off into p. At or past the
// end it returns 0 and a nil error (more may come); below Start, ErrGone.
func (l *Log) ReadAt(p []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off < l.start {
		return 0, ErrGone
	}
	rel := off - l.start
	if rel >= int64(len(l.buf)) {
		return 0, nil
	}
	return copy(p, l.buf[rel:]), nil
}

// Tail returns the last n kept bytes.
func (l *Log) Tail(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.buf[max(0, len(l.buf)-n):]...)
}

// Follow waits until there is output past off, the output has ended, or
// ctx ends, and reports whether there is more to read at off.
func (l *Log) Follow(ctx context.Context, off int64) (more bool, err error) {
	for {
		l.mu.Lock()
		end, closed, changed := l.start+int64(len(l.buf)), l.closed, l.changed
		l.mu.Unlock()
		if off < end {
			return true, nil
		}
		if closed {
			return false, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
