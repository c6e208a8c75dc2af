package shelld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	lines bool // the head is dropped in whole lines (NewLineLog)

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

// NewLineLog returns a log like NewLog's whose head is dropped in whole
// lines: the kept bytes start at the start of a line (unless one line is
// longer than the cap), and at least MarkerRoom bytes go at a time, so
// that a reader can be shown a TruncationMarker in their place (Marked).
func NewLineLog(max int, clock func() time.Time) *Log {
	l := NewLog(max, clock)
	l.lines = true
	return l
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
		if l.lines {
			over = lineCut(l.buf, over)
		}
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

// MarkerRoom is the least a line log drops at a time: room for its
// TruncationMarker in the offsets it dropped.
const MarkerRoom = 64

// lineCut is how many bytes of buf to drop, at least over: at least
// MarkerRoom, and up to the start of the next line when there is one in
// the rest of buf.
func lineCut(buf []byte, over int) int {
	over = min(max(over, MarkerRoom), len(buf))
	if buf[over-1] == '\n' {
		return over
	}
	if nl := bytes.IndexByte(buf[over:], '\n'); nl >= 0 && over+nl+1 < len(buf) {
		return over + nl + 1
	}
	return over // one line longer than the cap: cut inside it
}

// TruncationMarker is the line that stands for dropped bytes in the text
// a reader sees.
func TruncationMarker(dropped int64) string {
	return fmt.Sprintf("[gsvfs: %d bytes truncated]\n", dropped)
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

// Marked is the log as the readers of a session's output see it: the
// dropped bytes are stood for by a TruncationMarker line, at the offsets
// just before the kept ones, so a read from the start of a truncated log
// says so in its first line, then goes on with whole lines. It is for
// line logs (NewLineLog), which leave room for the marker.
type Marked struct{ l *Log }

// Marked returns the log's marked view.
func (l *Log) Marked() Marked { return Marked{l} }

// Stat is the Log's Stat, the start moved down to the marker's.
func (m Marked) Stat() (start, end int64, mtime time.Time, closed bool) {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	start, end = m.l.start, m.l.start+int64(len(m.l.buf))
	return start - int64(len(m.l.markerLocked())), end, m.l.mtime, m.l.closed
}

// ReadAt is the Log's ReadAt, the marker read before the kept bytes.
func (m Marked) ReadAt(p []byte, off int64) (int, error) {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	mark := m.l.markerLocked()
	from := m.l.start - int64(len(mark))
	if off < from {
		return 0, ErrGone
	}
	n := 0
	if off < m.l.start {
		n = copy(p, mark[off-from:])
		off = m.l.start
	}
	if rel := off - m.l.start; rel < int64(len(m.l.buf)) {
		n += copy(p[n:], m.l.buf[rel:])
	}
	return n, nil
}

// markerLocked is the marker for the dropped head, empty when nothing
// was dropped (or too little for it: a log that is not a line log).
func (l *Log) markerLocked() string {
	if l.start == 0 {
		return ""
	}
	if mark := TruncationMarker(l.start); int64(len(mark)) <= l.start {
		return mark
	}
	return ""
}

// TailText is the end of the kept output as text for people, at most
// about n bytes: the last whole lines that fit (the end of one longer
// line else), after a TruncationMarker counting every byte before them
// when there are any.
func (l *Log) TailText(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := 0
	if over := len(l.buf) - n; over > 0 {
		cut = over
		if l.buf[cut-1] != '\n' {
			if nl := bytes.IndexByte(l.buf[cut:], '\n'); nl >= 0 && cut+nl+1 < len(l.buf) {
				cut += nl + 1
			}
		}
	}
	var out []byte
	if dropped := l.start + int64(cut); dropped > 0 {
		out = append(out, TruncationMarker(dropped)...)
	}
	return append(out, l.buf[cut:]...)
}
