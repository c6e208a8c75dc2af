package vfs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
)

// MaxLine bounds what a LineHandle holds while it waits for a newline.
const MaxLine = 64 << 10

// LineHandle is the write-only handle of a ctl file (a session's ctl,
// /sys/cron/ctl). What is written is held until it ends with a newline;
// then Run gets its lines (CtlLines) at once, so that it can check them
// all before any takes effect, and the write gets Run's error. A last line
// without a newline runs at close, whose error is then close's (Flusher),
// so `echo -n run x > ctl` works.
type LineHandle struct {
	Run func(ctx context.Context, lines []string) error
	// Fail, if set, is told of every failure and returns the error the
	// caller gets (a session records it as its lastError).
	Fail func(err error) error
	// Sticky: after a failure every later write of this open file, and
	// its close, fails too and runs nothing, so a line meant to follow
	// one that failed never runs (`cwd DIR` then `exec CMD` in two
	// writes, as printf makes them).
	Sticky bool

	mu      sync.Mutex
	pending []byte
	failed  error
}

// CtlLines are the lines of a ctl text that say something: blank lines
// and # comments left out, spaces trimmed.
func CtlLines(text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

func (h *LineHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("read", "", syscall.EBADF)
}

func (h *LineHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed != nil {
		return 0, h.refuse()
	}
	h.pending = append(h.pending, p...)
	if !bytes.HasSuffix(h.pending, []byte("\n")) {
		if len(h.pending) > MaxLine {
			h.pending = nil
			return 0, h.fail(Error("write", "", syscall.EINVAL), fmt.Sprintf("ctl: line longer than %d bytes", MaxLine))
		}
		return len(p), nil
	}
	if err := h.runPending(ctx); err != nil {
		return 0, err
	}
	return len(p), nil
}

// runPending runs what is held and lets it go.
func (h *LineHandle) runPending(ctx context.Context) error {
	lines := CtlLines(string(h.pending))
	h.pending = nil
	if err := h.Run(ctx, lines); err != nil {
		return h.fail(err, "")
	}
	return nil
}

// fail hands a failure to Fail and, if Sticky, keeps it; why, if set,
// says it in words for Fail.
func (h *LineHandle) fail(err error, why string) error {
	if why != "" {
		err = Reason(Errno(err), why)
	}
	if h.Fail != nil {
		err = h.Fail(err)
	}
	if h.Sticky {
		h.failed = err
	}
	return err
}

// refuse fails a write after an earlier one of the same open file failed.
func (h *LineHandle) refuse() error {
	h.pending = nil
	err := Reason(Errno(h.failed), fmt.Sprintf("ctl: not done, an earlier line written to this open ctl failed: %v", h.failed))
	if h.Fail != nil {
		return h.Fail(err)
	}
	return err
}

// Flush runs the last line, which had no newline.
func (h *LineHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 {
		return nil
	}
	if h.failed != nil {
		return h.refuse()
	}
	return h.runPending(ctx)
}

// Close runs what a close without a flush (9P's clunk) left.
func (h *LineHandle) Close() error { return h.Flush(context.Background()) }
