package diskfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// hostTry takes and drops a POSIX write lock on the whole of path with a
// descriptor of its own, as a host process would, and returns the error.
func hostTry(t *testing.T, path string) error {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	lk.Type = unix.F_UNLCK
	unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	return err
}

func openLocker(t *testing.T, root vfs.Node, name string) vfs.Locker {
	t.Helper()
	n, err := root.Lookup(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(context.Background(), os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	l, ok := h.(vfs.Locker)
	if !ok {
		t.Fatal("a disk file's handle is no vfs.Locker")
	}
	return l
}

// An owner's record locks are kernel locks on the file wherever the owner
// took them: they block a host process until the owner unlocks, closes a
// descriptor (LockFlush) or every handle it locked through closes.
func TestLockOwnersAreKernelLocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newFS(t, dir)
	ctx := context.Background()
	h1, h2 := openLocker(t, root, "f"), openLocker(t, root, "f")
	owner := vfs.LockOwner{Edge: "test", ID: 1}
	set := func(h vfs.Locker, typ vfs.LockType, start, end uint64) error {
		_, err := h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Owner: owner, Lock: vfs.Lock{Type: typ, Start: start, End: end}})
		return err
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	blocked := func(what string, want bool) {
		t.Helper()
		if err := hostTry(t, path); (err != nil) != want {
			t.Fatalf("%s: host lock got %v, want blocked %v", what, err, want)
		}
	}
	must("lock through h1", set(h1, vfs.LockWrite, 0, 9))
	must("lock through h2", set(h2, vfs.LockRead, 20, vfs.LockEOF))
	blocked("while the owner holds locks", true)
	h1.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	blocked("after one handle it locked through closed", true)
	h2.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	blocked("after both closed", false)

	must("lock again", set(h1, vfs.LockWrite, 0, 0))
	h2.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockFlush, Owner: owner})
	blocked("after the owner closed a descriptor", false)

	must("lock again", set(h1, vfs.LockWrite, 0, 0))
	must("unlock everything", set(h2, vfs.LockUnlock, 0, vfs.LockEOF))
	blocked("after the owner unlocked everything", false)
	if n := diskfs.LockFilesHeld(); n != 0 {
		t.Errorf("%d descriptions held after every lock went", n)
	}
}

// One edge's owners hold at most MaxEdgeLockFiles descriptions; another
// edge is not affected, and the descriptions go with the locks.
func TestLockOwnersBounded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := openLocker(t, newFS(t, dir), "f")
	ctx := context.Background()
	read := func(edge string, id uint64) error {
		_, err := h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Owner: vfs.LockOwner{Edge: edge, ID: id},
			Lock: vfs.Lock{Type: vfs.LockRead, End: vfs.LockEOF}})
		return err
	}
	for i := range diskfs.MaxEdgeLockFiles {
		if err := read("rogue", uint64(i)); err != nil {
			t.Fatalf("owner %d: %v", i, err)
		}
	}
	if err := read("rogue", diskfs.MaxEdgeLockFiles); !errors.Is(err, syscall.ENOLCK) {
		t.Errorf("an owner past the bound: %v, want ENOLCK", err)
	}
	if err := read("fair", 1); err != nil {
		t.Errorf("another edge's owner: %v", err)
	}
	h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	if n := diskfs.LockFilesHeld(); n != 0 {
		t.Errorf("%d descriptions held after the handle closed", n)
	}
}
