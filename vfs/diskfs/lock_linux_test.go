package diskfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/testenv"
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

// treeWithF is a tree of a new directory holding one file, f.
func treeWithF(t *testing.T) vfs.Node {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	return newFS(t, dir)
}

// openLocker opens name under root (read and write unless mode says
// otherwise) and closes it when the test ends.
func openLocker(t *testing.T, root vfs.Node, name string, mode ...int) vfs.Locker {
	t.Helper()
	n, err := root.Lookup(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(context.Background(), append(mode, os.O_RDWR)[0])
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

// Each account holds at most its limit of descriptions, however many
// owners it brings; another account of the same edge and an account with
// no limit (root's) are not affected, and the descriptions go with the
// locks.
func TestLockOwnersBounded(t *testing.T) {
	h := openLocker(t, treeWithF(t), "f")
	ctx := context.Background()
	const limit = 8
	read := func(uid int, limit int, id uint64) error {
		_, err := h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Owner: vfs.LockOwner{Edge: "mount", ID: id},
			Account: vfs.LockAccount{Who: uid, Limit: limit}, Lock: vfs.Lock{Type: vfs.LockRead, End: vfs.LockEOF}})
		return err
	}
	for i := range limit {
		if err := read(1000, limit, uint64(i)); err != nil {
			t.Fatalf("owner %d: %v", i, err)
		}
	}
	if err := read(1000, limit, limit); !errors.Is(err, syscall.ENOLCK) {
		t.Errorf("an owner past the account's limit: %v, want ENOLCK", err)
	}
	if err := read(1001, limit, 100); err != nil {
		t.Errorf("another user's owner on the same edge: %v", err)
	}
	if err := read(0, 0, 101); err != nil {
		t.Errorf("root's owner: %v", err)
	}
	h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	if n := diskfs.LockFilesHeld(); n != 0 {
		t.Errorf("%d descriptions held after the handle closed", n)
	}
}

// The accounts with a limit together hold at most the daemon's bound of
// descriptions (a quarter of its descriptor limit), each within its own
// limit; root's account, with none, still locks past it.
func TestLockOwnersBoundedTogether(t *testing.T) {
	diskfs.SetMaxLockFiles(t, 6)
	h := openLocker(t, treeWithF(t), "f")
	ctx := context.Background()
	read := func(uid int, limit int, id uint64) error {
		_, err := h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Owner: vfs.LockOwner{Edge: "mount", ID: id},
			Account: vfs.LockAccount{Who: uid, Limit: limit}, Lock: vfs.Lock{Type: vfs.LockRead, End: vfs.LockEOF}})
		return err
	}
	for i := range 6 {
		if err := read(1000+i/3, 4, uint64(i)); err != nil { // two users, three owners each
			t.Fatalf("owner %d: %v", i, err)
		}
	}
	if err := read(1002, 4, 6); !errors.Is(err, syscall.ENOLCK) {
		t.Errorf("a third user's owner past the daemon's bound: %v, want ENOLCK", err)
	}
	if err := read(0, 0, 7); err != nil {
		t.Errorf("root's owner past the daemon's bound: %v", err)
	}
	h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	if err := read(1002, 4, 6); err != nil {
		t.Errorf("once the others' locks went: %v", err)
	}
	h.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
}

// A waiter gets the lock when an owner of the daemon lets go of it, at
// once: with the poll for host processes' locks stretched to an hour, only
// the wake of the unlock can free it (before, a waiter only polled). Its
// record lock and its flock both.
func TestLockWaiterWokenByUnlock(t *testing.T) {
	diskfs.SetHostPoll(t, time.Hour)
	root := treeWithF(t)
	h1, h2 := openLocker(t, root, "f"), openLocker(t, root, "f")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, flock := range []bool{false, true} {
		req := func(cmd vfs.LockCmd, id uint64, typ vfs.LockType) vfs.LockRequest {
			return vfs.LockRequest{Cmd: cmd, Flock: flock, Owner: vfs.LockOwner{Edge: "test", ID: id},
				Lock: vfs.Lock{Type: typ, End: vfs.LockEOF}}
		}
		if _, err := h1.Lock(ctx, req(vfs.LockSet, 1, vfs.LockWrite)); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { _, err := h2.Lock(ctx, req(vfs.LockWait, 2, vfs.LockWrite)); got <- err }()
		testenv.WaitFor(t, time.Minute, "the waiter finding the lock taken", func() bool { return diskfs.LockWaiting() > 0 })
		if _, err := h1.Lock(ctx, req(vfs.LockSet, 1, vfs.LockUnlock)); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("flock %v: the waiter after the unlock: %v", flock, err)
		}
		h2.Lock(ctx, req(vfs.LockSet, 2, vfs.LockUnlock))
	}
}

// Many owners taking turns with blocking write locks on one file exclude
// each other, and every unlock wakes a waiter: with the poll for host
// processes' locks stretched to an hour, a lost wake would leave the rest
// waiting forever. Record locks and flock both.
func TestLockWaitersTakeTurns(t *testing.T) {
	diskfs.SetHostPoll(t, time.Hour)
	root := treeWithF(t)
	ctx := context.Background()
	for _, flock := range []bool{false, true} {
		var inside atomic.Int32
		errs := make(chan error, 16)
		for g := range 16 {
			h := openLocker(t, root, "f") // flock's locks are the open's
			go func() {
				req := func(cmd vfs.LockCmd, typ vfs.LockType) vfs.LockRequest {
					return vfs.LockRequest{Cmd: cmd, Flock: flock, Owner: vfs.LockOwner{Edge: "test", ID: uint64(g)},
						Lock: vfs.Lock{Type: typ, End: vfs.LockEOF}}
				}
				for range 50 {
					if _, err := h.Lock(ctx, req(vfs.LockWait, vfs.LockWrite)); err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						errs <- errors.New("two owners held the write lock at once")
						return
					}
					inside.Add(-1)
					if _, err := h.Lock(ctx, req(vfs.LockSet, vfs.LockUnlock)); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Fatalf("flock %v: %v", flock, err)
			}
		}
	}
	if n := diskfs.LockFilesHeld(); n != 0 {
		t.Errorf("%d descriptions held after every lock went", n)
	}
}
