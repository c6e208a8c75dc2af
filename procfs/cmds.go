package procfs

import (
	"bytes"
	"context"
	"strconv"
	"syscall"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// cmdsDir is /proc/<id>/cmds/: a directory per command line written to
// the interactive shell, and `last`, a symlink to the newest.
type cmdsDir struct {
	vfs.ReadOnly
	meta
	d    *sessionDir
	last *link
}

func newCmdsDir(d *sessionDir) *cmdsDir {
	c := &cmdsDir{meta: d.fs.meta(syscall.S_IFDIR | 0o555), d: d}
	c.last = d.fs.link(func() string {
		if _, last := d.s.CommandRange(); last > 0 {
			return strconv.Itoa(last)
		}
		return ""
	})
	return c
}

func (c *cmdsDir) Quick() bool { return true }

func (c *cmdsDir) Attr(context.Context) (vfs.Attr, error) { return c.attr(), nil }

func (c *cmdsDir) Lookup(_ context.Context, name string) (vfs.Node, error) {
	first, last := c.d.s.CommandRange()
	if name == "last" && last > 0 {
		return c.last, nil
	}
	n, err := strconv.Atoi(name)
	if err != nil || strconv.Itoa(n) != name || n < first || n > last || last == 0 {
		return nil, vfs.Error("lookup", name, syscall.ENOENT)
	}
	return c.d.record(n), nil
}

func (c *cmdsDir) Open(context.Context, int) (vfs.Handle, error) {
	recs := c.d.s.Commands()
	entries := make([]vfs.DirEntry, 0, len(recs)+1)
	for _, r := range recs {
		entries = append(entries, vfs.DirEntry{Name: strconv.Itoa(r.N), Ino: c.d.record(r.N).ino,
			Type: syscall.S_IFDIR, Next: uint64(len(entries) + 1)})
	}
	if len(recs) > 0 {
		entries = append(entries, vfs.DirEntry{Name: "last", Ino: c.last.ino, Type: syscall.S_IFLNK, Next: uint64(len(entries) + 1)})
	}
	return vfs.ListHandle(entries), nil
}

// Remove succeeds and changes nothing, as for the session's files, so
// that `rm -r` of a session works through its records.
func (c *cmdsDir) Remove(context.Context, string, bool) error { return nil }

// record returns the directory of record n, the same for the session's
// life (its inode numbers stay), dropping those of forgotten records.
func (d *sessionDir) record(n int) *recordDir {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.recs[n]; ok {
		return r
	}
	if len(d.recs) > 2*shelld.MaxCommands {
		for k := range d.recs {
			if k <= n-shelld.MaxCommands {
				delete(d.recs, k)
			}
		}
	}
	r := newRecordDir(d, n)
	d.recs[n] = r
	return r
}

// recordDir is /proc/<id>/cmds/<n>/.
type recordDir struct {
	*vfs.StaticDir
	meta
}

func newRecordDir(d *sessionDir, n int) *recordDir {
	f := d.fs
	get := func() shelld.Command { c, _ := d.s.Command(n); return c }
	r := &recordDir{meta: f.meta(syscall.S_IFDIR | 0o555)}
	r.StaticDir = vfs.NewStaticDir(map[string]vfs.Node{
		"input":  f.snapshot(func() []byte { return lineOf(get().Input) }),
		"output": f.snapshot(func() []byte { return d.output(get()) }),
		"exit":   f.snapshot(func() []byte { return exitLine(get()) }),
		"status": f.snapshot(func() []byte { return jsonLine(get()) }),
		"wait": f.blocking(func(ctx context.Context, block bool) ([]byte, error) {
			return d.waitCommand(ctx, n, block)
		}),
	})
	return r
}

func (r *recordDir) Attr(context.Context) (vfs.Attr, error) { return r.attr(), nil }

// Remove succeeds and changes nothing (see cmdsDir.Remove).
func (r *recordDir) Remove(context.Context, string, bool) error { return nil }

func exitLine(c shelld.Command) []byte {
	if c.ExitCode == nil {
		return nil
	}
	return []byte(strconv.Itoa(*c.ExitCode) + "\n")
}

// output is the part of the log that is a command's output, as far as
// the log still keeps it, as the command printed it (asPrinted).
func (d *sessionDir) output(c shelld.Command) []byte {
	log := d.s.Output()
	start, _, _, _ := log.Stat()
	from := max(c.OutputStart, start)
	if c.OutputEnd <= from {
		return nil
	}
	buf := make([]byte, c.OutputEnd-from)
	n, _ := log.ReadAt(buf, from)
	return asPrinted(buf[:n])
}

// asPrinted undoes what an interactive shell's terminal does to output,
// \n → \r\n, so a record reads as the command printed it: each \r\n
// becomes \n. A \r the command printed itself stays (a progress bar's
// redraws; a \r\n it printed, which the terminal made \r\r\n, comes
// back as \r\n).
func asPrinted(p []byte) []byte {
	return bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n"))
}

// waited is what cmds/<n>/wait returns: the record and its output.
type waited struct {
	shelld.Command
	Output string `json:"output"`
}

// waitCommand is cmds/<n>/wait: the record, with its output, once the
// command has ended or waits for input, or when the yield time passes;
// at once for an open that does not block.
func (d *sessionDir) waitCommand(ctx context.Context, n int, block bool) ([]byte, error) {
	yctx, cancel := context.WithTimeout(ctx, d.yieldFor(block))
	defer cancel()
	c, err := d.s.WaitCommand(yctx, n)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, err // the caller gave up
	case yctx.Err() != nil:
		// the yield time passed: report the command as it is now
	default:
		return nil, fromShelld(err)
	}
	return jsonLine(waited{Command: c, Output: string(d.output(c))}), nil
}
