// Package devfs is /dev: null, zero, full, random and urandom, and log,
// whose lines go to the daemon's log, each writer's at a bounded rate.
//
// null, zero, full, random and urandom are character devices with
// Linux's numbers (mem, major 1), as a Linux root shows them, so that a
// recursive walk of the tree (grep -r, find -type f, tar) passes them by
// as it passes a host's /dev. Like every device node they are the
// opening machine's kernel's: neither edge asks the daemon to open one
// (a kernel opens its own device where the mount admits device nodes; a
// FUSE mount is nodev, where the open fails with EACCES; the 9P server
// refuses the open of a device node). log is a regular file (mode 0222):
// it must reach the daemon.
package devfs

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// Options configure /dev.
type Options struct {
	Log *slog.Logger // where the lines of /dev/log go; slog.Default if nil
	// Rate and Burst are each writer's share of the log: bytes a second,
	// and at once (DefaultRate and DefaultBurst if 0). TotalRate and
	// TotalBurst are all writers' together (DefaultTotalRate and
	// DefaultTotalBurst if 0).
	Rate, Burst           int
	TotalRate, TotalBurst int
	Clock                 func() time.Time // time.Now if nil
}

// Dev is /dev, and the account of what /dev/log kept and dropped.
type Dev struct {
	root vfs.Node
	lim  *limiter
}

// Root returns the directory /dev.
func (d *Dev) Root() vfs.Node { return d.root }

// LogStats counts the lines of /dev/log kept and dropped so far.
func (d *Dev) LogStats() LogStats { return d.lim.counts() }

// New returns /dev.
func New(o Options) *Dev {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	lim := newLimiter(o)
	root := vfs.NewStaticDir(map[string]vfs.Node{
		"null":    memDevice(3),
		"zero":    memDevice(5),
		"full":    memDevice(7),
		"random":  memDevice(8),
		"urandom": memDevice(9),
		"log":     vfs.NewFuncFile(0o222, logOpener(o.Log, lim)),
	})
	return &Dev{root: root, lim: lim}
}

// memDevice is the character device of Linux's mem driver (major 1)
// numbered minor, mode 0666. The daemon never opens it (EOPNOTSUPP): a
// device node is the opening machine's kernel's, as the edges have it.
func memDevice(minor uint32) vfs.Node {
	f := vfs.NewFuncFile(0o666, func(context.Context, int) (vfs.Handle, error) {
		return nil, vfs.Error("open", "", syscall.EOPNOTSUPP)
	})
	f.Mode = syscall.S_IFCHR | 0o666
	f.Rdev = hostDev(1, minor)
	return f
}

// maxLogLine is the longest line /dev/log keeps whole; a longer one is
// logged in pieces of this size.
const maxLogLine = 4096

// logOpener gives each open of /dev/log a line buffer of its own: a line
// is logged, with the writer's uid, once its newline comes, or at close,
// unless the writer (the uid that opened it, on the connection it came
// by) or all writers together are over their rate (lim).
func logOpener(log *slog.Logger, lim *limiter) func(context.Context, int) (vfs.Handle, error) {
	return func(ctx context.Context, _ int) (vfs.Handle, error) {
		who := writer{peer: vfs.PeerFrom(ctx), uid: unknownWriter}
		if c, ok := vfs.CallerFrom(ctx); ok {
			who.uid = int64(c.Uid)
		}
		w := &lineWriter{emit: func(line []byte) {
			if lim.allow(who, len(line)) {
				log.Info("dev/log", "uid", who.uid, "line", string(line))
			}
		}}
		return vfs.FuncHandle{Write: w.write, Done: w.flush}, nil
	}
}

type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line []byte)
}

func (w *lineWriter) write(_ context.Context, p []byte, _ int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < maxLogLine {
			return len(p), nil
		}
		if i < 0 || i > maxLogLine {
			i = maxLogLine
			w.emit(w.buf[:i])
			w.buf = w.buf[i:]
			continue
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
	return nil
}
