// Package mounts is the namespace of gsvfs: a mount table that serves
// backends (vfs trees) at path prefixes and composes them into the one tree
// the edges export. It takes vfs.Nodes and never speaks a protocol itself.
//
// A path is served by the mount at that exact path if there is one, else
// by the tree it falls in. A directory on the way to a mount point that no
// backend serves (such as "/") is a read-only virtual directory listing
// what lies beneath. Mount points appear in their parent's listing whether
// or not the parent's backend has an entry of that name, and hide such an
// entry, as a mount does on Linux.
//
// Each mount gets a number that is folded into the top bits of its inode
// numbers, so inode numbers stay unique across the composed tree. Renames
// and hard links never cross mounts (EXDEV), and a mount point, or a
// directory holding one, cannot be renamed or removed (EBUSY).
package mounts

import (
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// inoBits is how many low bits of a backend's inode number survive
// folding; the mount's number goes above them.
const inoBits = 48

// Table is a mount table. The zero value is not usable; call New.
type Table struct {
	mu       sync.RWMutex
	mounts   map[string]*mount
	nextID   uint64
	virtInos vfs.InoTable
	created  time.Time // the timestamps of virtual directories
	// owner is the user and group of virtual directories: the daemon's,
	// as a user's own mount shows its directories (sshfs shows the
	// remote directory's owner). The kernel consults the ACL of a
	// directory its caller does not own at each path walk through it,
	// and FUSE never caches the ACL of a mount's root: owned by someone
	// else, every path named from the root of a user's mount cost one
	// more round trip.
	uid, gid uint32
	// rootStats counts the calls on virtual directories, which no
	// mount serves.
	rootStats *counters
	ns        nsState
	watch     watchState
	nsFile    string // the namespace file's path, its writes checked
	nsWritten func() // called when a write through the tree lands there
	// changes hands the paths of mounts and unmounts to OnChange's
	// callers.
	changes vfs.Feed[string]
	// local are the prefixes no view shows (Local).
	local []string
}

// mount is one backend served at a path.
type mount struct {
	path  string
	root  vfs.Node
	id    uint64
	what  string // what is served, for the mount table in text
	stats counters
	// local marks a tree no view shows: a namespace mount of a 9P
	// server, reached over the network.
	local bool
}

// counters count the calls on a tree, for /sys/stats.
type counters struct {
	requests, errors, read, written atomic.Int64
}

// Stats is what a tree was asked since the daemon started. Reads and
// writes the kernel does itself (FUSE passthrough) do not count.
type Stats struct {
	Path                            string
	Requests, Errors, Read, Written int64
	// Watch is the backend's watch of changes made outside, if it has
	// one.
	Watch *WatchCounts
}

// WatchCounts says how much of a tree is watched for changes made
// outside: directories watched and directories the edges hold that
// could not be (inotify's limit).
type WatchCounts struct {
	Watched, Unwatched int
}

// watchCounter is a backend that counts its watch (diskfs).
type watchCounter interface {
	WatchCounts() (watched, unwatched int, on bool)
}

// New returns an empty table.
func New() *Table {
	return &Table{mounts: make(map[string]*mount), created: time.Now(), rootStats: &counters{},
		uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
}

// Mount serves root at the absolute path p, replacing what was mounted
// there. Mounting at "/" is allowed.
func (t *Table) Mount(p string, root vfs.Node) error { return t.MountAs(p, root, "") }

// MountAs is Mount with a description of what root is ("disk
// /var/lib/gsvfs/home", "device alpha"), shown by List.
func (t *Table) MountAs(p string, root vfs.Node, what string) error {
	return t.mount(p, root, what, false)
}

// mount is MountAs, the mount marked local (no view shows it) if local.
func (t *Table) mount(p string, root vfs.Node, what string, local bool) error {
	clean := path.Clean(p)
	if !path.IsAbs(p) || clean != p {
		return fmt.Errorf("mount path %q must be absolute and clean", p)
	}
	t.mu.Lock()
	t.nextID++
	if t.nextID >= 1<<(64-inoBits) {
		t.mu.Unlock()
		return fmt.Errorf("mount %s: too many mounts", p)
	}
	old := t.mounts[p]
	m := &mount{path: p, root: root, id: t.nextID, what: what, local: local}
	t.mounts[p] = m
	t.mu.Unlock()
	t.remounted(p, old, m)
	return nil
}

// Stats returns the counts of each mounted tree in path order, the
// virtual directories that join them first (path "").
func (t *Table) Stats() []Stats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := []Stats{t.rootStats.snapshot("")}
	for _, p := range slices.Sorted(maps.Keys(t.mounts)) {
		st := t.mounts[p].stats.snapshot(p)
		if wc, ok := t.mounts[p].root.(watchCounter); ok {
			if w, u, on := wc.WatchCounts(); on {
				st.Watch = &WatchCounts{Watched: w, Unwatched: u}
			}
		}
		out = append(out, st)
	}
	return out
}

func (c *counters) snapshot(p string) Stats {
	return Stats{Path: p, Requests: c.requests.Load(), Errors: c.errors.Load(), Read: c.read.Load(), Written: c.written.Load()}
}

// Entry is one line of the mount table.
type Entry struct {
	Path, What string
}

// List returns the mount table in path order.
func (t *Table) List() []Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Entry, 0, len(t.mounts))
	for _, p := range slices.Sorted(maps.Keys(t.mounts)) {
		out = append(out, Entry{Path: p, What: t.mounts[p].what})
	}
	return out
}

