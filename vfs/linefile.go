package vfs

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// maxLine bounds a line of a LineHandle still waiting for its newline.
const maxLine = 64 << 10

// LineHandle is the write-only handle of a ctl file: it gives Do each
// complete line written, in order, skipping blank lines and # comments.
// A line split over two writes runs once whole, never its first half;
// the write that completes lines gets the first failure (the lines after
// it do not run); a last line without a newline runs at close, whose
// error is then close's (Flusher), so `echo -n run x > ctl` works.
type LineHandle struct {
	Do      func(ctx context.Context, line string) error
	mu      sync.Mutex
	pending []byte
}

func (h *LineHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("read", "", syscall.EBADF)
}

func (h *LineHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, p...)
	end := bytes.LastIndexByte(h.pending, '\n')
	if end < 0 {
		if len(h.pending) > maxLine {
			h.pending = nil
			return 0, Error("write", "", syscall.EINVAL)
		}
		return len(p), nil
	}
	lines := string(h.pending[:end])
	h.pending = slices.Clone(h.pending[end+1:])
	if err := h.run(ctx, lines); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *LineHandle) run(ctx context.Context, text string) error {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := h.Do(ctx, line); err != nil {
			return err
		}
	}
	return nil
}

// Flush runs the last line, which had no newline.
func (h *LineHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := string(h.pending)
	h.pending = nil
	return h.run(ctx, line)
}

// Close runs what a close without a flush (9P's clunk) left.
func (h *LineHandle) Close() error { return h.Flush(context.Background()) }
