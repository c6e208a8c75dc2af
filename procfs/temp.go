package procfs

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// Bounds of the temp files of atomic saves: they hold one input's bytes
// in memory until their rename.
const (
	maxTemps    = 16
	maxTempSize = 1 << 20
)

// tempFile is a file an agent's save creates beside stdin or ctl before
// renaming it over them. It lives in memory, with the session.
type tempFile struct {
	vfs.Leaf
	meta

	mu    sync.Mutex
	data  []byte
	mtime time.Time
}

func (t *tempFile) Quick() bool { return true }

func (t *tempFile) Attr(context.Context) (vfs.Attr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Volatile like every node here, though it changes only by writes:
	// a rename over stdin or ctl moves the kernel's entry of the temp
	// file to that name, and a cached entry would keep sending opens of
	// "stdin" to the temp file's node for the cache time, so a plain
	// write right after an atomic save went nowhere. With no entry
	// cache the kernel looks the name up again and finds the real file.
	a := t.attr()
	a.Size, a.Mtime, a.Fixed = int64(len(t.data)), t.mtime, false
	a.Blocks = (a.Size + 511) / 512
	return a, nil
}

// SetAttr truncates or extends (within the bound), and takes modes and
// times as a save sets them; owners stay the daemon's user.
func (t *tempFile) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if s.Valid&(vfs.SetUid|vfs.SetGid) != 0 && (s.Uid != t.uid || s.Gid != t.gid) {
		return vfs.Attr{}, vfs.Error("setattr", "", syscall.EPERM)
	}
	t.mu.Lock()
	if s.Has(vfs.SetSize) {
		if err := t.resizeLocked(s.Size); err != nil {
			t.mu.Unlock()
			return vfs.Attr{}, err
		}
	}
	if s.Has(vfs.SetMode) {
		t.mode = t.mode&syscall.S_IFMT | s.Mode&0o777
	}
	switch {
	case s.Has(vfs.SetMtime):
		t.mtime = s.Mtime
	case s.Has(vfs.SetMtimeNow):
		t.mtime = time.Now()
	}
	t.mu.Unlock()
	return t.Attr(ctx)
}

func (t *tempFile) resizeLocked(size int64) error {
	if size < 0 || size > maxTempSize {
		return vfs.Error("truncate", "", syscall.EFBIG)
	}
	if size <= int64(len(t.data)) {
		t.data = t.data[:size]
	} else {
		t.data = append(t.data, make([]byte, size-int64(len(t.data)))...)
	}
	t.mtime = time.Now()
	return nil
}

func (t *tempFile) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if flags&os.O_TRUNC != 0 {
		t.mu.Lock()
		t.data, t.mtime = t.data[:0], time.Now()
		t.mu.Unlock()
	}
	return &tempHandle{t: t, appends: flags&os.O_APPEND != 0}, nil
}

func (t *tempFile) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.data...)
}

// tempHandle reads and writes a temp file at offsets, as a disk file.
type tempHandle struct {
	t       *tempFile
	appends bool
}

func (h *tempHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	if off < 0 {
		return 0, vfs.Error("read", "", syscall.EINVAL)
	}
	if off >= int64(len(h.t.data)) {
		return 0, io.EOF
	}
	return copy(p, h.t.data[off:]), nil
}

func (h *tempHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	if h.appends {
		off = int64(len(h.t.data))
	}
	if off < 0 {
		return 0, vfs.Error("write", "", syscall.EINVAL)
	}
	end := off + int64(len(p))
	if end > int64(len(h.t.data)) {
		if err := h.t.resizeLocked(end); err != nil {
			return 0, err
		}
	}
	copy(h.t.data[off:], p)
	h.t.mtime = time.Now()
	return len(p), nil
}

// Sync has nothing to flush: the file lives until its rename.
func (h *tempHandle) Sync(context.Context) error { return nil }

func (h *tempHandle) Attr(ctx context.Context) (vfs.Attr, error) { return h.t.Attr(ctx) }

func (h *tempHandle) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	return h.t.SetAttr(ctx, s)
}

func (h *tempHandle) Close() error { return nil }
