// This file and the other _linux.go files are diskfs on Linux.
//
// Confinement does not rest on string checks. Every operation names a child
// of a directory the package already holds open (an O_PATH descriptor) and
// passes that single name to an *at system call with O_NOFOLLOW or
// AT_SYMLINK_NOFOLLOW; names are refused unless they are one path element
// other than "." and "..". So no "..", symlink (planted by anyone, at any
// moment) or directory swapped mid-operation can lead a call outside the
// tree: the kernel never resolves more than one component, and never follows
// a link while doing so. Symlinks are returned to clients as symlinks and
// are resolved, if at all, in the client's own namespace.
//
// Directories are nodes holding an O_PATH descriptor while a bounded cache
// has room for it (see dirCache), and their one name for when it has not.
// Regular files, symlinks and special files are nodes that know
// the names they are reachable by (parent directory node plus name): holding
// a descriptor per file would exhaust the descriptor limit on large trees.
// Nodes are kept in a table keyed by device and inode number, so one host
// file is one node however many hard links or walks reach it, and renames,
// links and unlinks done through the tree keep every node's names true.
//
// Calls on a local disk do not block indefinitely, so this package does not
// abandon them when a context is cancelled: FUSE reports an interrupt
// whenever Go's runtime signals a thread, and an open must not fail with
// EINTR for that.

package diskfs

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// FS is one disk-backed tree rooted at a host directory. Its owner
// closes it (Close) when the tree is no longer served.
type FS struct {
	root *node
	// self is how a node's cleanup reaches the tree without keeping it
	// alive (see newNodeLocked).
	self weak.Pointer[FS]

	// names orders changes of names against their use. Remove, Rename and
	// Link hold it exclusively across the system call and the node-table
	// update that records it; walks, opens and the other operations that
	// reach a file by a name it is known by hold it shared. So a node
	// never acts through a name in the instant after the name moved to
	// another file but before the node learned so: two files never share
	// one kernel inode. (Changes made behind the tree's back are caught by
	// the identity check instead; see node.do.)
	names sync.RWMutex

	mu    sync.Mutex
	nodes map[fileID]weak.Pointer[node]

	fds *dirCache

	// hide is what the tree never shows (nil: nothing), and holdsHidden
	// says a hidden directory lies inside the tree.
	hide        *Hidden
	holdsHidden bool

	// watch reports changes made outside (watch_linux.go), while anyone
	// subscribes; watchMu orders its start and end.
	watch   atomic.Pointer[treeWatch]
	watchMu sync.Mutex
}

// fileID identifies a host file: the key of the node table. The birth
// time keeps a file apart from an earlier one whose inode number the
// filesystem reused (ext4 does so at once).
type fileID struct {
	dev, ino, born uint64
}

// link is one name a file is reachable by.
type link struct {
	dir  *node
	name string
}

// node is a file, directory or symlink of the tree.
type node struct {
	fs    *FS
	id    fileID
	isDir bool
	// fd holds an O_PATH descriptor: for a directory, while the cache
	// keeps it (reached through hold); for a file only once its last
	// known name is gone while the node is still in use (unlinked but
	// open), so stat keeps working, -1 otherwise. Closed by the node's
	// cleanup when it is no longer reachable.
	fd *descriptor
	// links are the names a non-directory is known by, guarded by fs.mu.
	links []link
	// parent is a directory's one name, by which its descriptor is opened
	// again; guarded by fs.fds.mu. Empty for the root and once removed.
	parent link
	// handles are the node's open handles, and forgotten says an edge
	// dropped its last reference; both guarded by fs.mu.
	handles   []*fileHandle
	forgotten bool
	// watched says a directory's inotify watch is in place.
	watched atomic.Bool
}

// New serves the host directory dir. The directory must exist.
func New(dir string) (*FS, error) { return NewHiding(dir, nil) }

