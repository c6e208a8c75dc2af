package mounts

import (
	"context"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// BenchmarkLookupThroughNamespace walks /etc/man/page.1 and stats it: the
// namespace's share of a walk across two mounts.
func BenchmarkLookupThroughNamespace(b *testing.B) {
	tab := New()
	tab.Mount("/etc", vfs.NewStaticDir(nil))
	tab.Mount("/etc/man", vfs.NewStaticDir(map[string]vfs.Node{"page.1": vfs.NewTextFile([]byte("roff"))}))
	root := tab.Root()
	ctx := context.Background()
	for b.Loop() {
		n := root
		for _, name := range []string{"etc", "man", "page.1"} {
			var err error
			if n, err = n.Lookup(ctx, name); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := n.Attr(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
