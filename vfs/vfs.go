// Package vfs is the centre of gsvfs: the one small interface every tree
// implements and every edge (FUSE, 9P) serves, in the spirit of the Plan 9
// kernel's device table.
//
// A tree is a graph of Nodes. A backend's constructor returns its root Node
// (the attach); Lookup walks one name at a time; Open yields a Handle for
// reading and writing. Rarer abilities — readlink, symlink, hard links,
// xattrs, statfs, fsync — are optional one-method (or one-concern)
// interfaces that an edge discovers with a type assertion, so a synthetic
// file stays a few lines long.
//
// Every method takes a context: edges cancel it when the client gives up
// (FUSE interrupt, 9P Tflush) and backends honour it wherever they block.
// Errors are *fs.PathError values wrapping a syscall.Errno or an fs.Err…
// sentinel; Errno maps any error to the errno both edges send.
//
// This package imports only the standard library.
package vfs

import (
	"context"
	"os"
	"syscall"
	"time"
)

// Node is one file, directory or symlink of a tree.
//
// Directory methods (Lookup, Create, Mkdir, Remove, Rename) return ENOTDIR
// on a node that is not a directory. Names passed to them are single path
// elements: never empty, never "." or "..", never containing '/'. Edges
// check that with ValidName before calling, and backends check again.
type Node interface {
	// Attr returns the node's current attributes (stat).
	Attr(ctx context.Context) (Attr, error)
	// SetAttr changes the attributes named in s.Valid (wstat) and returns
	// the attributes afterwards.
	SetAttr(ctx context.Context, s SetAttr) (Attr, error)
	// Lookup walks from a directory to its child called name.
	Lookup(ctx context.Context, name string) (Node, error)
	// Open opens the node with os.O_* flags. Opening a directory yields a
	// Handle that also implements DirReader.
	Open(ctx context.Context, flags int) (Handle, error)
	// Create makes a regular file called name in a directory and opens it.
	// With O_EXCL an existing name fails with EEXIST. The returned handle
	// may write even when mode forbids it, as open(2) allows.
	Create(ctx context.Context, name string, flags int, mode uint32) (Node, Handle, error)
	// Mkdir makes a directory called name.
	Mkdir(ctx context.Context, name string, mode uint32) (Node, error)
	// Remove unlinks the child called name; dir selects rmdir semantics.
	Remove(ctx context.Context, name string, dir bool) error
	// Rename moves the child oldName to newName in newDir, replacing an
	// existing target as rename(2) does. newDir comes from the same tree;
	// a node of another tree gets EXDEV.
	Rename(ctx context.Context, oldName string, newDir Node, newName string) error
}

// Handle is an open file or directory.
type Handle interface {
	// ReadAt reads at off, returning io.EOF (or fewer bytes) at the end.
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	// WriteAt writes at off. A handle opened with O_APPEND writes at the
	// end whatever off says.
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
	// Close releases the handle. It is called exactly once.
	Close() error
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Type uint32 // S_IFMT bits of the mode, or 0 when unknown
	// Next is the offset that resumes the listing just after this entry.
	Next uint64
	// Attr, when not nil, is the entry's full attributes, given by a
	// backend that had them at no extra cost (a 9P peer answering a
	// readdir with attributes), so that an edge or a cache can answer a
	// stat of each entry without asking again (FUSE READDIRPLUS, ls -l).
	// They are as of the listing. A layer that changes what Attr
	// returns (folding inode numbers) changes this too, or sets it nil.
	Attr *Attr
}

// DirReader is implemented by the handle of an open directory.
type DirReader interface {
	// ReadDir returns entries starting at offset off: 0 is the start,
	// any other value is a Next from an earlier entry of this handle.
	// Offsets stay valid while entries come and go. An empty slice and a
	// nil error mean the end.
	ReadDir(ctx context.Context, off uint64) ([]DirEntry, error)
}