// NewHiding is New for a tree that never shows what hide holds (see
// Hidden); dir itself must not be hidden.
func NewHiding(dir string, hide *Hidden) (*FS, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, vfs.Error("open", dir, errno(err))
	}
	if err := hide.checkRoot(dir, fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	var st unix.Statx_t
	if err := fstatx(fd, &st); err != nil {
		unix.Close(fd)
		return nil, vfs.Error("stat", dir, errno(err))
	}
	f := &FS{nodes: make(map[fileID]weak.Pointer[node]), fds: newDirCache(), hide: hide,
		holdsHidden: len(hide.list()) > 0 && hide.holdsHidden(fd)}
	f.self = weak.Make(f)
	f.root = f.adopt(idOf(&st), true, fd, link{})
	f.root.fd.keep()
	return f, nil
}

// Close lets the tree go: it ends the watch of changes made outside and
// closes the descriptors the tree holds (its root's, its directories',
// the pins of unlinked files). From then on every node of the tree fails
// with EBADF. Handles opened before stay usable until closed: each holds
// a descriptor of its own, which belongs to whoever opened it. The
// Hidden the tree was made with is not closed: it is the daemon's, shared
// by all its trees. Close may be called again, and while calls are in
// flight (a descriptor a call holds is closed as the call ends); it
// always returns nil.
func (f *FS) Close() error {
	// Calls that use a file's pin hold names shared (see loc).
	f.names.Lock()
	f.fds.shut(f.descriptors())
	f.names.Unlock()
	// After shut: a subscriber that comes now finds the tree closed and
	// starts no watch, or joins the one ended here.
	f.endWatch()
	return nil
}

// descriptors returns those of the live nodes. A node collected but not
// yet cleaned up is left to its cleanup, which closes its descriptor.
func (f *FS) descriptors() []*descriptor {
	f.mu.Lock()
	defer f.mu.Unlock()
	ds := []*descriptor{f.root.fd}
	for _, wp := range f.nodes {
		if n := wp.Value(); n != nil {
			ds = append(ds, n.fd)
		}
	}
	return ds
}

// Root returns the tree's root directory: the attach.
func (f *FS) Root() vfs.Node { return f.root }

// statx reads what the tree needs to know of the file name in dirfd, or
// of dirfd itself when name is "": its stat, and its birth time, which
// tells a file from a later one that was given the same inode number.
// A final symlink is never followed.
func statx(dirfd int, name string, st *unix.Statx_t) error {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	return unix.Statx(dirfd, name, flags, unix.STATX_BASIC_STATS|unix.STATX_BTIME, st)
}

func fstatx(fd int, st *unix.Statx_t) error { return statx(fd, "", st) }

func idOf(st *unix.Statx_t) fileID {
	return fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, born: born(st)}
}

// born is the file's birth time in nanoseconds, 0 where the filesystem
// does not keep one (then inode numbers alone must tell files apart).
func born(st *unix.Statx_t) uint64 {
	if st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return uint64(st.Btime.Sec)*1e9 + uint64(st.Btime.Nsec)
}

// adoptUnnamed makes the node of a file just made with no name
// (O_TMPFILE): the descriptor fd is its only way to the file. The file is
// new, so a node the table still holds for its id is a husk of an earlier
// file whose inode number and birth time it was given (ext4 reuses a freed
// inode number at once, and stamps births with the clock's tick): that
// node is never reused, it reaches nothing.
func (f *FS) adoptUnnamed(id fileID, fd int) *node {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.newNodeLocked(id, false, fd)
	n.links = nil
	return n
}

// adopt returns the node for id, making it if none is alive. A directory
// node takes ownership of fd (closing it if it has one already) and learns
// that l is its name; a file node learns the name l.
func (f *FS) adopt(id fileID, isDir bool, fd int, l link) *node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.nodes[id].Value(); n != nil && n.isDir == isDir {
		n.forgotten = false // an edge refers to it again
		if isDir {
			n.fd.offer(fd)
			if l.dir != nil {
				n.setParent(l)
			}
		} else if fd >= 0 {
			unix.Close(fd)
		}
		if !isDir && !slices.Contains(n.links, l) {
			// A name the node did not know: names it knew may have been
			// given to other files behind the tree's back (an editor's
			// atomic save), and must not be used for this one.
			n.dropMovedLocked()
			n.addLinkLocked(l)
		}
		return n
	}
	n := f.newNodeLocked(id, isDir, fd)
	if isDir {
		n.parent = l
	} else {
		n.links = []link{l}
	}
	return n
}

