//go:build linux

package fusefs

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// A kernel bind lays a host directory over its own place in the mount
// (mount --bind DIR MOUNT/PATH), so the kernel serves everything below
// PATH itself, at the disk's speed, and FUSE serves the rest. It is only
// right for a tree that is the host directory as it is (vfs.HostDirer):
// the caller decides which trees those are and says so again whenever
// that changes.
//
// Binds are laid by descriptor, never by path. Any user may make a name
// in the tree (in /workspaces, say) a symlink to anywhere on the host, and
// mount(2) would follow it: root would lay the bind over the place it
// points to. So a bind's place is opened beneath the mount's root without
// following any symlink or crossing any other mount (openat2), the host
// directory, as the tree serving it opens it from its own descriptor
// (vfs.HostDirer), is cloned as a detached mount (open_tree), given the
// mount's
// nosuid,nodev, and moved onto that descriptor (move_mount). Each bind is
// remembered as the mount it made: whether it is still there is asked by
// its mount id, and it is taken off where the kernel says that mount lies,
// reached through no symlink, whatever its old path has become since.
// No descriptor of a bind is kept: it would hold the bind busy and make
// gsvfs umount fail.

// KernelBind is a host directory the kernel serves in the mount's place.
type KernelBind struct {
	Path string // where, inside the mount: absolute and clean ("/workspaces")
	Dir  string // the host directory, to know the bind by
	// Tree is the tree that serves it: the bind is made from the
	// descriptor it opens, never by walking Dir, which this package does
	// not do (diskfs is the one that touches host paths).
	Tree vfs.HostDirer
}

// kernelBinds are the binds a Mount has laid over itself, by path inside
// the mount.
type kernelBinds struct {
	mu   sync.Mutex
	have map[string]laidBind
	// root is the FUSE mount's id, learnt as the mount is made (ownMount):
	// a bind is only ever laid on that mount, never on whatever is at
	// its mount point later, such as a user's own FUSE mount put there
	// once this one is gone. 0: not learnt, and no bind is laid.
	// unique is its id that the kernel never gives another mount
	// (STATX_MNT_ID_UNIQUE, Linux 6.8; 0 before): root alone is given
	// again to the next mount made once this one is gone.
	root, unique uint64
	// gone is set once the mount is being unmounted: no bind is laid
	// after that.
	gone bool
}

// laidBind is a bind laid over the mount, known by the mount it made.
type laidBind struct {
	dir    string
	id     uint64 // its mount id, as in /proc/self/mountinfo
	source string // its device and root there, so a reused id is not taken for it
}

// resolveBeneath is how a bind's place is found in the mount: below its
// root, through no symlink, into no other mount.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// SetKernelBinds makes the binds over the mount what want says: it takes
// away the binds no longer wanted (lazily: open files keep working), lays
// the new ones, and lays again any the kernel dropped (it drops a bind
// whose mount point the tree told it to forget). It needs root. Binds it
// could not lay, among them any whose place is or passes through a
// symlink or another mount, are reported and the tree keeps serving those
// places through FUSE.
func (m *Mount) SetKernelBinds(want []KernelBind) error {
	kb := &m.binds
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.gone {
		return nil
	}
	if kb.have == nil {
		kb.have = make(map[string]laidBind)
	}
	wanted := make(map[string]string, len(want))
	trees := make(map[string]vfs.HostDirer, len(want))
	for _, b := range want {
		wanted[b.Path], trees[b.Path] = b.Dir, b.Tree
	}
	root, err := m.openRoot()
	if err != nil {
		return err
	}
	defer unix.Close(root)
	errs := m.takeOff(root, func(p string, b laidBind) bool { return wanted[p] != b.dir })
	for _, p := range slices.Sorted(maps.Keys(wanted)) {
		if _, ok := kb.have[p]; ok {
			continue
		}
		b, err := bindOver(root, p, wanted[p], trees[p])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kb.have[p] = b
	}
	return errors.Join(errs...)
}

