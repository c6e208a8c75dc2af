package vfstest

import (
	"context"
	"fmt"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// EndlessDir is a directory whose listing never ends, as a device gone
// bad (or a looping filesystem under it) serves: every read of it brings
// a thousand more entries. Tests of what bounds a listing use it.
type EndlessDir struct {
	vfs.ReadOnly
	Ino uint64
}

// NewEndlessDir makes an endless directory.
func NewEndlessDir() *EndlessDir { return &EndlessDir{Ino: vfs.NewIno()} }

func (d *EndlessDir) Attr(context.Context) (vfs.Attr, error) {
	return vfs.Attr{Ino: d.Ino, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Volatile: true}, nil
}

// Lookup finds nothing: the entries exist only in the listing.
func (d *EndlessDir) Lookup(_ context.Context, name string) (vfs.Node, error) {
	return nil, vfs.Error("lookup", name, syscall.ENOENT)
}

func (d *EndlessDir) Open(context.Context, int) (vfs.Handle, error) { return endlessList{}, nil }

type endlessList struct{ vfs.ListHandle }

// ReadDir returns a thousand more entries, wherever it is asked from.
func (endlessList) ReadDir(_ context.Context, off uint64) ([]vfs.DirEntry, error) {
	ents := make([]vfs.DirEntry, 1000)
	for i := range ents {
		n := off + uint64(i)
		ents[i] = vfs.DirEntry{Name: fmt.Sprintf("file-%012d", n), Ino: n + 100, Type: syscall.S_IFREG, Next: n + 1}
	}
	return ents, nil
}
