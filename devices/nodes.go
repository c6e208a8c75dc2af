package devices

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// idDir is a directory listing every known device: /sys/devices holds
// their descriptors, /mnt their trees. Listing and lookup agree, and an
// entry's inode number stays its own for the daemon's life.
type idDir struct {
	vfs.ReadOnly
	g    *Gateway
	ino  uint64
	kid  func(id string) vfs.Node
	inos vfs.InoTable
}

// DevicesDir is /sys/devices.
func (g *Gateway) DevicesDir() vfs.Node {
	return &idDir{g: g, ino: vfs.NewIno(), kid: func(id string) vfs.Node {
		return newDescFile(g, id)
	}}
}

// Quick: listing and lookup read memory and, at most, stat the store's
// file (vfs.Quick), so edges answer them inline.
func (d *idDir) Quick() bool { return true }

func (d *idDir) Attr(context.Context) (vfs.Attr, error) {
	now := time.Now()
	return vfs.Attr{Ino: d.ino, Mode: syscall.S_IFDIR | 0o555, Nlink: 2, Atime: now, Mtime: now, Ctime: now, Volatile: true}, nil
}

func (d *idDir) Lookup(_ context.Context, name string) (vfs.Node, error) {
	if !d.g.known(name) {
		return nil, vfs.Error("lookup", name, syscall.ENOENT)
	}
	return d.kid(name), nil
}

func (d *idDir) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, vfs.Error("open", "", syscall.EISDIR)
	}
	ids := d.g.ids()
	entries := make(vfs.ListHandle, len(ids))
	for i, id := range ids {
		entries[i] = vfs.DirEntry{Name: id, Ino: d.inos.Of(id), Next: uint64(i + 1)}
	}
	return entries, nil
}

// descFile is /sys/devices/ID: the device's descriptor, a JSON snapshot
// taken at open. The gateway's owner may write it, to set the
// description.
type descFile struct {
	vfs.Leaf
	vfs.FileAttrs
	g  *Gateway
	id string
}

func newDescFile(g *Gateway, id string) *descFile {
	return &descFile{g: g, id: id, FileAttrs: vfs.FileAttrs{Ino: g.descIno(id), Mode: syscall.S_IFREG | 0o644,
		Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Volatile: true}}
}

func (f *descFile) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if err := f.CheckOpen(flags); err != nil {
		return nil, err
	}
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		return &descWriter{f: f}, nil
	}
	return vfs.BytesHandle(f.g.describe(f.id)), nil
}

// descWriter takes a JSON object written to /sys/devices/ID. It applies
// it as soon as what was written parses, so the write that completes it
// gets the answer (close(2) cannot carry it over 9P): EINVAL for what is
// no JSON object, EPERM for a change to any field but description. A
// field written with the value it has is no change, so the descriptor
// read, edited and written back works.
type descWriter struct {
	f    *descFile
	mu   sync.Mutex
	buf  []byte
	done bool
}

func (w *descWriter) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", w.f.id, syscall.EBADF)
}

func (w *descWriter) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done && len(bytes.TrimSpace(p)) == 0 {
		return len(p), nil
	}
	if w.done || off != int64(len(w.buf)) || len(w.buf)+len(p) > maxFrame {
		return 0, vfs.Error("write", w.f.id, syscall.EINVAL)
	}
	w.buf = append(w.buf, p...)
	err := w.f.g.applyDescriptor(w.f.id, w.buf)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return len(p), nil // more to come
	}
	w.done = true
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *descWriter) Close() error { return nil }
