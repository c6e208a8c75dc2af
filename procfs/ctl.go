package procfs

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// verb is one ctl verb. It checks its argument against what the lines
// before it in the same write leave (b) and returns what it does, so a
// write is checked whole before any of its lines takes effect.
type verb func(d *sessionDir, arg string, b *batch) (apply func() error, err error)

// batch is what the lines of one write, checked so far, will have done.
type batch struct {
	ctx  context.Context
	idle bool   // the session will still be idle: exec, start, cwd and env may come
	dir  string // the tree path relative cwds are taken against ("": host)
	host string // the host directory the session will start in
}

// verbs is the ctl table (gsvfs-proc(7)). A verb missing here fails the
// write with EINVAL.
var verbs = map[string]verb{
	"exec": func(d *sessionDir, arg string, b *batch) (func() error, error) {
		return starting(b, arg, true, func() error { return d.s.Exec(arg) })
	},
	"start": func(d *sessionDir, arg string, b *batch) (func() error, error) {
		return starting(b, arg, false, d.s.StartShell)
	},
	"cwd":     (*sessionDir).setCwd,
	"env":     (*sessionDir).setEnv,
	"shell":   (*sessionDir).setShell,
	"rc":      (*sessionDir).setRC,
	"timeout": (*sessionDir).setTimeout,
	"yield":   (*sessionDir).setYield,
	"signal":  (*sessionDir).signal,
	"kill": func(d *sessionDir, arg string, _ *batch) (func() error, error) {
		return noArg(arg, func() error { d.s.Kill(); return nil })
	},
	"eof":    func(d *sessionDir, arg string, _ *batch) (func() error, error) { return noArg(arg, d.s.EOF) },
	"resize": (*sessionDir).resize,
}

// step is one checked line of a write.
type step struct {
	name  string
	apply func() error
}

// control runs the lines of a write to ctl, one verb a line. Every line
// is checked first; if one fails, none takes effect and the write fails
// (the caller records why as lastError). Then the lines run in order, and
// the first that fails stops the rest (the session may have changed since
// the check).
func (d *sessionDir) control(ctx context.Context, lines []string) error {
	steps, err := d.check(ctx, lines)
	if err != nil {
		return err
	}
	for _, st := range steps {
		if err := st.apply(); err != nil {
			return fromShelld(fmt.Errorf("ctl %s: %w", st.name, err))
		}
	}
	return nil
}

// check parses and checks every line of a write, touching nothing.
func (d *sessionDir) check(ctx context.Context, lines []string) ([]step, error) {
	d.mu.Lock()
	b := &batch{ctx: ctx, idle: d.s.Idle(), dir: d.dir, host: d.s.Workdir()}
	d.mu.Unlock()
	var steps []step
	for _, line := range lines {
		name, arg, _ := strings.Cut(line, " ")
		v, ok := verbs[name]
		if !ok {
			return nil, errorf(syscall.EINVAL, fmt.Sprintf("ctl: unknown verb %q (want exec, start, cwd, env, shell, rc, timeout, yield, signal, kill, eof or resize)", name))
		}
		apply, err := v(d, strings.TrimSpace(arg), b)
		if err != nil {
			return nil, fromShelld(fmt.Errorf("ctl %s: %w", name, err))
		}
		steps = append(steps, step{name, apply})
	}
	return steps, nil
}

// starting checks a verb that starts the process: exec (which needs a
// command) and start (which takes none).
func starting(b *batch, arg string, needsArg bool, start func() error) (func() error, error) {
	if err := idle(b); err != nil {
		return nil, err
	}
	b.idle = false
	if needsArg {
		return needArg(arg, start)
	}
	return noArg(arg, start)
}

// idle fails a verb that only an idle session takes.
func idle(b *batch) error {
	if !b.idle {
		return shelld.ErrStarted
	}
	return nil
}