// takeOff takes off, lazily and deepest first so none is taken from
// under another, the binds unwanted says, and forgets those the kernel
// dropped. root is the mount's root, open; m.binds.mu is held.
func (m *Mount) takeOff(root int, unwanted func(p string, b laidBind) bool) []error {
	var all []mountLine
	eachMount(func(mi mountLine) { all = append(all, mi) })
	on := make(map[uint64]mountLine)
	for _, mi := range mountsOn(m.binds.root, all) {
		on[mi.id] = mi
	}
	var errs []error
	for _, p := range slices.Backward(slices.Sorted(maps.Keys(m.binds.have))) {
		b := m.binds.have[p]
		mi, there := on[b.id]
		there = there && mi.source == b.source
		if there && !unwanted(p, b) {
			continue
		}
		if there {
			if err := unmountOn(root, m.Dir, mi, unix.MNT_DETACH); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		delete(m.binds.have, p)
	}
	return errs
}

// KernelBinds lists the binds laid over the mount, in path order.
func (m *Mount) KernelBinds() []KernelBind {
	m.binds.mu.Lock()
	defer m.binds.mu.Unlock()
	var out []KernelBind
	for _, p := range slices.Sorted(maps.Keys(m.binds.have)) {
		out = append(out, KernelBind{Path: p, Dir: m.binds.have[p].dir})
	}
	return out
}

// openRoot opens the mount's root for binds to be found beneath, and
// checks it is still this FUSE mount. m.binds.mu is held.
func (m *Mount) openRoot() (int, error) {
	fd, err := unix.Open(m.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "kernel binds: open the mount", Path: m.Dir, Err: err}
	}
	id, unique, err := fuseMountIDs(fd)
	if err == nil && (m.binds.root == 0 || id != m.binds.root || unique != m.binds.unique) {
		err = syscall.ESTALE
	}
	if err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "kernel binds: the mount is no longer there", Path: m.Dir, Err: err}
	}
	return fd, nil
}

// ownMount learns the ids of the FUSE mount this daemon has just made at
// dir, before any bind: the mount the kernel binds may be laid on. They
// are not learnt (no binds, then) where the kernel does not say.
func (kb *kernelBinds) ownMount(dir string) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if id, unique, err := fuseMountIDs(fd); err == nil {
		kb.root, kb.unique = id, unique
	}
}

// fuseMountIDs are the ids (see kernelBinds) of the FUSE mount fd is on;
// ENODEV if it is on no FUSE mount.
func fuseMountIDs(fd int) (id, unique uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, 0, err
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		return 0, 0, unix.ENODEV
	}
	if id, err = mountID(fd); err != nil {
		return 0, 0, err
	}
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID_UNIQUE, &stx) == nil && stx.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
		unique = stx.Mnt_id
	}
	return id, unique, nil
}

// bindOver lays the host directory dir, which tree serves, over p, found
// beneath the mount's root. The place is reached through the mount itself, so this process
// serves its own lookups: go-fuse answers them from other goroutines
// while this one waits.
func bindOver(root int, p, dir string, tree vfs.HostDirer) (laidBind, error) {
	if !path.IsAbs(dir) {
		return laidBind{}, &fs.PathError{Op: "kernel bind of " + p + ": host directory", Path: dir, Err: fs.ErrInvalid}
	}
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		rel = "."
	}
	target, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveBeneath})
	switch {
	case err == unix.ELOOP:
		return laidBind{}, &fs.PathError{Op: "kernel bind refused: a symlink is on the way to", Path: p, Err: err}
	case err == unix.EXDEV:
		return laidBind{}, &fs.PathError{Op: "kernel bind refused: another mount is at or on the way to", Path: p, Err: err}
	case err != nil:
		return laidBind{}, &fs.PathError{Op: "kernel bind: open its place in the mount", Path: p, Err: err}
	}
	defer unix.Close(target)
	fd, id, err := cloneDir(dir, tree)
	if err != nil {
		return laidBind{}, err
	}
	// A detached mount goes with its last descriptor; once moved, the
	// bind stays.
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return laidBind{}, &fs.PathError{Op: "kernel bind of " + dir + " over", Path: p, Err: err}
	}
	b := laidBind{dir: dir, id: id}
	eachMount(func(mi mountLine) {
		if mi.id == id {
			b.source = mi.source
		}
	})
	return b, nil
}

