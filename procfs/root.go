package procfs

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// rootDir is /proc: clone, status, and a directory per session.
type rootDir struct {
	vfs.ReadOnly
	meta
	fs     *FS
	clone  *file
	status *file
}

func newRootDir(f *FS) *rootDir {
	r := &rootDir{meta: f.meta(syscall.S_IFDIR | 0o755), fs: f}
	// Only the daemon's user may make sessions: on a mount shared by
	// root, any user could otherwise fill the cap with idle ones.
	r.clone = f.file(0o400, r.openClone)
	r.status = f.snapshot(f.summary)
	return r
}

// summary is /proc/status: how many sessions there are and may be, and
// why the last clone or mkdir failed.
func (f *FS) summary() []byte {
	live, maxLive := f.mgr.Live()
	f.mu.Lock()
	defer f.mu.Unlock()
	return jsonLine(struct {
		Sessions  int    `json:"sessions"`
		Live      int    `json:"live"`
		MaxLive   int    `json:"maxLive"`
		LastError string `json:"lastError,omitempty"`
	}{len(f.mgr.Names()), live, maxLive, f.lastErr})
}

// openClone makes an idle session: the open's content is its name. The
// session is held while clone is open; see cloneHandle for what its close
// does.
func (r *rootDir) openClone(context.Context, int) (vfs.Handle, error) {
	s, err := r.fs.mgr.Create("")
	if err != nil {
		return nil, r.fs.fail(fromShelld(fmt.Errorf("clone: %w", err)))
	}
	return &cloneHandle{BytesHandle: vfs.BytesHandle(s.ID() + "\n"), d: r.fs.view(s), release: s.Hold()}, nil
}

// cloneHandle is an open clone. As with Plan 9's clone files, the
// session it made goes with it unless it was put to use: if, when clone
// is closed, nobody has opened the session's ctl or stdin, the session
// is forgotten the clone grace (Options.CloneGrace) after the close, or
// once no file of it is open after that. The grace lets `cat /proc/clone`
// be followed by a write to the session's ctl; a recursive grep that
// reads clone and goes on leaves nothing behind.
type cloneHandle struct {
	vfs.BytesHandle
	d       *sessionDir
	release func()
	once    sync.Once
}

func (h *cloneHandle) Close() error {
	h.once.Do(func() {
		h.release()
		h.d.cloneClosed()
	})
	return nil
}

// Quick is false: rmdir waits until a session's processes are gone.
func (r *rootDir) Quick() bool { return false }

func (r *rootDir) Attr(context.Context) (vfs.Attr, error) { return r.attr(), nil }

func (r *rootDir) Lookup(_ context.Context, name string) (vfs.Node, error) {
	switch name {
	case "clone":
		return r.clone, nil
	case "status":
		return r.status, nil
	}
	if s, ok := r.fs.mgr.Get(name); ok {
		return r.fs.view(s), nil
	}
	return nil, vfs.Error("lookup", name, syscall.ENOENT)
}

func (r *rootDir) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, vfs.Error("open", "/proc", syscall.EISDIR)
	}
	r.fs.Reap()
	entries := []vfs.DirEntry{
		{Name: "clone", Ino: r.clone.Ino, Type: syscall.S_IFREG, Next: 1},
		{Name: "status", Ino: r.status.Ino, Type: syscall.S_IFREG, Next: 2},
	}
	for _, name := range r.fs.mgr.Names() {
		s, ok := r.fs.mgr.Get(name)
		if !ok {
			continue
		}
		entries = append(entries, vfs.DirEntry{Name: name, Ino: r.fs.view(s).ino,
			Type: syscall.S_IFDIR, Next: uint64(len(entries) + 1)})
	}
	return vfs.ListHandle(entries), nil
}

// sessionName is what mkdir accepts: letters, digits, '.', '_' and '-',
// not starting with a dot, at most 64 of them.
var sessionName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// Mkdir makes an idle session called name.
func (r *rootDir) Mkdir(_ context.Context, name string, _ uint32) (vfs.Node, error) {
	if name == "clone" || name == "status" {
		return nil, vfs.Error("mkdir", name, syscall.EEXIST)
	}
	if !sessionName.MatchString(name) {
		return nil, r.fs.fail(errorf(syscall.EINVAL, fmt.Sprintf("mkdir %q: a session name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'", name)))
	}
	s, err := r.fs.mgr.Create(name)
	if err != nil {
		return nil, r.fs.fail(fromShelld(fmt.Errorf("mkdir %s: %w", name, err)))
	}
	return r.fs.view(s), nil
}

// Remove is rmdir of a session: its whole process group is killed, and
// it is forgotten once nothing of it runs.
func (r *rootDir) Remove(_ context.Context, name string, dir bool) error {
	if name == "clone" || name == "status" {
		return vfs.Error("remove", name, syscall.EPERM)
	}
	s, ok := r.fs.mgr.Get(name)
	if !ok {
		return vfs.Error("remove", name, syscall.ENOENT)
	}
	if !dir {
		return vfs.Error("remove", name, syscall.EISDIR)
	}
	if err := r.fs.mgr.Remove(name); err != nil {
		return fromShelld(err)
	}
	r.fs.mu.Lock()
	delete(r.fs.views, s)
	r.fs.mu.Unlock()
	return nil
}
