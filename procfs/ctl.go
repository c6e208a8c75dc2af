package procfs

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// verb is one ctl verb: what it does with the rest of its line.
type verb func(d *sessionDir, arg string) error

// verbs is the ctl table (gsvfs-proc(7)). A verb missing here fails the
// write with EINVAL.
var verbs = map[string]verb{
	"exec":    func(d *sessionDir, arg string) error { return needArg(arg, d.s.Exec) },
	"start":   func(d *sessionDir, arg string) error { return noArg(arg, d.s.StartShell) },
	"cwd":     (*sessionDir).setCwd,
	"env":     (*sessionDir).setEnv,
	"shell":   func(d *sessionDir, arg string) error { return needArg(arg, d.s.SetShell) },
	"rc":      (*sessionDir).setRC,
	"timeout": (*sessionDir).setTimeout,
	"yield":   (*sessionDir).setYield,
	"signal":  (*sessionDir).signal,
	"kill": func(d *sessionDir, arg string) error {
		return noArg(arg, func() error { d.s.Kill(); return nil })
	},
	"eof":    func(d *sessionDir, arg string) error { return noArg(arg, d.s.EOF) },
	"resize": (*sessionDir).resize,
}

// control is a write to ctl: one verb per line, run in order; the first
// that fails fails the write, and its reason becomes lastError. A last
// line without a newline counts, so `echo -n kill > ctl` works.
func (d *sessionDir) control(_ context.Context, p []byte) error {
	for line := range strings.SplitSeq(string(p), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, arg, _ := strings.Cut(line, " ")
		v, ok := verbs[name]
		if !ok {
			return d.s.Fail(errorf(syscall.EINVAL, fmt.Sprintf("ctl: unknown verb %q (want exec, start, cwd, env, shell, rc, timeout, yield, signal, kill, eof or resize)", name)))
		}
		if err := v(d, strings.TrimSpace(arg)); err != nil {
			return d.s.Fail(fromShelld(fmt.Errorf("ctl %s: %w", name, err)))
		}
	}
	return nil
}

func needArg(arg string, do func(string) error) error {
	if arg == "" {
		return errorf(syscall.EINVAL, "needs an argument")
	}
	return do(arg)
}

func noArg(arg string, do func() error) error {
	if arg != "" {
		return errorf(syscall.EINVAL, fmt.Sprintf("takes no argument, got %q", arg))
	}
	return do()
}

// setCwd takes a path of the tree under a disk-backed directory (such as
// /workspaces/app, run in its real directory) or else a host path.
func (d *sessionDir) setCwd(dir string) error {
	if !path.IsAbs(dir) {
		return errorf(syscall.EINVAL, fmt.Sprintf("%q is not an absolute path", dir))
	}
	host, ok := d.fs.opts.Resolve(path.Clean(dir))
	if !ok {
		host = path.Clean(dir)
	}
	return d.s.SetWorkdir(host)
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *sessionDir) setEnv(kv string) error {
	name, _, ok := strings.Cut(kv, "=")
	if !ok || !envName.MatchString(name) {
		return errorf(syscall.EINVAL, fmt.Sprintf("want NAME=VALUE, got %q", kv))
	}
	return d.s.SetEnv(kv)
}

// setRC takes on or off: whether the shell reads its login and rc files.
func (d *sessionDir) setRC(arg string) error {
	switch arg {
	case "on", "off":
		return d.s.SetRC(arg == "on")
	}
	return errorf(syscall.EINVAL, fmt.Sprintf("want on or off, got %q", arg))
}

// duration takes Go's forms (90s, 1m30s, 250ms) or plain seconds (90).
func duration(s string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil && secs >= 0 {
		// Past the range of a Duration (1e10, inf) the conversion
		// wraps to a negative one, which meant no timeout at all and
		// slipped past yield's upper bound.
		if secs*float64(time.Second) >= math.MaxInt64 {
			return 0, errorf(syscall.EINVAL, fmt.Sprintf("bad duration %q (too long)", s))
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errorf(syscall.EINVAL, fmt.Sprintf("bad duration %q (want 30s, 5m, 1.5 or 0)", s))
	}
	return d, nil
}

func (d *sessionDir) setTimeout(arg string) error {
	t, err := duration(arg)
	if err != nil {
		return err
	}
	d.s.SetTimeout(t)
	return nil
}

func (d *sessionDir) setYield(arg string) error {
	y, err := duration(arg)
	if err != nil {
		return err
	}
	if y > MaxYield {
		return errorf(syscall.EINVAL, fmt.Sprintf("yield %v is longer than %v", y, MaxYield))
	}
	d.mu.Lock()
	d.yield = y // 0: back to the default
	d.mu.Unlock()
	return nil
}

func (d *sessionDir) signal(name string) error {
	sig, err := shelld.ParseSignal(name)
	if err != nil {
		return errorf(syscall.EINVAL, err.Error())
	}
	return d.s.Signal(sig)
}

func (d *sessionDir) resize(arg string) error {
	var rows, cols uint16
	if n, err := fmt.Sscanf(arg, "%d %d", &rows, &cols); n != 2 || err != nil || rows == 0 || cols == 0 {
		return errorf(syscall.EINVAL, fmt.Sprintf("want ROWS COLS, got %q", arg))
	}
	return d.s.Resize(rows, cols)
}

// maxCtlLine bounds a ctl line still waiting for its newline.
const maxCtlLine = 64 << 10

// ctlHandle is an open ctl. A verb runs only once its line is complete,
// so a line split over two writes never runs its first half (`exec rm
// -rf /tmp/build` cut to `exec rm -rf /tmp/b`): the open file keeps the
// unfinished line until its newline comes or the file is closed. A line
// finished by a write fails that write; one finished by the close fails
// the close (and is kept in lastError either way).
type ctlHandle struct {
	d       *sessionDir
	mu      sync.Mutex
	pending []byte
}

func (f *FS) ctl(d *sessionDir) *file {
	return &file{meta: f.meta(syscall.S_IFREG | 0o200), input: true,
		open: func(context.Context, int) (vfs.Handle, error) { return &ctlHandle{d: d}, nil }}
}

func (h *ctlHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", "", syscall.EBADF)
}

func (h *ctlHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, p...)
	end := bytes.LastIndexByte(h.pending, '\n')
	if end < 0 {
		if len(h.pending) > maxCtlLine {
			h.pending = nil
			return 0, h.d.s.Fail(errorf(syscall.EINVAL, fmt.Sprintf("ctl: line longer than %d bytes", maxCtlLine)))
		}
		return len(p), nil
	}
	lines := h.pending[:end+1]
	h.pending = slices.Clone(h.pending[end+1:])
	if err := h.d.control(ctx, lines); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush runs the last line, which had no newline: `echo -n kill > ctl`.
func (h *ctlHandle) Flush(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := h.pending
	h.pending = nil
	if len(line) == 0 {
		return nil
	}
	return h.d.control(ctx, line)
}

// Close runs what a close without a flush (9P's clunk) left.
func (h *ctlHandle) Close() error {
	return h.Flush(context.Background())
}
