package devices

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// ehostdown is how calls under an offline device's /mnt/ID fail, at once.
const ehostdown = syscall.EHOSTDOWN

// idDir is a directory listing every known device: /sys/devices holds
// their descriptors, /mnt their trees. Listing and lookup agree, and an
// entry's inode number stays its own for the daemon's life.
type idDir struct {
	vfs.ReadOnly
	g    *Gateway
	ino  uint64
	kid  func(id string) vfs.Node
	inos *inoTable
}

// DevicesDir is /sys/devices.
func (g *Gateway) DevicesDir() vfs.Node {
	return &idDir{g: g, ino: vfs.NewIno(), inos: newInoTable(), kid: func(id string) vfs.Node {
		return &descFile{g: g, id: id}
	}}
}

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
		entries[i] = vfs.DirEntry{Name: id, Ino: d.inos.of(id), Next: uint64(i + 1)}
	}
	return entries, nil
}

// descFile is /sys/devices/ID: the device's descriptor, a JSON snapshot
// taken at open.
type descFile struct {
	vfs.Leaf
	g  *Gateway
	id string
}

func (f *descFile) Attr(context.Context) (vfs.Attr, error) {
	now := time.Now()
	return vfs.Attr{Ino: f.g.descIno(f.id), Mode: syscall.S_IFREG | 0o444, Nlink: 1,
		Atime: now, Mtime: now, Ctime: now, Volatile: true}, nil
}

func (f *descFile) SetAttr(context.Context, vfs.SetAttr) (vfs.Attr, error) {
	return vfs.Attr{}, vfs.Error("setattr", f.id, syscall.EPERM)
}

func (f *descFile) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0 {
		return nil, vfs.Error("open", f.id, syscall.EPERM)
	}
	return vfs.BytesHandle(f.g.describe(f.id)), nil
}

// inoTable gives each name of a dynamic directory an inode number of its
// own, kept for the daemon's life.
type inoTable struct {
	mu   sync.Mutex
	inos map[string]uint64
}

func newInoTable() *inoTable { return &inoTable{inos: map[string]uint64{}} }

func (t *inoTable) of(name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ino, ok := t.inos[name]
	if !ok {
		ino = vfs.NewIno()
		t.inos[name] = ino
	}
	return ino
}