// Readlinker is a symlink.
type Readlinker interface {
	Readlink(ctx context.Context) (string, error)
}

// AttrLookuper is a directory whose lookup can give the child's
// attributes in the same step, as a 9P peer that walks and stats in one
// round trip does. Edges that need both (FUSE's LOOKUP) call LookupAttr.
type AttrLookuper interface {
	LookupAttr(ctx context.Context, name string) (Node, Attr, error)
}

// LookupAttr looks name up in dir and stats it: in one step where dir is
// an AttrLookuper, else Lookup then Attr.
func LookupAttr(ctx context.Context, dir Node, name string) (Node, Attr, error) {
	if al, ok := dir.(AttrLookuper); ok {
		return al.LookupAttr(ctx, name)
	}
	n, err := dir.Lookup(ctx, name)
	if err != nil {
		return nil, Attr{}, err
	}
	a, err := n.Attr(ctx)
	if err != nil {
		return nil, Attr{}, err
	}
	return n, a, nil
}

// Symlinker is a directory that can make symlinks. Without it a
// directory refuses them with EPERM (Symlink).
type Symlinker interface {
	Symlink(ctx context.Context, name, target string) (Node, error)
}

// Linker is a directory that can make hard links to a node of its tree.
// Without it a directory refuses them with EPERM (Link).
type Linker interface {
	Link(ctx context.Context, target Node, name string) (Node, error)
}

// The flags of FlagRenamer, with renameat2(2)'s values.
const (
	RenameNoReplace = 1 << 0 // fail with EEXIST if newName exists
	RenameExchange  = 1 << 1 // swap oldName and newName atomically
	RenameWhiteout  = 1 << 2 // leave a whiteout at oldName (overlayfs)
)

// FlagRenamer is a directory whose renames take renameat2(2) flags.
// RenameFlags with flags 0 is Rename.
type FlagRenamer interface {
	RenameFlags(ctx context.Context, oldName string, newDir Node, newName string, flags uint32) error
}

// Mknoder is a directory that can make device nodes, FIFOs and sockets.
// Without it a directory refuses them with EPERM (Mknod).
type Mknoder interface {
	Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (Node, error)
}

// StatFSer reports the capacity of the filesystem holding a node.
// Without it a node reports NoCapacity (StatFSOf).
type StatFSer interface {
	StatFS(ctx context.Context) (StatFS, error)
}

// Xattrer is a node with extended attributes.
type Xattrer interface {
	GetXattr(ctx context.Context, name string) ([]byte, error)
	SetXattr(ctx context.Context, name string, value []byte, flags int) error
	ListXattr(ctx context.Context) ([]string, error)
	RemoveXattr(ctx context.Context, name string) error
}

// Forgetter is a node that keeps resources for as long as an edge refers
// to it. An edge calls Forget when it drops its last reference (the kernel
// forgets the FUSE inode; the last 9P fid is clunked), so a file removed
// while still referenced can let its space go.
type Forgetter interface {
	Forget()
}

// TempCreator is a directory that makes files with no name in it, as
// open(2) with O_TMPFILE does: the file lives while it is open and gets a
// name only through a later Link.
type TempCreator interface {
	CreateTemp(ctx context.Context, flags int, mode uint32) (Node, Handle, error)
}

// HostDirer is a tree that is a directory of the host's own file system
// served as it is, with nothing made up inside it. An edge may hand such a
// tree to the host's kernel (a bind mount over its place) instead of
// serving each request itself. HostDir reports the directory's current
// host path; ok is false for any node but the tree's root. OpenHostDir
// opens that directory from the tree's own hold on it (O_PATH where the
// host has it), for an edge to bind it without walking a host path that
// may name another directory by then.
type HostDirer interface {
	HostDir() (dir string, ok bool)
	OpenHostDir() (*os.File, error)
}