// newNodeLocked makes the node for id, holding fd, and enters it in the
// table in place of any other. The caller holds f.mu.
func (f *FS) newNodeLocked(id fileID, isDir bool, fd int) *node {
	n := &node{fs: f, id: id, isDir: isDir, fd: f.fds.newDescriptor(fd, isDir)}
	wp := weak.Make(n)
	f.nodes[id] = wp
	// The cleanup stays with Close: while the tree is served, nodes the
	// edges dropped are collected one by one, and only the cleanup knows
	// when. Its function and argument must not reach the node, or it
	// would never run: so a plain function, and the tree by a weak
	// pointer (the tree reaches its root, which has a cleanup too).
	runtime.AddCleanup(n, collected, cleanupArg{fs: f.self, id: id, wp: wp, fd: n.fd})
	return n
}

type cleanupArg struct {
	fs weak.Pointer[FS]
	id fileID
	wp weak.Pointer[node]
	fd *descriptor
}

// collected runs once the garbage collector finds a node unreachable: it
// closes the node's descriptor and drops its table entry unless a newer
// node took the slot (nothing to drop if the tree went too).
func collected(a cleanupArg) {
	a.fd.close()
	f := a.fs.Value()
	if f == nil {
		return
	}
	if tw := f.watch.Load(); tw != nil {
		tw.forget(a.wp)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes[a.id] == a.wp {
		delete(f.nodes, a.id)
	}
}

// lookupLive returns the live node for id, or nil.
func (f *FS) lookupLive(id fileID) *node {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[id].Value()
}

// dropMovedLocked forgets the names that no longer reach the node's file.
func (n *node) dropMovedLocked() {
	kept := n.links[:0]
	for _, l := range n.links {
		var st unix.Statx_t
		err := l.dir.inDir(func(fd int) error { return statx(fd, l.name, &st) })
		if err == nil && idOf(&st) == n.id {
			kept = append(kept, l)
		}
	}
	clear(n.links[len(kept):])
	n.links = kept
}

// opened returns a handle of the node on the open descriptor fd.
func (n *node) opened(fd int) *fileHandle {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	h := &fileHandle{fd: fd, n: n}
	n.handles = append(n.handles, h)
	return h
}

// closed records that the handle h of the node closed.
func (n *node) closed(h *fileHandle) {
	n.fs.mu.Lock()
	n.handles = slices.DeleteFunc(n.handles, func(o *fileHandle) bool { return o == h })
	n.fs.mu.Unlock()
	n.release()
}

// withOpenFd runs fn on the descriptor of one of the node's open handles
// and reports true, if it has one open. That descriptor is the node's own
// file whatever became of its names, so it needs no walk and no identity
// check: a setattr or xattr call on an open file (tar, cp and editors
// chown, chmod and touch the files they write before closing them) saves
// the open, stat and close of an O_PATH descriptor.
func (n *node) withOpenFd(fn func(fd int) error) (bool, error) {
	n.fs.mu.Lock()
	var h *fileHandle
	if k := len(n.handles); k > 0 {
		h = n.handles[k-1]
	}
	n.fs.mu.Unlock()
	if h == nil {
		return false, nil
	}
	h.use.RLock()
	defer h.use.RUnlock()
	if h.shut {
		return false, nil
	}
	return true, fn(h.fd)
}

// Quick reports that the node's calls wait only on the local disk
// (vfs.Quick).
func (n *node) Quick() bool { return true }

// Forget records that the edges dropped the node (vfs.Forgetter).
func (n *node) Forget() {
	n.fs.mu.Lock()
	n.forgotten = true
	n.fs.mu.Unlock()
	n.release()
}

// release closes the pin of a file with no name left once it is neither
// open nor referenced by an edge, so its space is freed. It waits for
// calls in flight that may be using the pin (FS.names).
func (n *node) release() {
	if n.isDir || !n.releasable() {
		return
	}
	n.fs.names.Lock()
	defer n.fs.names.Unlock()
	if n.releasable() { // not reopened meanwhile
		n.fd.close()
	}
}

func (n *node) releasable() bool {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	return len(n.handles) == 0 && n.forgotten && len(n.links) == 0 && n.fd.get() >= 0
}

func (n *node) addLinkLocked(l link) {
	for _, have := range n.links {
		if have == l {
			return
		}
	}
	n.links = append(n.links, l)
}

// dropLinkLocked forgets the name l. When it was the file's last known
// name, pin (an O_PATH descriptor opened before the unlink) keeps the node
// usable; otherwise pin is closed.
func (n *node) dropLinkLocked(l link, pin int) {
	n.links = deleteLink(n.links, l)
	if len(n.links) == 0 && pin >= 0 && n.fd.get() < 0 {
		n.fd.set(pin)
		return
	}
	if pin >= 0 {
		unix.Close(pin)
	}
}

func deleteLink(links []link, l link) []link {
	for i, have := range links {
		if have == l {
			return append(links[:i], links[i+1:]...)
		}
	}
	return links
}

// loc says how to reach a node with *at calls: a directory descriptor and
// a name in it, or the node's own descriptor and "" (directories and
// unlinked files). A directory's descriptor is held (see hold) until
// done, so it cannot be closed, and its number reused, while a call uses
// it; an unlinked file's pin is kept by FS.names, held by the caller.
type loc struct {
	owner *node // the directory whose descriptor fd is, if held
	fd    int
	name  string
}

// where finds the node's location. Failing to reach the directory of a
// file's name, it returns that name with the error, so the caller can
// drop it as stale.
func (n *node) where() (loc, error) {
	if n.isDir {
		fd, err := n.hold()
		if err != nil {
			return loc{}, err
		}
		return loc{owner: n, fd: fd}, nil
	}
	if fd := n.fd.get(); fd >= 0 {
		return loc{fd: fd}, nil
	}
	n.fs.mu.Lock()
	if len(n.links) == 0 {
		n.fs.mu.Unlock()
		if n.fs.fds.isClosed() {
			return loc{}, syscall.EBADF // its pin went with the tree
		}
		// Every name the file was known by now reaches another file or
		// nothing (changed behind the tree's back): the node is stale,
		// and ESTALE makes the kernel look the name up afresh.
		return loc{}, syscall.ESTALE
	}
	l := n.links[0]
	n.fs.mu.Unlock()
	fd, err := l.dir.hold()
	if err != nil {
		return loc{owner: l.dir, fd: -1, name: l.name}, err
	}
	return loc{owner: l.dir, fd: fd, name: l.name}, nil
}

// done ends the location's hold on its directory's descriptor.
func (l loc) done() {
	if l.owner != nil && l.fd >= 0 {
		l.owner.unhold()
	}
}

// self reports whether the location is the node's own descriptor.
func (l loc) self() bool { return l.name == "" }

// fdPath names the file a descriptor refers to, for the few system calls
// without an *at or descriptor form (chmod, utimes on O_PATH, xattrs,
// reopening). /proc/self/fd/N leads to the descriptor's own file, so the
// path cannot be redirected.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// stat is fstatat without following a final symlink.
func (l loc) stat(st *unix.Statx_t) error { return statx(l.fd, l.name, st) }

// open opens the location; a final symlink is never followed.
func (l loc) open(flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if l.self() {
		return unix.Open(fdPath(l.fd), flags&^unix.O_CREAT, 0)
	}
	return unix.Openat(l.fd, l.name, flags|unix.O_NOFOLLOW, mode)
}

// errno extracts the errno of a system call error.
func errno(err error) syscall.Errno {
	return vfs.Errno(err)
}