func needArg(arg string, do func() error) (func() error, error) {
	if arg == "" {
		return nil, errorf(syscall.EINVAL, "needs an argument")
	}
	return do, nil
}

func noArg(arg string, do func() error) (func() error, error) {
	if arg != "" {
		return nil, errorf(syscall.EINVAL, fmt.Sprintf("takes no argument, got %q", arg))
	}
	return do, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *sessionDir) setEnv(kv string, b *batch) (func() error, error) {
	if err := idle(b); err != nil {
		return nil, err
	}
	name, _, ok := strings.Cut(kv, "=")
	if !ok || !envName.MatchString(name) {
		return nil, errorf(syscall.EINVAL, fmt.Sprintf("want NAME=VALUE, got %q", kv))
	}
	return func() error { return d.s.SetEnv(kv) }, nil
}

// setShell takes the shell the session runs, which /etc/shells lists.
func (d *sessionDir) setShell(arg string, b *batch) (func() error, error) {
	if err := idle(b); err != nil {
		return nil, err
	}
	if arg == "" {
		return nil, errorf(syscall.EINVAL, "needs an argument")
	}
	if err := d.s.CheckShell(arg); err != nil {
		return nil, err
	}
	return func() error { return d.s.SetShell(arg) }, nil
}

// setRC takes on or off: whether the shell reads its login and rc files.
func (d *sessionDir) setRC(arg string, b *batch) (func() error, error) {
	if err := idle(b); err != nil {
		return nil, err
	}
	switch arg {
	case "on", "off":
		return func() error { return d.s.SetRC(arg == "on") }, nil
	}
	return nil, errorf(syscall.EINVAL, fmt.Sprintf("want on or off, got %q", arg))
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

func (d *sessionDir) setTimeout(arg string, _ *batch) (func() error, error) {
	t, err := duration(arg)
	if err != nil {
		return nil, err
	}
	return func() error { d.s.SetTimeout(t); return nil }, nil
}

func (d *sessionDir) setYield(arg string, _ *batch) (func() error, error) {
	y, err := duration(arg)
	if err != nil {
		return nil, err
	}
	if y > MaxYield {
		return nil, errorf(syscall.EINVAL, fmt.Sprintf("yield %v is longer than %v", y, MaxYield))
	}
	return func() error {
		d.mu.Lock()
		d.yield = y // 0: back to the default
		d.mu.Unlock()
		return nil
	}, nil
}

func (d *sessionDir) signal(name string, _ *batch) (func() error, error) {
	sig, err := shelld.ParseSignal(name)
	if err != nil {
		return nil, errorf(syscall.EINVAL, err.Error())
	}
	return func() error { return d.s.Signal(sig) }, nil
}

func (d *sessionDir) resize(arg string, _ *batch) (func() error, error) {
	var rows, cols uint16
	if n, err := fmt.Sscanf(arg, "%d %d", &rows, &cols); n != 2 || err != nil || rows == 0 || cols == 0 {
		return nil, errorf(syscall.EINVAL, fmt.Sprintf("want ROWS COLS, got %q", arg))
	}
	return func() error { return d.s.Resize(rows, cols) }, nil
}

// ctl is a session's ctl file (vfs.LineHandle): a verb runs only once
// its line is complete, so a line split over two writes never runs its
// first half (`exec rm -rf /tmp/build` cut to `exec rm -rf /tmp/b`); whole
// lines before an unfinished one wait with it and are checked together. A
// failure is kept in lastError and sticks to the open file: writers such
// as printf(1) write a line at a time, so `printf 'cwd /nope\nexec rm -rf
// build\n' > ctl` is two writes, and the exec must not run once the cwd
// has failed.
func (f *FS) ctl(d *sessionDir) *file {
	return f.file(0o200, func(context.Context, int) (vfs.Handle, error) {
		return &vfs.LineHandle{Run: d.control, Fail: d.s.Fail, Sticky: true}, nil
	})
}
