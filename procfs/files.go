package procfs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// file is a leaf: its attributes, and what an open of it gives.
type file struct {
	vfs.Leaf
	meta
	// open makes the handle; flags are checked against mode first.
	open func(ctx context.Context, flags int) (vfs.Handle, error)
	// size reports a truthful size and modification time; nil for files
	// generated at open, which report 0 as Linux's procfs does.
	size func() (int64, time.Time)
	// inputs (stdin, ctl) accept truncation and ignore it, so that
	// `echo x > ctl` and editors' O_TRUNC opens work.
	input bool
	// of is the session whose directory holds the file, which its opens
	// hold (hold.go); nil elsewhere.
	of *sessionDir
}

// Quick: a file's attributes are in memory; only its reads may wait.
func (f *file) Quick() bool { return true }

func (f *file) Attr(context.Context) (vfs.Attr, error) {
	a := f.attr()
	if f.size != nil {
		a.Size, a.Mtime = f.size()
		a.Blocks = (a.Size + 511) / 512
	}
	return a, nil
}

// SetAttr accepts what shells and editors do to an input before writing
// it (truncate to 0, touch) and refuses every other change.
func (f *file) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	allowed := vfs.SetAtime | vfs.SetMtime | vfs.SetAtimeNow | vfs.SetMtimeNow | vfs.SetClearSetID
	if f.input && (s.Valid&vfs.SetSize == 0 || s.Size == 0) {
		allowed |= vfs.SetSize
	}
	if s.Valid&^allowed != 0 {
		return vfs.Attr{}, vfs.Error("setattr", "", syscall.EPERM)
	}
	return f.Attr(ctx)
}

func (f *file) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if err := checkAccess(f.mode, flags, f.input); err != nil {
		return nil, err
	}
	h, err := f.open(ctx, flags)
	if err != nil || f.of == nil {
		return h, err
	}
	return f.of.held(h, flags), nil
}

// checkAccess refuses an open the file's mode does not allow, whoever
// asks: a write-only input cannot be read, an output cannot be written.
func checkAccess(mode uint32, flags int, input bool) error {
	acc := flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	reads, writes := acc != os.O_WRONLY, acc != os.O_RDONLY
	if (reads && mode&0o444 == 0) || (writes && mode&0o222 == 0) {
		return vfs.Error("open", "", syscall.EACCES)
	}
	if flags&os.O_TRUNC != 0 && !input {
		return vfs.Error("open", "", syscall.EACCES)
	}
	return nil
}

// snapshot is a file whose content is made at each open: one consistent
// snapshot per open, never regenerated per read.
func (f *FS) snapshot(gen func() []byte) *file {
	return &file{meta: f.meta(syscall.S_IFREG | 0o444), open: func(context.Context, int) (vfs.Handle, error) {
		return vfs.BytesHandle(gen()), nil
	}}
}

// lazyHandle makes its snapshot at the first read, which may block (wait
// files). A read the caller gives up on makes none, so the next read
// starts again.
type lazyHandle struct {
	gen  func(ctx context.Context) ([]byte, error)
	mu   sync.Mutex
	data vfs.BytesHandle
	made bool
}

func (h *lazyHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.made {
		data, err := h.gen(ctx)
		if err != nil {
			return 0, err
		}
		h.data, h.made = data, true
	}
	return h.data.ReadAt(ctx, p, off)
}

func (h *lazyHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "", syscall.EBADF)
}

func (h *lazyHandle) Close() error { return nil }

// blocking is a file whose first read waits (at most the yield time)
// before its snapshot is made. Opened with O_NONBLOCK, it does not wait
// (see blocks).
func (f *FS) blocking(gen func(ctx context.Context, block bool) ([]byte, error)) *file {
	return &file{meta: f.meta(syscall.S_IFREG | 0o444), open: func(_ context.Context, flags int) (vfs.Handle, error) {
		block := blocks(flags)
		return &lazyHandle{gen: func(ctx context.Context) ([]byte, error) { return gen(ctx, block) }}, nil
	}}
}

// blocks reports whether reads of an open with flags may wait: not with
// O_NONBLOCK, as a pipe's. GNU grep -r opens every file it meets so (lest
// a FIFO hang it), so a recursive grep of /proc takes what the blocking
// files hold now instead of a yield time for each of them.
func blocks(flags int) bool { return flags&syscall.O_NONBLOCK == 0 }

// writeHandle hands every write to a function: an input's bytes go
// through as they come, whatever the offset.
type writeHandle struct {
	write func(ctx context.Context, p []byte) (int, error)
}

func (h writeHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", "", syscall.EBADF)
}

func (h writeHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	return h.write(ctx, p)
}

func (h writeHandle) Close() error { return nil }

// input is a write-only file (stdin, ctl).
func (f *FS) input(write func(ctx context.Context, p []byte) (int, error)) *file {
	return &file{meta: f.meta(syscall.S_IFREG | 0o200), input: true,
		open: func(context.Context, int) (vfs.Handle, error) { return writeHandle{write}, nil }}
}

// jsonLine encodes v as one line of JSON, leaving <, > and & as they are
// (output is shown to people, not put into HTML).
func jsonLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("{}\n")
	}
	return b.Bytes()
}

// link is a symlink whose target is looked up at each readlink.
type link struct {
	vfs.Leaf
	meta
	target func() string
}

func (l *link) Quick() bool { return true }

func (l *link) Attr(context.Context) (vfs.Attr, error) {
	a := l.attr()
	a.Size = int64(len(l.target()))
	return a, nil
}

func (l *link) SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error) {
	return vfs.Attr{}, vfs.Error("setattr", "", syscall.EPERM)
}

func (l *link) Open(context.Context, int) (vfs.Handle, error) {
	return nil, vfs.Error("open", "", syscall.ELOOP)
}

func (l *link) Readlink(context.Context) (string, error) { return l.target(), nil }

func (f *FS) link(target func() string) *link {
	return &link{meta: f.meta(syscall.S_IFLNK | 0o777), target: target}
}
