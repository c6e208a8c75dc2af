package diskfs_test

import (
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

func TestConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		f, err := diskfs.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return f.Root()
	})
}
