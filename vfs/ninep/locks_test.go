//go:build linux

package ninep

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// lockFile serves a directory holding one file, f, and returns the
// server's address and the file's host path.
func lockFile(t *testing.T) (Address, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serve(t, d.Root())
	return addr, filepath.Join(dir, "f")
}

// openLocking opens f over a connection of its own with opts.
func openLocking(t *testing.T, addr Address, opts ClientOptions) vfs.Locker {
	t.Helper()
	_, root := dialWith(t, addr, "", opts)
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h.(vfs.Locker)
}

// lockReq is a request of cmd for a lock of typ on bytes start..end.
func lockReq(cmd vfs.LockCmd, typ vfs.LockType, start, end uint64) vfs.LockRequest {
	return vfs.LockRequest{Cmd: cmd, Owner: vfs.LockOwner{Client: "test", ID: 1},
		Lock: vfs.Lock{Type: typ, Start: start, End: end}}
}

// hostLock is the lock F_GETLK finds on the host file at path for a
// write lock of the whole file, as a process outside gsvfs sees it.
func hostLock(t *testing.T, path string) int16 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &fl); err != nil {
		t.Fatal(err)
	}
	return fl.Type
}

// Tlock and Tgetlock through the server are the kernel's locks on the
// backing file: another connection's conflicting lock fails (or is
// reported by Tgetlock), the host sees the lock, and a clunk drops it.
func TestTlockTgetlockOnDisk(t *testing.T) {
	addr, host := lockFile(t)
	a := openLocking(t, addr, ClientOptions{})
	b := openLocking(t, addr, ClientOptions{})
	ctx := context.Background()
	if _, err := a.Lock(ctx, lockReq(vfs.LockSet, vfs.LockWrite, 0, 9)); err != nil {
		t.Fatalf("a's write lock: %v", err)
	}
	got, err := b.Lock(ctx, lockReq(vfs.LockTest, vfs.LockRead, 5, 5))
	if err != nil || got.Type != vfs.LockWrite || got.Start != 0 || got.End != 9 {
		t.Errorf("b's getlock of byte 5: %+v, %v; want a write lock on 0-9", got, err)
	}
	if got, err := b.Lock(ctx, lockReq(vfs.LockTest, vfs.LockWrite, 10, vfs.LockEOF)); err != nil || got.Type != vfs.LockUnlock {
		t.Errorf("b's getlock past a's lock: %+v, %v; want none", got, err)
	}
	if _, err := b.Lock(ctx, lockReq(vfs.LockSet, vfs.LockRead, 0, 0)); vfs.Errno(err) != syscall.EAGAIN {
		t.Errorf("b's read lock on a's write lock: %v, want EAGAIN", err)
	}
	if typ := hostLock(t, host); typ != syscall.F_WRLCK {
		t.Errorf("F_GETLK on the host file: type %d, want F_WRLCK (%d)", typ, syscall.F_WRLCK)
	}
	if _, err := b.Lock(ctx, lockReq(vfs.LockSet, vfs.LockRead, 10, 19)); err != nil {
		t.Errorf("b's read lock beside a's: %v", err)
	}
	// a's handle closes: its fid is clunked and its lock goes.
	if err := a.(vfs.Handle).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, lockReq(vfs.LockSet, vfs.LockWrite, 0, 9)); err != nil {
		t.Errorf("b's write lock once a closed: %v", err)
	}
}

// A blocking lock waits as long as the lock is held, past the client's
// bound on a call's wait (CallWait), and gets it once it is let go: a
// device file's F_SETLKW or flock(LOCK_EX) waits as on a local file.
func TestBlockingTlockOutwaitsCallWait(t *testing.T) {
	addr, _ := lockFile(t)
	const callWait = 50 * time.Millisecond
	a := openLocking(t, addr, ClientOptions{})
	b := openLocking(t, addr, ClientOptions{Limits: ClientLimits{CallWait: callWait}})
	ctx := context.Background()
	if _, err := a.Lock(ctx, lockReq(vfs.LockSet, vfs.LockWrite, 0, vfs.LockEOF)); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx, lockReq(vfs.LockWait, vfs.LockWrite, 0, vfs.LockEOF))
		res <- err
	}()
	// A call bounded by CallWait would have failed many times over by
	// now; the wait proves nothing but the absence of that failure.
	select {
	case err := <-res:
		t.Fatalf("a blocking lock on a held lock returned %v, want it to wait", err)
	case <-time.After(20 * callWait):
	}
	if _, err := a.Lock(ctx, lockReq(vfs.LockSet, vfs.LockUnlock, 0, vfs.LockEOF)); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "a blocking lock once the lock is let go", func() error { return <-res }); err != nil {
		t.Errorf("blocking lock: %v, want it taken", err)
	}
}
