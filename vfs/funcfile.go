package vfs

import (
	"context"
	"syscall"
)

// FuncFile is a file whose content is computed at each read and write: a
// device-like endpoint such as /dev/null or /dev/zero, or a snapshot. It
// is volatile (no caching, direct I/O), its size is 0, and each open the
// mode allows gets the handle open returns. Its attributes and refusals
// are FileAttrs'; an embedder may change them (owner, Stat) before use.
type FuncFile struct {
	Leaf
	FileAttrs
	open func(ctx context.Context, flags int) (Handle, error)
}

// NewFuncFile returns a file of permission bits mode whose opens are
// served by open.
func NewFuncFile(mode uint32, open func(ctx context.Context, flags int) (Handle, error)) *FuncFile {
	return &FuncFile{open: open, FileAttrs: FileAttrs{Ino: NewIno(), Mode: syscall.S_IFREG | mode,
		Time: bootTime, Volatile: true}}
}

// Open checks flags against the mode and calls the file's open.
func (f *FuncFile) Open(ctx context.Context, flags int) (Handle, error) {
	if err := f.CheckOpen(flags); err != nil {
		return nil, err
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
