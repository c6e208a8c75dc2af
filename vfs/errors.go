package vfs

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"syscall"
)

// Error returns a *fs.PathError for operation op on path caused by errno,
// the one shape of error gsvfs code produces.
func Error(op, path string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: path, Err: errno}
}

// Errno maps any error to the errno an edge sends to its client. nil maps
// to 0. It never looks at error strings: it unwraps to a syscall.Errno, an
// fs.Err… sentinel or a context error, and falls back to EIO.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT
	}
	return syscall.EIO
}

// ValidName reports whether name is a single path element that a directory
// method may receive. Anything else is refused before it reaches a backend,
// so no name can climb out of its directory.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." &&
		!strings.ContainsAny(name, "/\x00") && len(name) <= 255
}

// CheckName returns an EINVAL error for op unless name is a ValidName.
// ".." is refused with EACCES: it is an escape attempt, not a typo.
func CheckName(op, name string) error {
	if ValidName(name) {
		return nil
	}
	if name == ".." {
		return Error(op, name, syscall.EACCES)
	}
	if len(name) > 255 {
		return Error(op, name, syscall.ENAMETOOLONG)
	}
	return Error(op, name, syscall.EINVAL)
}

// Reason is an error whose message is for people (a session's lastError,
// why a ctl line was refused) and whose errno is for the edges.
func Reason(errno syscall.Errno, msg string) error { return &reasonError{msg, errno} }

type reasonError struct {
	msg   string
	errno syscall.Errno
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.errno }
