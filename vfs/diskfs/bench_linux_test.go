package diskfs

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// The cost of the backend alone, without an edge: what each FUSE or 9P
// request adds on top of its round trip.

func benchTree(b *testing.B, files int) vfs.Node {
	b.Helper()
	dir := b.TempDir()
	for i := range files {
		if err := os.WriteFile(fmt.Sprintf("%s/f%d", dir, i), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := New(dir)
	if err != nil {
		b.Fatal(err)
	}
	return f.Root()
}

// BenchmarkLookupAttr is a walk plus stat: what `ls -l` and readdirplus do
// per entry.
func BenchmarkLookupAttr(b *testing.B) {
	root := benchTree(b, 1000)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		n, err := root.Lookup(ctx, fmt.Sprintf("f%d", i%1000))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := n.Attr(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateRemove makes, writes, closes and removes a file.
func BenchmarkCreateRemove(b *testing.B) {
	root := benchTree(b, 0)
	ctx := context.Background()
	data := []byte("hello")
	for b.Loop() {
		_, h, err := root.Create(ctx, "f", os.O_RDWR|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		h.WriteAt(ctx, data, 0)
		h.Close()
		if err := root.Remove(ctx, "f", false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadDir lists a directory of 1,000 entries.
func BenchmarkReadDir(b *testing.B) {
	root := benchTree(b, 1000)
	ctx := context.Background()
	for b.Loop() {
		h, err := root.Open(ctx, os.O_RDONLY)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for off := uint64(0); ; {
			es, err := h.(vfs.DirReader).ReadDir(ctx, off)
			if err != nil {
				b.Fatal(err)
			}
			if len(es) == 0 {
				break
			}
			n += len(es)
			off = es[len(es)-1].Next
		}
		h.Close()
		if n != 1000 {
			b.Fatalf("listed %d entries, want 1000", n)
		}
	}
}
