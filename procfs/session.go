package procfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// tailSize is how much of the output /proc/<id>/tail shows.
const tailSize = 4000

// sessionDir is /proc/<id>/.
type sessionDir struct {
	fs *FS
	s  *shelld.Session
	meta
	files map[string]vfs.Node // the fixed files, cmds included
	names []string            // their names, sorted

	mu      sync.Mutex
	yield   time.Duration
	claimed bool // its ctl or stdin was opened (hold.go)
	// dir is the path of the tree the last cwd named, which relative
	// cwds are taken against; "" when it named a host directory.
	dir   string
	temps map[string]*tempFile
	recs  map[int]*recordDir
}

func newSessionDir(f *FS, s *shelld.Session) *sessionDir {
	// 0700: a session's output, environment and records are its user's
	// alone, also on a mount root shares with every user (allow_other).
	d := &sessionDir{fs: f, s: s, meta: f.meta(syscall.S_IFDIR | 0o700),
		temps: map[string]*tempFile{}, recs: map[int]*recordDir{}}
	log := s.Output()
	d.files = map[string]vfs.Node{
		"stdin":  f.input(d.writeInput),
		"ctl":    f.ctl(d),
		"stdout": f.output(log),
		"stderr": f.output(s.Stderr()),
		"stream": f.file(0o444, func(_ context.Context, flags int) (vfs.Handle, error) {
			block := blocks(flags)
			return &vfs.StreamReader{S: log.Marked(), Follow: func(ctx context.Context, off int64) (bool, error) {
				return d.follow(ctx, off, block)
			}}, nil
		}),
		"status":  f.snapshot(func() []byte { return jsonLine(s.Status()) }),
		"wait":    f.blocking(d.wait),
		"tail":    f.snapshot(func() []byte { return tail(log) }),
		"screen":  f.snapshot(func() []byte { return screenText(s.Screen()) }),
		"cmdline": f.snapshot(func() []byte { return lineOf(s.CommandLine()) }),
		"env":     f.snapshot(func() []byte { return lines(s.Environ()) }),
		"cwd":     f.link(s.Cwd),
		"cmds":    newCmdsDir(d),
	}
	for name, n := range d.files {
		d.names = append(d.names, name)
		if fl, ok := n.(*file); ok {
			fl.of = d
		}
	}
	slices.Sort(d.names)
	return d
}

// output is stdout or stderr: the log as it is kept, its truncated head
// said by a marker line (shelld.Marked), its size every byte written.
func (f *FS) output(log *shelld.Log) *file {
	out := f.file(0o444, func(context.Context, int) (vfs.Handle, error) { return &vfs.StreamReader{S: log.Marked()}, nil })
	out.Stat = func() (int64, time.Time) {
		_, end, mtime, _ := log.Stat()
		return end, mtime
	}
	return out
}

// yieldFor is how long a read of an open that blocks (or not) waits.
func (d *sessionDir) yieldFor(block bool) time.Duration {
	if !block {
		return 0
	}
	return d.yieldTime()
}

// yieldTime is how long this session's blocking reads wait at most.
func (d *sessionDir) yieldTime() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.yield > 0 {
		return d.yield
	}
	return d.fs.opts.Yield
}

// follow is a stream read at the end of the output: it waits for more,
// up to the yield time, and ends empty at the yield time or at the end;
// one that does not block ends empty at once.
func (d *sessionDir) follow(ctx context.Context, off int64, block bool) (bool, error) {
	yctx, cancel := context.WithTimeout(ctx, d.yieldFor(block))
	defer cancel()
	more, err := d.s.Output().Follow(yctx, off)
	if err != nil && ctx.Err() == nil {
		return false, nil // the yield time passed: an empty read
	}
	return more, err
}

// wait is /proc/<id>/wait: the status once the process has exited or
// waits for input, or when the yield time has passed; at once for an
// open that does not block.
func (d *sessionDir) wait(ctx context.Context, block bool) ([]byte, error) {
	yctx, cancel := context.WithTimeout(ctx, d.yieldFor(block))
	defer cancel()
	st, err := d.s.Wait(yctx)
	if err != nil && ctx.Err() != nil {
		return nil, err // the caller gave up
	}
	if err != nil {
		st = d.s.Status()
	}
	if !d.s.OneShot() {
		return jsonLine(st), nil
	}
	// An exec's wait carries its output, so one read is enough.
	return jsonLine(execWait{Status: st,
		Output: string(d.s.Output().TailText(waitOutputMax)),
		Stderr: string(d.s.Stderr().TailText(waitOutputMax))}), nil
}

