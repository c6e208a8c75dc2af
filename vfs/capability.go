package vfs

import (
	"context"
	"syscall"
)

// A node's optional abilities are interfaces (Symlinker, Linker, Mknoder,
// StatFSer, ...). What a node that lacks one means is decided here, once,
// in the style of io/fs's fs.Stat: each helper asserts the ability and
// falls back to one documented answer, so every edge and every wrapper
// of the tree says the same thing of the same node.

// Symlink makes the symlink name, holding target, in dir. A directory
// that cannot make symlinks refuses with EPERM, as symlink(2) does on a
// filesystem that has none.
func Symlink(ctx context.Context, dir Node, name, target string) (Node, error) {
	s, ok := dir.(Symlinker)
	if !ok {
		return nil, Error("symlink", name, syscall.EPERM)
	}
	return s.Symlink(ctx, name, target)
}

// Link makes name in dir a hard link to target. A directory that cannot
// make hard links refuses with EPERM, as link(2) does on a filesystem
// without them.
func Link(ctx context.Context, dir, target Node, name string) (Node, error) {
	l, ok := dir.(Linker)
	if !ok {
		return nil, Error("link", name, syscall.EPERM)
	}
	return l.Link(ctx, target, name)
}

// Mknod makes the device node, FIFO or socket name in dir. A directory
// that cannot make them refuses with EPERM, as mknod(2) does where the
// filesystem does not support the node.
func Mknod(ctx context.Context, dir Node, name string, mode uint32, rdev uint64) (Node, error) {
	m, ok := dir.(Mknoder)
	if !ok {
		return nil, Error("mknod", name, syscall.EPERM)
	}
	return m.Mknod(ctx, name, mode, rdev)
}

// NoCapacity is what a node that cannot report a filesystem (a synthetic
// tree) reports: no blocks and no files, 4 KiB blocks and 255-byte names,
// so df and statvfs(3) get sane figures.
var NoCapacity = StatFS{Bsize: 4096, Frsize: 4096, NameLen: 255}

// StatFSOf reports the filesystem holding n: its StatFS, or NoCapacity
// for a node without one.
func StatFSOf(ctx context.Context, n Node) (StatFS, error) {
	s, ok := n.(StatFSer)
	if !ok {
		return NoCapacity, nil
	}
	return s.StatFS(ctx)
}

// Sync flushes what h has written to stable storage. A handle without
// Syncer has nothing of its own to flush, so its fsync(2) succeeds.
func Sync(ctx context.Context, h Handle) error {
	s, ok := h.(Syncer)
	if !ok {
		return nil
	}
	return s.Sync(ctx)
}
