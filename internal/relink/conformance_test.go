package relink

import (
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// TestConformance runs the vfs suite through a relink tree whose link
// is up, as every tree of gsvfs is: a gateway's /mnt/ID and a `mount
// --server` serve their callers through one, so what it adds (nodes that
// keep their path, handles that reopen) must keep the contract whole.
func TestConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		d, err := diskfs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		link := &Link{Root: d.Root()}
		return New(Options{Where: "/mnt/test", Current: func() *Link { return link }}).Root()
	})
}