// waitOutputMax bounds the output and stderr in an exec's wait: about
// their last 64 KiB each, in whole lines.
const waitOutputMax = 64 << 10

// execWait is the wait JSON of an exec: its status, output and stderr.
type execWait struct {
	shelld.Status
	Output string `json:"output"`
	Stderr string `json:"stderr"`
}

// writeInput is a write to stdin. The first one starts the interactive
// login shell of an idle session. A terminal that takes nothing for the
// yield time (its input buffer is full: the program in front does not
// read it) fails the write with EAGAIN rather than hang the writer; one
// that took part of it returns the short count.
func (d *sessionDir) writeInput(ctx context.Context, p []byte) (int, error) {
	n, err := d.send(ctx, p)
	if errors.Is(err, shelld.ErrNotRun) {
		if err = d.s.StartShell(); err == nil || errors.Is(err, shelld.ErrStarted) {
			n, err = d.send(ctx, p)
		}
	}
	if err != nil {
		return 0, d.s.Fail(fromShelld(err))
	}
	return n, nil
}

// send gives the terminal what it takes within the yield time. A write it
// took in part returns that count, as a pipe does, so the writer sends
// the rest again and only the rest; one it took nothing of fails with
// EAGAIN.
func (d *sessionDir) send(ctx context.Context, p []byte) (int, error) {
	yctx, cancel := context.WithTimeout(ctx, d.yieldTime())
	defer cancel()
	n, err := d.s.Send(yctx, p)
	if err != nil && ctx.Err() == nil && yctx.Err() != nil {
		if n > 0 {
			return n, nil
		}
		return 0, errorf(syscall.EAGAIN, fmt.Sprintf("stdin: the terminal took none of %d bytes in the yield time: its input buffer is full, the program in front is not reading it", len(p)))
	}
	return n, err
}

// screenText is the screen file: a first line with the terminal's size
// and the cursor (1-based row and column, "hidden" when a program hid
// it), then each row of the terminal, trailing blanks trimmed.
func screenText(sc shelld.Screen) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "size %dx%d cursor %d,%d", sc.Rows, sc.Cols, sc.CursorRow, sc.CursorCol)
	if sc.CursorHidden {
		b.WriteString(" hidden")
	}
	b.WriteByte('\n')
	for _, line := range sc.Lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func tail(log *shelld.Log) []byte {
	b := log.Tail(tailSize)
	// Characters, not bytes: do not begin inside a UTF-8 sequence.
	for i := 0; i < len(b) && i < 3 && b[i]&0xC0 == 0x80; i++ {
		b = b[1:]
	}
	return b
}

func lineOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s + "\n")
}

func lines(l []string) []byte {
	if len(l) == 0 {
		return nil
	}
	return []byte(strings.Join(l, "\n") + "\n")
}

// Quick is false: a rename over stdin or ctl acts as a write, which may
// wait (kill waits for the process group to go).
func (d *sessionDir) Quick() bool { return false }

func (d *sessionDir) Attr(context.Context) (vfs.Attr, error) { return d.attr(), nil }

func (d *sessionDir) SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error) {
	return vfs.Attr{}, vfs.Error("setattr", d.s.ID(), syscall.EPERM)
}

func (d *sessionDir) Lookup(_ context.Context, name string) (vfs.Node, error) {
	if n, ok := d.files[name]; ok {
		return n, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.temps[name]; ok {
		return t, nil
	}
	return nil, vfs.Error("lookup", name, syscall.ENOENT)
}

func (d *sessionDir) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, vfs.Error("open", d.s.ID(), syscall.EISDIR)
	}
	var entries []vfs.DirEntry
	add := func(name string, n vfs.Node) {
		a, _ := n.Attr(ctx)
		entries = append(entries, vfs.DirEntry{Name: name, Ino: a.Ino, Type: a.Type(), Next: uint64(len(entries) + 1)})
	}
	for _, name := range d.names {
		add(name, d.files[name])
	}
	d.mu.Lock()
	temps := make([]string, 0, len(d.temps))
	for name := range d.temps {
		temps = append(temps, name)
	}
	slices.Sort(temps)
	for _, name := range temps {
		add(name, d.temps[name])
	}
	d.mu.Unlock()
	return d.held(vfs.ListHandle(entries), flags), nil
}