// cloneDir makes a detached bind of the host directory dir, which tree
// opens, as the FUSE mount is: no set-ID programs, no device nodes that
// open devices; and private, so nothing mounted on one side shows on the
// other. It returns the bind's descriptor and mount id.
func cloneDir(dir string, tree vfs.HostDirer) (int, uint64, error) {
	if tree == nil {
		return -1, 0, &fs.PathError{Op: "kernel bind: no tree opens the host directory", Path: dir, Err: fs.ErrInvalid}
	}
	src, err := tree.OpenHostDir()
	if err != nil {
		return -1, 0, &fs.PathError{Op: "kernel bind: open the host directory", Path: dir, Err: err}
	}
	defer src.Close()
	fd, err := unix.OpenTree(int(src.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		if err == unix.EPERM {
			return -1, 0, &fs.PathError{Op: "kernel bind (it needs root): clone", Path: dir, Err: err}
		}
		return -1, 0, &fs.PathError{Op: "kernel bind: clone", Path: dir, Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr)
	var id uint64
	if err == nil {
		id, err = mountID(fd)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, &fs.PathError{Op: "kernel bind: make nosuid,nodev the bind of", Path: dir, Err: err}
	}
	return fd, id, nil
}

// mountID is the id of the mount fd is on.
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, unix.ENOSYS
	}
	return stx.Mnt_id, nil
}

// dropKernelBinds takes every bind off the mount, lazily, for good.
func (m *Mount) dropKernelBinds() {
	m.binds.mu.Lock()
	defer m.binds.mu.Unlock()
	m.binds.gone = true
	if len(m.binds.have) == 0 {
		return
	}
	root, err := m.openRoot()
	if err != nil {
		return // the mount is gone, and its binds with it
	}
	defer unix.Close(root)
	m.takeOff(root, func(string, laidBind) bool { return true })
}

// unmountBelow unmounts every mount on the gsvfs mount at dir, deepest
// first, as umount -R does: the kernel binds of a mount must go before it
// can. A busy one stops it. The mounts are found by their parents' ids,
// and each is reached beneath the mount through no symlink, so a path
// that has become a symlink since leads nowhere else.
func unmountBelow(dir string) error {
	var fuse uint64
	var all []mountLine
	eachMount(func(mi mountLine) {
		all = append(all, mi)
		if mi.point == dir && mi.fstype == fsType {
			fuse = mi.id // the last one stacked wins
		}
	})
	below := mountsOn(fuse, all)
	if len(below) == 0 {
		return nil
	}
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "unmount", Path: dir, Err: err}
	}
	defer unix.Close(root)
	if id, err := mountID(root); err != nil || id != fuse {
		return &fs.PathError{Op: "unmount: the mount changed while being taken down", Path: dir, Err: syscall.ESTALE}
	}
	// Later mounts lie over earlier ones: undo them in reverse.
	for _, mi := range slices.Backward(below) {
		if err := unmountOn(root, dir, mi, 0); err != nil {
			return err
		}
	}
	return nil
}

// mountsOn lists, in mountinfo's order, the mounts that lie on the mount
// id, directly or through others.
func mountsOn(id uint64, all []mountLine) []mountLine {
	if id == 0 {
		return nil
	}
	on := map[uint64]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, mi := range all {
			if on[mi.parent] && !on[mi.id] {
				on[mi.id], grew = true, true
			}
		}
	}
	var out []mountLine
	for _, mi := range all {
		if on[mi.id] && mi.id != id {
			out = append(out, mi)
		}
	}
	return out
}

// unmountOn unmounts mi, which lies below the mount at dir (open as
// root), with umount2's flags. Its parent directory is opened beneath
// root through no symlink, what is at its name must be mi itself, and the
// unmount goes through that directory's descriptor without following a
// last symlink.
func unmountOn(root int, dir string, mi mountLine, flags int) error {
	rel, ok := strings.CutPrefix(mi.point, dir+"/")
	if !ok {
		return &fs.PathError{Op: "unmount: not below " + dir, Path: mi.point, Err: syscall.EINVAL}
	}
	parent, name := path.Split(rel)
	if parent = strings.TrimSuffix(parent, "/"); parent == "" {
		parent = "."
	}
	pfd, err := unix.Openat2(root, parent, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return &fs.PathError{Op: "unmount: reach without symlinks", Path: mi.point, Err: err}
	}
	defer unix.Close(pfd)
	var stx unix.Statx_t
	err = unix.Statx(pfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	if err == nil && stx.Mnt_id != mi.id {
		err = syscall.ESTALE
	}
	if err == nil {
		err = unix.Unmount(fmt.Sprintf("/proc/self/fd/%d/%s", pfd, name), flags|unix.UMOUNT_NOFOLLOW)
	}
	switch {
	case err == nil || err == unix.EINVAL || err == unix.ENOENT:
		return nil
	case err == unix.EBUSY:
		return busy(mi.point)
	}
	return &fs.PathError{Op: "unmount", Path: mi.point, Err: err}
}
