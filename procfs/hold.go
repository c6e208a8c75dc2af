package procfs

import (
	"context"
	"os"
	"sync"

	"github.com/gsvfs/gsvfs/vfs"
)

// An open file of a session holds it: an idle session nobody holds
// expires after the idle time (shelld's Hold), and one made by
// clone goes soon after clone is closed unless somebody claimed it by
// opening its ctl or stdin (cloneHandle).

// held wraps h, an open of one of the session's files (or of its
// directory) with flags, so
// that it holds the session until it is closed. An open for writing (ctl,
// stdin) claims the session.
func (d *sessionDir) held(h vfs.Handle, flags int) vfs.Handle {
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		d.claim()
	}
	hh := &heldHandle{Handle: h, release: d.s.Hold()}
	if _, ok := h.(vfs.Flusher); ok {
		return heldFlusher{hh}
	}
	if _, ok := h.(vfs.DirReader); ok {
		return heldDir{hh}
	}
	return hh
}

// claim marks the session as put to use: the clone grace no longer
// applies to it, only the idle time.
func (d *sessionDir) claim() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.claimed {
		d.claimed = true
		d.s.ExpireIdleAfter(0)
	}
}

// cloneClosed is the close of the clone open that made the session: an
// unclaimed session gets the clone grace from now.
func (d *sessionDir) cloneClosed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.claimed {
		d.s.ExpireIdleAfter(d.fs.opts.CloneGrace)
	}
}

// heldHandle lets its session go at the close.
type heldHandle struct {
	vfs.Handle
	release func()
	once    sync.Once
}

func (h *heldHandle) Close() error {
	err := h.Handle.Close()
	h.once.Do(h.release)
	return err
}

// heldFlusher keeps the Flush of a handle that has one (ctl runs its
// last line there).
type heldFlusher struct{ *heldHandle }

func (h heldFlusher) Flush(ctx context.Context) error {
	return h.Handle.(vfs.Flusher).Flush(ctx)
}

// heldDir keeps the listing of the session's directory, which an open
// of it holds too.
type heldDir struct{ *heldHandle }

func (h heldDir) ReadDir(ctx context.Context, off uint64) ([]vfs.DirEntry, error) {
	return h.Handle.(vfs.DirReader).ReadDir(ctx, off)
}