// Unmount takes away what is mounted at p; nodes already walked below it
// keep their backend.
func (t *Table) Unmount(p string) {
	t.mu.Lock()
	old := t.mounts[p]
	delete(t.mounts, p)
	t.mu.Unlock()
	if old != nil {
		t.remounted(p, old, nil)
	}
}

// Root returns the root of the composed tree: the attach.
func (t *Table) Root() vfs.Node {
	return t.nodeAt("/")
}

// storage is the first mount, in path order, whose backend knows its
// capacity: the stored trees, which share the state directory.
func (t *Table) storage() (vfs.StatFSer, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, p := range slices.Sorted(maps.Keys(t.mounts)) {
		if s, ok := t.mounts[p].root.(vfs.StatFSer); ok {
			return s, true
		}
	}
	return nil, false
}

// mountAt returns the mount at exactly p.
func (t *Table) mountAt(p string) *mount {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.mounts[p]
}

// busy reports whether p is a mount point or lies on the way to one.
func (t *Table) busy(p string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for mp := range t.mounts {
		if mp == p || isBelow(mp, p) {
			return true
		}
	}
	return false
}

// childMounts returns the names of the entries of directory dir that are
// mount points or lie on the way to one, sorted.
func (t *Table) childMounts(dir string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var names []string
	for mp := range t.mounts {
		if !isBelow(mp, dir) {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(mp, dir), "/")
		name, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// childMountsQuick reports whether every mount point just beneath dir
// has a quick root (vfs.Quick); the ways to deeper ones are virtual
// directories, which stat in memory.
func (t *Table) childMountsQuick(dir string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for mp, m := range t.mounts {
		if isBelow(mp, dir) && !strings.Contains(strings.TrimPrefix(mp[len(dir):], "/"), "/") && !vfs.IsQuick(m.root) {
			return false
		}
	}
	return true
}

// virtualIno returns the stable inode number of the virtual directory p.
func (t *Table) virtualIno(p string) uint64 { return t.virtInos.Of(p) }

// nodeAt returns the namespace node for p: the mount there, else a
// virtual directory.
func (t *Table) nodeAt(p string) *node {
	if m := t.mountAt(p); m != nil {
		return &node{t: t, path: p, inner: m.root, mnt: m}
	}
	return &node{t: t, path: p}
}

// isBelow reports whether p lies strictly beneath dir.
func isBelow(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// fold makes a backend inode number unique in the namespace.
func (m *mount) fold(ino uint64) uint64 {
	return m.id<<inoBits | ino&(1<<inoBits-1)
}