// HostPather is a directory of the host's own file system (diskfs):
// HostPath reports its host path now, so that what a path is on disk
// decides, whatever its name in the tree: the namespace's refusals, and
// the directory a /proc session's process runs in (its cwd names a
// directory of the tree; the process needs the host's). ok is false
// where the node is no such directory.
type HostPather interface {
	HostPath() (dir string, ok bool)
}

// HostPath is n's host directory (HostPather); a node without one has
// none, such as a synthetic directory or a remote device's.
func HostPath(n Node) (string, bool) {
	if h, ok := n.(HostPather); ok {
		return h.HostPath()
	}
	return "", false
}

// Flusher is a handle with something to finish when a descriptor of it is
// closed, such as a last ctl line that has no newline. The edges call
// Flush at every close(2) (FUSE's FLUSH), so it may run more than once and
// before Close; its error is close's. Handles without it spare the mount
// that round trip.
type Flusher interface {
	Flush(ctx context.Context) error
}

type flushesKey struct{}

// WithFlushAtClose marks a write's context: its caller calls Flush when
// the descriptor is closed and reports what it returns (the FUSE edge), so
// a handle may acknowledge the write before it has landed and report a
// failure then. An edge that cannot report one later (a 9P server: its
// clients' close sends nothing) leaves writes unmarked.
func WithFlushAtClose(ctx context.Context) context.Context {
	return context.WithValue(ctx, flushesKey{}, true)
}

// FlushesAtClose says whether ctx was marked by WithFlushAtClose.
func FlushesAtClose(ctx context.Context) bool {
	marked, _ := ctx.Value(flushesKey{}).(bool)
	return marked
}

// Syncer is a handle whose data can be flushed to stable storage. A
// handle without it has nothing to flush: fsync(2) on it succeeds (see
// Sync).
type Syncer interface {
	Sync(ctx context.Context) error
}

// HandleAttrer is a handle that can stat and truncate what it has open,
// even after its name is gone (fstat, ftruncate).
type HandleAttrer interface {
	Attr(ctx context.Context) (Attr, error)
	SetAttr(ctx context.Context, s SetAttr) (Attr, error)
}

// Allocater is a handle that can reserve or punch space (fallocate).
type Allocater interface {
	Allocate(ctx context.Context, off, size int64, mode uint32) error
}

// HostFile is a handle backed by a real host file descriptor. Edges may
// hand the descriptor to the kernel (FUSE passthrough) so data moves
// without passing through the daemon. The descriptor stays owned by the
// handle.
type HostFile interface {
	HostFd() (int, bool)
}

// Attr is what stat reports about a node.
type Attr struct {
	Ino uint64 // stable and unique within a tree
	// Gen tells a file from an earlier one that had the same Ino (a
	// filesystem may reuse inode numbers); 0 where nothing tells them apart.
	Gen     uint64
	Mode    uint32 // S_IFMT type bits and permission bits, as in stat(2)
	Nlink   uint32
	Uid     uint32
	Gid     uint32
	Rdev    uint64
	Size    int64
	Blocks  int64 // 512-byte blocks
	Blksize uint32
	Atime   time.Time
	Mtime   time.Time
	Ctime   time.Time
	// Volatile marks generated content: edges serve it without caching
	// (FUSE direct I/O, no attribute cache) because its size and bytes
	// change without a write.
	Volatile bool
	// Fixed says that these attributes stay as they are for as long as
	// the node exists, though its content be generated (Volatile): a
	// session's ctl and wait, /proc's directories. Edges may hold them
	// as long as they like; a wrapper that changes them (a mode from
	// grants) clears it.
	Fixed bool
	// Watched says that a change other programs make to this node's
	// entry or attributes (and, for a directory, to its entries) is
	// reported by the tree's Watcher, so edges may cache them long.
	Watched bool
}

// IsDir reports whether the attributes describe a directory.
func (a Attr) IsDir() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// Type returns the S_IFMT bits of the mode.
func (a Attr) Type() uint32 { return a.Mode & syscall.S_IFMT }

// SetMask says which fields of a SetAttr apply.
type SetMask uint32

