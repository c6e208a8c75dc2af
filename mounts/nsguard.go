package mounts

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// The namespace file is edited through the tree like any file, but a write
// that would leave a line the namespace refuses fails with EINVAL and
// changes nothing, so whoever wrote it learns at once (the daemon also
// applies the file when it changes on disk, and logs a refusal). A write
// that lands, and the close of a handle opened for writing, are reported
// to the daemon's follower of the file, so an edit through the tree is
// applied at once rather than at the follower's next look.

// maxNamespaceFile bounds the namespace file a write is checked against.
const maxNamespaceFile = 1 << 20

// GuardNamespace makes writes through the table to the file at path p
// (the namespace file, /etc/namespace) checked before they land, and
// calls written (when not nil) after each that lands and at each close
// of a handle that may have written.
func (t *Table) GuardNamespace(p string, written func()) {
	t.mu.Lock()
	t.nsFile = p
	t.nsWritten = written
	t.mu.Unlock()
	t.changes.Send([]string{p})
}

// guarded wraps h, opened with flags at n, if n is the namespace file
// opened for writing.
func (n *node) guarded(h vfs.Handle, flags int) vfs.Handle {
	if flags&(os.O_WRONLY|os.O_RDWR) == 0 {
		return h
	}
	n.t.mu.RLock()
	ns := n.t.nsFile
	written := n.t.nsWritten
	n.t.mu.RUnlock()
	if ns == "" || n.path != ns || n.view != nil {
		return h
	}
	if written == nil {
		written = func() {}
	}
	return &nsHandle{Handle: h, n: n, written: written}
}

// nsHandle checks each write against the file as it would be. It has no
// host descriptor, so no write can pass the check through the kernel
// (FUSE passthrough).
type nsHandle struct {
	vfs.Handle
	n       *node
	written func()
}

func (h *nsHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	cur, err := h.current(ctx)
	if err != nil {
		return 0, err
	}
	if err := checkNamespace(splice(cur, p, off)); err != nil {
		slog.Warn("write to the namespace file refused; the file is unchanged", "file", h.n.path, "err", err)
		return 0, vfs.Error("write", h.n.path, syscall.EINVAL)
	}
	n, err := h.Handle.WriteAt(ctx, p, off)
	if n > 0 {
		h.written()
	}
	return n, err
}

// Close reports the close too: an open with O_TRUNC changes the file
// without a write.
func (h *nsHandle) Close() error {
	err := h.Handle.Close()
	h.written()
	return err
}

// current reads the file as it is now.
func (h *nsHandle) current(ctx context.Context) ([]byte, error) {
	r, err := h.n.inner.Open(ctx, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return vfs.ReadAll(ctx, r, maxNamespaceFile)
}

// splice is cur with p written at off (zeros in any gap, as a file has).
func splice(cur, p []byte, off int64) []byte {
	end := off + int64(len(p))
	out := make([]byte, max(int64(len(cur)), end))
	copy(out, cur)
	copy(out[off:], p)
	return out
}

// checkNamespace checks the complete lines of text: a last line without
// its newline may still be being written.
func checkNamespace(text []byte) error {
	s := string(text)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i+1]
	} else {
		s = ""
	}
	_, err := parseNamespace(s)
	return err
}
