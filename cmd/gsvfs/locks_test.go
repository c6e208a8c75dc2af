//go:build linux

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPosixLocksLikeExt4 checks fcntl record locks on the mount against the
// same calls on the native disk. go-fuse's posixtest FcntlFlockLocksFile
// expects a second descriptor of the same process to conflict, which ext4
// itself does not do (POSIX locks belong to the process), so gsvfs is held
// to the native result instead.
func TestPosixLocksLikeExt4(t *testing.T) {
	likeNative(t, "lock results", lockSequence)
}

// lockSequence takes a write lock on one descriptor, then tries a read
// lock on a second one, and also flock(2) on both; it returns the errnos.
func lockSequence(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "lockfile")
	f1, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	var out []byte
	note := func(err error) {
		if err == nil {
			out = append(out, "ok "...)
		} else {
			out = append(out, err.Error()+" "...)
		}
	}
	note(syscall.FcntlFlock(f1.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}))
	note(syscall.FcntlFlock(f2.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_RDLCK}))
	note(syscall.Flock(int(f1.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	note(syscall.Flock(int(f2.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	return string(out)
}