// The fields a SetAttr may change.
const (
	SetMode SetMask = 1 << iota
	SetUid
	SetGid
	SetSize
	SetAtime    // to SetAttr.Atime
	SetMtime    // to SetAttr.Mtime
	SetAtimeNow // to the current time
	SetMtimeNow // to the current time
	// SetClearSetID drops set-user-ID, and set-group-ID where the group may
	// execute, after the other changes: what a write, truncate or chown by
	// a caller without CAP_FSETID does to a file on Linux.
	SetClearSetID
)

// SetAttr is a change of attributes (wstat, chmod, chown, truncate, utimes).
type SetAttr struct {
	Valid SetMask
	Mode  uint32 // permission bits only
	Uid   uint32
	Gid   uint32
	Size  int64
	Atime time.Time
	Mtime time.Time
}

// Has reports whether every field in m is set.
func (s SetAttr) Has(m SetMask) bool { return s.Valid&m == m }

// Owner is the owner and group s sets, each -1 where it leaves them, as
// chown(2) takes them.
func (s SetAttr) Owner() (uid, gid int) {
	uid, gid = -1, -1
	if s.Has(SetUid) {
		uid = int(s.Uid)
	}
	if s.Has(SetGid) {
		gid = int(s.Gid)
	}
	return uid, gid
}

// StatFS is what statfs reports.
type StatFS struct {
	Bsize   uint32
	Frsize  uint32
	Blocks  uint64
	Bfree   uint64
	Bavail  uint64
	Files   uint64
	Ffree   uint64
	NameLen uint32
}

// Caller is the identity a request runs as, supplied by the edge.
type Caller struct {
	Uid, Gid uint32
}

type callerKey struct{}

// WithCaller returns a context carrying the caller's identity. Backends use
// it to give new files the caller's ownership.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx and whether one was set.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

type peerKey struct{}

// WithPeer returns a context naming the connection a request came by,
// where an edge serves several peers whose word on the caller's uid no
// kernel vouches for (a 9P server's connections): id is unique in the
// process. Bounds kept per caller (the /dev/log rate) are kept per peer
// and uid, so that a peer claiming many uids does not get many shares.
func WithPeer(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, peerKey{}, id)
}

// PeerFrom returns the peer named in ctx, 0 if none (FUSE: the kernel's
// own callers).
func PeerFrom(ctx context.Context) uint64 {
	id, _ := ctx.Value(peerKey{}).(uint64)
	return id
}

// MaxDirOffset is the largest directory offset a kernel accepts (a file
// offset is signed). ext4 marks the end of a directory with it.
const MaxDirOffset = 1<<63 - 1

// ShiftDirOffset moves a backend directory offset up by k, making room
// for k entries listed before the backend's (FUSE's "." and "..", the
// namespace's mount points). Offsets within k of MaxDirOffset stay as they
// are, so the end-of-directory mark survives and no offset overflows into
// a negative file offset; UnshiftDirOffset undoes it. A backend offset in
// [MaxDirOffset-2k, MaxDirOffset-k) would not round-trip; real directory
// cookies are not found so close to the limit.
func ShiftDirOffset(off, k uint64) uint64 {
	if off >= MaxDirOffset-k {
		return off
	}
	return off + k
}

// UnshiftDirOffset is the inverse of ShiftDirOffset for an offset >= k.
func UnshiftDirOffset(off, k uint64) uint64 {
	if off >= MaxDirOffset-k {
		return off
	}
	return off - k
}

// Quick is a node whose calls, other than reads and writes of its open
// handles, return without waiting on anything but the local kernel: no
// network, no events, no other process. Edges may run such calls on the
// goroutine that received the request instead of handing them to a new
// one. A node that does not implement Quick is taken to block.
type Quick interface {
	Quick() bool
}

// IsQuick reports whether n promises quick calls.
func IsQuick(n Node) bool {
	q, ok := n.(Quick)
	return ok && q.Quick()
}
