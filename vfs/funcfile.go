package vfs

import (
	"context"
	"os"
	"syscall"
)

// FuncFile is a file whose content is computed at each read and write: a
// device-like endpoint such as /dev/null or /dev/zero. It is volatile (no
// caching, direct I/O), its size is 0, truncation is accepted and
// ignored, and each open gets the handle open returns.
type FuncFile struct {
	Leaf
	ino  uint64
	mode uint32
	open func(ctx context.Context, flags int) (Handle, error)
}

// NewFuncFile returns a file of permission bits mode whose opens are
// served by open.
func NewFuncFile(mode uint32, open func(ctx context.Context, flags int) (Handle, error)) *FuncFile {
	return &FuncFile{ino: NewIno(), mode: mode, open: open}
}

// Quick reports that the file answers from memory (Quick).
func (f *FuncFile) Quick() bool { return true }

func (f *FuncFile) Attr(context.Context) (Attr, error) {
	return Attr{Ino: f.ino, Mode: syscall.S_IFREG | f.mode, Nlink: 1,
		Atime: bootTime, Mtime: bootTime, Ctime: bootTime, Volatile: true}, nil
}

// SetAttr accepts a truncation, which `>` asks for, and times, and
// refuses the rest.
func (f *FuncFile) SetAttr(ctx context.Context, s SetAttr) (Attr, error) {
	if s.Valid&^(SetSize|SetAtime|SetMtime|SetAtimeNow|SetMtimeNow) != 0 {
		return Attr{}, Error("setattr", "", syscall.EPERM)
	}
	return f.Attr(ctx)
}

func (f *FuncFile) Open(ctx context.Context, flags int) (Handle, error) {
	acc := flags & (os.O_WRONLY | os.O_RDWR)
	if acc != os.O_WRONLY && f.mode&0o444 == 0 || acc != os.O_RDONLY && f.mode&0o222 == 0 {
		return nil, Error("open", "", syscall.EACCES)
	}
	return f.open(ctx, flags)
}

// FuncHandle is a handle of plain functions, for FuncFile: nil Read or
// Write fails with EBADF.
type FuncHandle struct {
	Read  func(ctx context.Context, p []byte, off int64) (int, error)
	Write func(ctx context.Context, p []byte, off int64) (int, error)
	Done  func() error // at Close, if set
}

// Opener returns an open function that gives every open h.
func (h FuncHandle) Opener() func(context.Context, int) (Handle, error) {
	return func(context.Context, int) (Handle, error) { return h, nil }
}

func (h FuncHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if h.Read == nil {
		return 0, Error("read", "", syscall.EBADF)
	}
	return h.Read(ctx, p, off)
}

func (h FuncHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	if h.Write == nil {
		return 0, Error("write", "", syscall.EBADF)
	}
	return h.Write(ctx, p, off)
}

func (h FuncHandle) Close() error {
	if h.Done != nil {
		return h.Done()
	}
	return nil
}

// NewSnapshotFile returns a read-only file (mode 0444) whose content gen
// makes at each open: a consistent snapshot for the life of that open,
// never made again per read.
func NewSnapshotFile(gen func(ctx context.Context) []byte) *FuncFile {
	return NewFuncFile(0o444, func(ctx context.Context, _ int) (Handle, error) {
		return BytesHandle(gen(ctx)), nil
	})
}
