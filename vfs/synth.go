package vfs

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Synthetic inode numbers start high so they never meet a host inode of a
// disk tree mounted beside them before the namespace folds them anyway.
var lastIno atomic.Uint64

func init() { lastIno.Store(1 << 47) }

// NewIno returns an inode number unique in this process, for a synthetic
// node. It stays the node's number for the daemon's life.
func NewIno() uint64 { return lastIno.Add(1) }

// InoTable gives each name of a dynamic directory an inode number of its
// own, the same for the daemon's life however often the name comes and
// goes. The zero value is ready to use.
type InoTable struct {
	mu   sync.Mutex
	inos map[string]uint64
}

// Of returns the inode number of name.
func (t *InoTable) Of(name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ino, ok := t.inos[name]
	if !ok {
		if t.inos == nil {
			t.inos = map[string]uint64{}
		}
		ino = NewIno()
		t.inos[name] = ino
	}
	return ino
}

// Walk looks rel (slash-separated names, "" for from itself) up from
// from, one name at a time, and gives back the nodes passed on the way
// (vfs.Forgetter), not from itself.
func Walk(ctx context.Context, from Node, rel string) (Node, error) {
	n := from
	if rel == "" {
		return n, nil
	}
	for name := range strings.SplitSeq(rel, "/") {
		next, err := n.Lookup(ctx, name)
		if n != from {
			if f, ok := n.(Forgetter); ok {
				f.Forget()
			}
		}
		if err != nil {
			return nil, err
		}
		n = next
	}
	return n, nil
}

// ReadDirAll lists the directory dir whole.
func ReadDirAll(ctx context.Context, dir Node) ([]DirEntry, error) {
	h, err := dir.Open(ctx, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	dr, ok := h.(DirReader)
	if !ok {
		return nil, Error("readdir", "", syscall.ENOTDIR)
	}
	var all []DirEntry
	for off := uint64(0); ; {
		ents, err := dr.ReadDir(ctx, off)
		if err != nil || len(ents) == 0 {
			return all, err
		}
		all = append(all, ents...)
		off = ents[len(ents)-1].Next
	}
}

// bootTime is the timestamp of built-in nodes: they were made at start.
var bootTime = time.Now()

// Leaf is the not-a-directory part of a synthetic node (see FileAttrs):
// its directory methods each fail with ENOTDIR. Synthetic files and
// symlinks embed it.
type Leaf struct{}

func (Leaf) Lookup(context.Context, string) (Node, error) {
	return nil, Error("lookup", "", syscall.ENOTDIR)
}

func (Leaf) Create(context.Context, string, int, uint32) (Node, Handle, error) {
	return nil, nil, Error("create", "", syscall.ENOTDIR)
}

func (Leaf) Mkdir(context.Context, string, uint32) (Node, error) {
	return nil, Error("mkdir", "", syscall.ENOTDIR)
}

func (Leaf) Remove(context.Context, string, bool) error {
	return Error("remove", "", syscall.ENOTDIR)
}

func (Leaf) Rename(context.Context, string, Node, string) error {
	return Error("rename", "", syscall.ENOTDIR)
}

// ReadOnly is the part of a synthetic directory whose names nobody may
// change (/dev, /sys, /proc's root, a device's directory), though its
// files may be written: its SetAttr and its changes of names each fail
// with EROFS. It leaves Lookup and Open to the embedder. A file of a tree
// nobody may change at all sets FileAttrs.ReadOnlyTree instead.
type ReadOnly struct{}

func (ReadOnly) SetAttr(context.Context, SetAttr) (Attr, error) {
	return Attr{}, Error("setattr", "", syscall.EROFS)
}

func (ReadOnly) Create(context.Context, string, int, uint32) (Node, Handle, error) {
	return nil, nil, Error("create", "", syscall.EROFS)
}

func (ReadOnly) Mkdir(context.Context, string, uint32) (Node, error) {
	return nil, Error("mkdir", "", syscall.EROFS)
}

func (ReadOnly) Remove(context.Context, string, bool) error {
	return Error("remove", "", syscall.EROFS)
}

func (ReadOnly) Rename(context.Context, string, Node, string) error {
	return Error("rename", "", syscall.EROFS)
}

// StaticDir is a read-only directory whose children are fixed when it is
// made, listed in name order.
type StaticDir struct {
	ReadOnly
	ino   uint64
	names []string
	kids  map[string]Node
}

// NewStaticDir returns a read-only directory holding children.
func NewStaticDir(children map[string]Node) *StaticDir {
	names := make([]string, 0, len(children))
	for name := range children {
		names = append(names, name)
	}
	slices.Sort(names)
	return &StaticDir{ino: NewIno(), names: names, kids: children}
}

// Attr reports a directory of mode 0555.
func (d *StaticDir) Attr(context.Context) (Attr, error) {
	return Attr{Ino: d.ino, Mode: syscall.S_IFDIR | 0o555, Nlink: 2,
		Atime: bootTime, Mtime: bootTime, Ctime: bootTime}, nil
}

// Quick reports that the directory is in memory (Quick).
func (d *StaticDir) Quick() bool { return true }

// Lookup finds a child by name.
func (d *StaticDir) Lookup(_ context.Context, name string) (Node, error) {
	if kid, ok := d.kids[name]; ok {
		return kid, nil
	}
	return nil, Error("lookup", name, syscall.ENOENT)
}

// Open returns a listing handle; the directory cannot be written.
func (d *StaticDir) Open(ctx context.Context, flags int) (Handle, error) {
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, Error("open", "", syscall.EISDIR)
	}
	entries := make([]DirEntry, len(d.names))
	for i, name := range d.names {
		a, err := d.kids[name].Attr(ctx)
		if err != nil {
			return nil, err
		}
		entries[i] = DirEntry{Name: name, Ino: a.Ino, Type: a.Type(), Next: uint64(i + 1)}
	}
	return ListHandle(entries), nil
}

