package vfs

import (
	"context"
	"io"
	"sync"
	"syscall"
	"time"
)

// Stream is an append-only byte stream at absolute offsets (the count of
// bytes written before a byte) whose head may be dropped to keep it
// within a cap: a session's output, the daemon's log.
type Stream interface {
	// Stat reports the offset of the first kept byte, the end, the time
	// of the last write and whether the stream has ended.
	Stat() (start, end int64, mtime time.Time, closed bool)
	// ReadAt copies the bytes at off; at or past the end it returns 0
	// and no error, below the first kept byte an error.
	ReadAt(p []byte, off int64) (int, error)
}

// StreamReader reads a Stream at the offsets its size counts in, as a
// Handle. A reader that falls behind the kept head (the bytes past the
// cap were dropped, or it starts at 0 of a trimmed stream) is moved up to
// the head: its offsets are shifted from then on, so it reads on without
// repeating or skipping what is kept.
type StreamReader struct {
	S Stream
	// Follow, when set, makes a read at the end wait for more, as a
	// stream does; it reports false when the read should end empty.
	Follow func(ctx context.Context, off int64) (bool, error)

	mu    sync.Mutex
	shift int64
}

func (r *StreamReader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, Error("read", "", syscall.EINVAL)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		abs := off + r.shift
		start, end, _, _ := r.S.Stat()
		if abs < start {
			r.shift += start - abs
			abs = start
		}
		if abs >= end && r.Follow != nil {
			more, err := r.Follow(ctx, abs)
			if err != nil || !more {
				return 0, err
			}
		}
		n, err := r.S.ReadAt(p, abs)
		if err != nil {
			if now, _, _, _ := r.S.Stat(); abs < now {
				continue // dropped while we looked: move up again
			}
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (r *StreamReader) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("write", "", syscall.EBADF)
}

func (r *StreamReader) Close() error { return nil }

// StreamFile is a read-only file (mode 0444) over a Stream: its size is
// the stream's end, so it grows like a log on disk, and `tail -n` and
// `tail -f` work on it; reads past the kept head start at the head.
type StreamFile struct {
	Leaf
	FileAttrs
	s Stream
}

// NewStreamFile returns a file showing s.
func NewStreamFile(s Stream) *StreamFile {
	size := func() (int64, time.Time) {
		_, end, mtime, _ := s.Stat()
		return end, mtime
	}
	return &StreamFile{s: s, FileAttrs: FileAttrs{Ino: NewIno(), Mode: syscall.S_IFREG | 0o444,
		Time: bootTime, Volatile: true, Stat: size}}
}

// Open returns a reader of the stream.
func (f *StreamFile) Open(_ context.Context, flags int) (Handle, error) {
	if err := f.CheckOpen(flags); err != nil {
		return nil, err
	}
	return &StreamReader{S: f.s}, nil
}