func (d *sessionDir) Mkdir(_ context.Context, name string, _ uint32) (vfs.Node, error) {
	return nil, vfs.Error("mkdir", name, syscall.EPERM)
}

// Remove takes temp files away. The session's own files cannot go, but
// unlinking one succeeds and changes nothing, so that `rm -r /proc/<id>`
// reaches the rmdir that ends the session.
func (d *sessionDir) Remove(ctx context.Context, name string, dir bool) error {
	if n, ok := d.files[name]; ok {
		a, _ := n.Attr(ctx)
		switch {
		case dir && !a.IsDir():
			return vfs.Error("remove", name, syscall.ENOTDIR)
		case !dir && a.IsDir():
			return vfs.Error("remove", name, syscall.EISDIR)
		}
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.temps[name]; !ok {
		return vfs.Error("remove", name, syscall.ENOENT)
	}
	if dir {
		return vfs.Error("remove", name, syscall.ENOTDIR)
	}
	delete(d.temps, name)
	return nil
}

// Rename moves a temp file. Renamed over stdin or ctl, its bytes are
// written there as one write and the temp file is gone: an agent's
// atomic save of an input. The session's own files stay where they are.
func (d *sessionDir) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	if newDir != vfs.Node(d) {
		return vfs.Error("rename", oldName, syscall.EXDEV)
	}
	d.mu.Lock()
	t, ok := d.temps[oldName]
	d.mu.Unlock()
	if !ok {
		if _, fixed := d.files[oldName]; fixed {
			return vfs.Error("rename", oldName, syscall.EPERM)
		}
		return vfs.Error("rename", oldName, syscall.ENOENT)
	}
	if oldName == newName {
		return nil
	}
	if target, fixed := d.files[newName]; fixed {
		in, ok := target.(*file)
		if !ok || !in.input() {
			return vfs.Error("rename", newName, syscall.EPERM)
		}
		if err := d.deliver(ctx, t, newName); err != nil {
			return err
		}
		d.mu.Lock()
		delete(d.temps, oldName)
		d.mu.Unlock()
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.temps, oldName)
	d.temps[newName] = t
	return nil
}

// deliver writes a temp file's bytes to stdin or ctl as one write.
func (d *sessionDir) deliver(ctx context.Context, t *tempFile, to string) error {
	d.claim()
	data := t.bytes()
	if len(data) == 0 {
		return nil
	}
	if to == "ctl" {
		if err := d.control(ctx, vfs.CtlLines(string(data))); err != nil {
			return d.s.Fail(err)
		}
		return nil
	}
	return d.deliverInput(ctx, data)
}

// deliverInput writes a saved temp file to stdin whole: a rename cannot
// report a short count, so it goes on while the terminal takes more.
func (d *sessionDir) deliverInput(ctx context.Context, data []byte) error {
	for len(data) > 0 {
		n, err := d.writeInput(ctx, data)
		if err != nil {
			return err
		}
		if n == 0 {
			return d.s.Fail(errorf(syscall.EAGAIN, "stdin: the terminal took nothing"))
		}
		data = data[n:]
	}
	return nil
}

// Create makes a temp file (what a save writes before its rename), or
// opens one of the session's files when it is asked for by name.
func (d *sessionDir) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if err := vfs.CheckName("create", name); err != nil {
		return nil, nil, err
	}
	if n, ok := d.files[name]; ok {
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, vfs.Error("create", name, syscall.EEXIST)
		}
		h, err := n.Open(ctx, flags)
		return n, h, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.temps[name]; ok {
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, vfs.Error("create", name, syscall.EEXIST)
		}
		h, err := t.Open(ctx, flags)
		return t, h, err
	}
	if len(d.temps) >= maxTemps {
		return nil, nil, d.s.Fail(errorf(syscall.ENOSPC, "too many temp files in the session's directory"))
	}
	t := &tempFile{meta: d.fs.meta(syscall.S_IFREG | mode&0o777)}
	t.mtime = t.made
	d.temps[name] = t
	return t, &tempHandle{t: t}, nil
}
