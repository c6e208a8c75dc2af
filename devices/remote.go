package devices

import (
	"context"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// deviceRoot is /mnt/ID: the root of the device's tree over its current
// link, or EHOSTDOWN at once while it has none. Nodes below it belong to
// the link they were walked on and fail with EIO once it is gone; the
// kernel's next lookup of their paths comes through here again and
// reaches the device's next link.
type deviceRoot struct {
	g  *Gateway
	id string
}

func (r *deviceRoot) cur(op string) (vfs.Node, error) {
	n, err := r.g.root(r.id)
	if err != nil {
		return nil, vfs.Error(op, "/mnt/"+r.id, ehostdown)
	}
	return n, nil
}

func (r *deviceRoot) Attr(ctx context.Context) (vfs.Attr, error) {
	n, err := r.cur("stat")
	if err != nil {
		return vfs.Attr{}, err
	}
	return n.Attr(ctx)
}

func (r *deviceRoot) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	n, err := r.cur("setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	return n.SetAttr(ctx, s)
}

func (r *deviceRoot) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	n, err := r.cur("lookup")
	if err != nil {
		return nil, err
	}
	return n.Lookup(ctx, name)
}

func (r *deviceRoot) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	n, err := r.cur("open")
	if err != nil {
		return nil, err
	}
	return n.Open(ctx, flags)
}

func (r *deviceRoot) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	n, err := r.cur("create")
	if err != nil {
		return nil, nil, err
	}
	return n.Create(ctx, name, flags, mode)
}

func (r *deviceRoot) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	n, err := r.cur("mkdir")
	if err != nil {
		return nil, err
	}
	return n.Mkdir(ctx, name, mode)
}

func (r *deviceRoot) Remove(ctx context.Context, name string, dir bool) error {
	n, err := r.cur("remove")
	if err != nil {
		return err
	}
	return n.Remove(ctx, name, dir)
}

// Rename passes the device's own root for a rename within /mnt/ID.
func (r *deviceRoot) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	n, err := r.cur("rename")
	if err != nil {
		return err
	}
	if other, ok := newDir.(*deviceRoot); ok {
		if other.id != r.id {
			return vfs.Error("rename", oldName, syscall.EXDEV)
		}
		newDir = n
	}
	return n.Rename(ctx, oldName, newDir, newName)
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
