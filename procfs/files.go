package procfs

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// file is a file of /proc: a vfs.FuncFile owned by the daemon's user
// whose opens, in a session's directory, hold the session (hold.go).
type file struct {
	*vfs.FuncFile
	// of is the session whose directory holds the file; nil elsewhere.
	of *sessionDir
}

// file returns a file of permission bits mode served by open. Inputs
// (stdin, ctl) have a write bit, so they take the truncation of `echo x
// > ctl` and editors' O_TRUNC opens (vfs.FileAttrs).
func (f *FS) file(mode uint32, open func(ctx context.Context, flags int) (vfs.Handle, error)) *file {
	return f.own(vfs.NewFuncFile(mode, open))
}

// own makes ff a file of /proc: the daemon's user's, made now.
func (f *FS) own(ff *vfs.FuncFile) *file {
	ff.Uid, ff.Gid, ff.Blksize, ff.Time = f.uid, f.gid, 4096, time.Now()
	return &file{FuncFile: ff}
}

func (f *file) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	h, err := f.FuncFile.Open(ctx, flags)
	if err != nil || f.of == nil {
		return h, err
	}
	return f.of.held(h, flags), nil
}

// input reports whether the file is one to write to (stdin, ctl), which
// a temp file renamed over it writes to.
func (f *file) input() bool { return f.Mode&0o222 != 0 }

// snapshot is a file whose content is made at each open (vfs.NewSnapshotFile).
func (f *FS) snapshot(gen func() []byte) *file {
	return f.own(vfs.NewSnapshotFile(func(context.Context) []byte { return gen() }))
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
	return f.file(0o444, func(_ context.Context, flags int) (vfs.Handle, error) {
		block := blocks(flags)
		return &lazyHandle{gen: func(ctx context.Context) ([]byte, error) { return gen(ctx, block) }}, nil
	})
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
	return f.file(0o200, func(context.Context, int) (vfs.Handle, error) { return writeHandle{write}, nil })
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
	a.Size, a.Fixed = int64(len(l.target())), false
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
