package diskfs

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// BenchmarkLockWithWaiters is a lock and unlock of one file while 2,000
// requests wait for another file's lock, held by a host process (this
// process's POSIX lock, which the owners' OFD locks conflict with): what
// blocked F_SETLKW callers cost everyone else's locks.
func BenchmarkLockWithWaiters(b *testing.B) {
	dir := b.TempDir()
	for _, name := range []string{"held", "free"} {
		if err := os.WriteFile(dir+"/"+name, []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := New(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	open := func(name string) vfs.Locker {
		n, err := f.Root().Lookup(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		h, err := n.Open(ctx, os.O_RDWR)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		return h.(vfs.Locker)
	}
	held, free := open("held"), open("free")
	host, err := os.OpenFile(dir+"/held", os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	if err := unix.FcntlFlock(host.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK}); err != nil {
		b.Fatal(err)
	}
	req := func(cmd vfs.LockCmd, id uint64, typ vfs.LockType) vfs.LockRequest {
		return vfs.LockRequest{Cmd: cmd, Owner: vfs.LockOwner{Edge: "bench", ID: id}, Lock: vfs.Lock{Type: typ, End: vfs.LockEOF}}
	}
	const waiters = 2000
	done := make(chan struct{}, waiters)
	for i := range waiters {
		go func() {
			held.Lock(ctx, req(vfs.LockWait, uint64(i+1), vfs.LockWrite))
			done <- struct{}{}
		}()
	}
	time.Sleep(time.Second) // the waiters settle into their polls
	for b.Loop() {
		if _, err := free.Lock(ctx, req(vfs.LockSet, 0, vfs.LockWrite)); err != nil {
			b.Fatal(err)
		}
		if _, err := free.Lock(ctx, req(vfs.LockSet, 0, vfs.LockUnlock)); err != nil {
			b.Fatal(err)
		}
	}
	cancel()
	for range waiters {
		<-done
	}
}