// ListHandle is the handle of a directory whose whole listing is known at
// open: offsets are positions in the slice, so they stay stable for the
// handle's life.
type ListHandle []DirEntry

// ReadDir returns the entries from position off on.
func (l ListHandle) ReadDir(_ context.Context, off uint64) ([]DirEntry, error) {
	if off >= uint64(len(l)) {
		return nil, nil
	}
	return l[off:], nil
}

func (ListHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("read", "", syscall.EISDIR)
}

func (ListHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("write", "", syscall.EISDIR)
}

func (ListHandle) Close() error { return nil }

// TextFile is a file of constant content in a tree nobody may change
// (the manual pages): mode 0444, and every write and change fails with
// EROFS (FileAttrs.ReadOnlyTree).
type TextFile struct {
	Leaf
	FileAttrs
	data []byte
}

// NewTextFile returns a read-only file holding data.
func NewTextFile(data []byte) *TextFile {
	size := func() (int64, time.Time) { return int64(len(data)), bootTime }
	return &TextFile{data: data, FileAttrs: FileAttrs{Ino: NewIno(), Mode: syscall.S_IFREG | 0o444,
		Time: bootTime, Stat: size, ReadOnlyTree: true}}
}

// Open returns a reader of the content.
func (f *TextFile) Open(_ context.Context, flags int) (Handle, error) {
	if err := f.CheckOpen(flags); err != nil {
		return nil, err
	}
	return BytesHandle(f.data), nil
}

// BytesHandle is a read-only handle over a byte slice: the snapshot a
// generated file serves for the life of one open.
type BytesHandle []byte

// ReadAt copies from the snapshot.
func (b BytesHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, Error("read", "", syscall.EINVAL)
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	return copy(p, b[off:]), nil
}

// WriteAt refuses: a snapshot is read-only.
func (BytesHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, Error("write", "", syscall.EBADF)
}

// Close does nothing.
func (BytesHandle) Close() error { return nil }

// DotEntries is how many entries ReadDirDots lists before a directory's own.
const DotEntries = 2

// ReadDirDots reads a listing as clients of an edge expect it: "." and ".."
// first, then dr's entries, with offsets shifted to make room for the two.
// The dots' inode numbers are left 0 for the edge to fill in. The returned
// slice is the caller's to keep.
//
// A read from before the dots' end brings the first batch of entries with
// them, so a small directory is listed in one step (for a remote
// directory, one round trip); a failure of that batch is left for the
// next read, from the first entry, to report.
func ReadDirDots(ctx context.Context, dr DirReader, off uint64) ([]DirEntry, error) {
	if off >= DotEntries {
		return readDirShifted(ctx, dr, off, nil)
	}
	dots := []DirEntry{
		{Name: ".", Type: syscall.S_IFDIR, Next: 1},
		{Name: "..", Type: syscall.S_IFDIR, Next: DotEntries},
	}[off:]
	if out, err := readDirShifted(ctx, dr, DotEntries, dots); err == nil {
		return out, nil
	}
	return dots, nil
}

// readDirShifted appends to out the entries of dr from the edge's offset
// off, their offsets shifted past the dots.
func readDirShifted(ctx context.Context, dr DirReader, off uint64, out []DirEntry) ([]DirEntry, error) {
	entries, err := dr.ReadDir(ctx, UnshiftDirOffset(off, DotEntries))
	out = slices.Grow(out, len(entries))
	for _, e := range entries {
		e.Next = ShiftDirOffset(e.Next, DotEntries)
		out = append(out, e)
	}
	return out, err
}

// ReadAll reads the open file h from its start to its end, at most limit
// bytes: a longer file fails with EFBIG.
func ReadAll(ctx context.Context, h Handle, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.NewSectionReader(handleReader{ctx, h}, 0, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = Error("read", "", syscall.EFBIG)
	}
	return b, err
}

// handleReader is an open file as an io.ReaderAt. A read may come back
// short (a 9P reply is bounded by its msize); only nothing read is the end.
type handleReader struct {
	ctx context.Context
	h   Handle
}

func (r handleReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.h.ReadAt(r.ctx, p, off)
	if err == nil && n == 0 && len(p) > 0 {
		err = io.EOF
	}
	return n, err
}
