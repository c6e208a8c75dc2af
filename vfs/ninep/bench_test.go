package ninep

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// The Go benchmarks run gsvfs's client against gsvfs's server over a unix
// socket on a diskfs tree: the cost of the protocol layer itself.
// bench/ninepbench.sh compares the server with diod using a neutral client.

func benchRoot(b *testing.B) vfs.Node { return benchRootWith(b, ClientOptions{}) }

func benchRootWith(b *testing.B, opts ClientOptions) vfs.Node {
	_, addr := serve(b, newDisk(b))
	_, root := dialWith(b, addr, "", opts)
	return root
}

// BenchmarkWalkGetattr is a stat: walk one name, getattr, clunk.
func BenchmarkWalkGetattr(b *testing.B) { benchWalkGetattr(b, ClientOptions{}) }

// BenchmarkWalkGetattrCallWait is the stat with each call bounded, as on
// a gateway's links to devices.
func BenchmarkWalkGetattrCallWait(b *testing.B) {
	benchWalkGetattr(b, ClientOptions{Limits: ClientLimits{CallWait: 15 * time.Second}})
}

func benchWalkGetattr(b *testing.B, opts ClientOptions) {
	root := benchRootWith(b, opts)
	ctx := context.Background()
	const files = 100
	createFiles(b, root, files, "f%d")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n, err := root.Lookup(ctx, fmt.Sprintf("f%d", i%files))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := n.Attr(ctx); err != nil {
			b.Fatal(err)
		}
		n.(vfs.Forgetter).Forget()
	}
}

// createFiles makes n empty files in dir, named by format and a number.
func createFiles(b *testing.B, dir vfs.Node, n int, format string) {
	for i := range n {
		_, h, err := dir.Create(context.Background(), fmt.Sprintf(format, i), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}

func benchIO(b *testing.B, write bool) {
	root := benchRoot(b)
	ctx := context.Background()
	_, h, err := root.Create(ctx, "data", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	buf := make([]byte, 1<<20)
	const span = 64 << 20
	for off := int64(0); off < span; off += int64(len(buf)) {
		if _, err := h.WriteAt(ctx, buf, off); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		off := int64(i) * int64(len(buf)) % span
		if write {
			_, err = h.WriteAt(ctx, buf, off)
		} else {
			_, err = h.ReadAt(ctx, buf, off)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead1M reads 1 MiB blocks of a page-cached file.
func BenchmarkRead1M(b *testing.B) { benchIO(b, false) }

// BenchmarkWrite1M writes 1 MiB blocks.
func BenchmarkWrite1M(b *testing.B) { benchIO(b, true) }

// BenchmarkReadDir lists a directory of 1000 files whole, as `ls` does.
func BenchmarkReadDir(b *testing.B) {
	root := benchRoot(b)
	ctx := context.Background()
	dir, err := root.Mkdir(ctx, "d", 0o755)
	if err != nil {
		b.Fatal(err)
	}
	const files = 1000
	createFiles(b, dir, files, "file-%04d")
	for b.Loop() {
		ents, err := vfs.ReadDirAll(ctx, dir)
		if err != nil || len(ents) != files {
			b.Fatalf("listing: %d entries, %v", len(ents), err)
		}
	}
}
