package vfs

import (
	"context"
	"os"
	"syscall"
	"time"
)

// A synthetic file (one whose content the daemon makes: /proc, /sys, /dev,
// the manual pages) is built from parts it embeds, each answering one
// concern with one errno per kind of refusal:
//
//   - FileAttrs: its attributes, the check of an open against its mode,
//     and SetAttr;
//   - Leaf: the directory operations, which a file refuses with ENOTDIR;
//   - ReadOnly, for a directory whose names nobody may change: its
//     changes fail with EROFS.
//
// The embedder writes Open alone, calling
// FileAttrs.CheckOpen first. TextFile and FuncFile are such files, ready
// made; example_test.go shows a file built from the parts in a few lines.

// FileAttrs is the attributes part of a synthetic file: its inode number,
// mode, owner and times, kept in one place with the checks that depend on
// them. Its zero Time means now, for a file whose content changes
// whenever it is read.
//
// Its refusals:
//   - an open against the mode (reading without a read bit, writing or
//     O_TRUNC without a write bit): EACCES, what a kernel says of a mode;
//   - a change of attributes the file does not take: EPERM. It takes
//     what a shell or editor does to a file before writing it, and
//     ignores it: new times, and the truncation to 0 of `>` on a file
//     with a write bit. A change of mode, owner or any other size is
//     refused;
//   - with ReadOnlyTree set, every open for writing and every change of
//     attributes: EROFS, what a read-only mount says, before the mode is
//     looked at. Only a file of a tree nobody may change sets it.
type FileAttrs struct {
	Ino      uint64
	Mode     uint32 // the file type and permission bits
	Rdev     uint64 // the device number of a device node, as the host packs it
	Uid, Gid uint32
	Blksize  uint32
	Time     time.Time // atime, mtime and ctime; zero for now
	// Volatile tells the edges not to cache the file (Attr.Volatile).
	Volatile bool
	// Stat, if set, reports the content's size and last change, which
	// give the file's size, blocks, mtime and ctime; without it the
	// size is 0, as a generated file's is in Linux's procfs.
	Stat func() (size int64, mtime time.Time)
	// ReadOnlyTree makes every write and change fail with EROFS.
	ReadOnlyTree bool
}

// Quick reports that the attributes are in memory (Quick).
func (a FileAttrs) Quick() bool { return true }

// Attr reports the attributes.
func (a FileAttrs) Attr(context.Context) (Attr, error) {
	t := a.Time
	if t.IsZero() {
		t = time.Now()
	}
	// Fixed: with set times and no Stat nothing here ever changes (the
	// size is 0; SetAttr changes nothing).
	out := Attr{Ino: a.Ino, Mode: a.Mode, Nlink: 1, Uid: a.Uid, Gid: a.Gid, Rdev: a.Rdev, Blksize: a.Blksize,
		Atime: t, Mtime: t, Ctime: t, Volatile: a.Volatile, Fixed: a.Stat == nil && !a.Time.IsZero()}
	if a.Stat != nil {
		out.Size, out.Mtime = a.Stat()
		out.Ctime = out.Mtime
		out.Blocks = (out.Size + 511) / 512
	}
	return out, nil
}

// SetAttr accepts the changes a shell makes before writing and refuses
// the rest (see FileAttrs); it changes nothing.
func (a FileAttrs) SetAttr(ctx context.Context, s SetAttr) (Attr, error) {
	if err := a.checkSetAttr(s); err != nil {
		return Attr{}, err
	}
	return a.Attr(ctx)
}

// touched is what SetAttr takes of any file: times, and the dropping of
// set-ID bits that a write asks for (a synthetic file has none).
const touched = SetAtime | SetMtime | SetAtimeNow | SetMtimeNow | SetClearSetID

func (a FileAttrs) checkSetAttr(s SetAttr) error {
	if a.ReadOnlyTree {
		return Error("setattr", "", syscall.EROFS)
	}
	allowed := touched
	if a.writable() && s.Size == 0 {
		allowed |= SetSize
	}
	if s.Valid&^allowed != 0 {
		return Error("setattr", "", syscall.EPERM)
	}
	return nil
}

// CheckOpen refuses an open with flags that the mode does not allow,
// whoever asks (see FileAttrs). O_TRUNC counts as writing, as it does
// for open(2).
func (a FileAttrs) CheckOpen(flags int) error {
	acc := flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	reads := acc != os.O_WRONLY
	writes := acc != os.O_RDONLY || flags&os.O_TRUNC != 0
	switch {
	case writes && a.ReadOnlyTree:
		return Error("open", "", syscall.EROFS)
	case reads && a.Mode&0o444 == 0, writes && !a.writable():
		return Error("open", "", syscall.EACCES)
	}
	return nil
}

func (a FileAttrs) writable() bool { return a.Mode&0o222 != 0 }
