package diskfs

import (
	"context"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// The operations that change which names reach which file. Each keeps the
// node table true: a moved file's node learns its new name; a file whose
// last name goes while an edge still refers to it is pinned by an O_PATH
// descriptor, so opening and stat-ing it keep working as on a local disk
// (unlink while open; an open racing a rename over the file). The pin goes
// once the file is neither open nor referenced (node.release), so the
// space is freed then.

func (n *node) Remove(ctx context.Context, name string, dir bool) error {
	if err := n.dirOp("remove", name); err != nil {
		return err
	}
	n.fs.names.Lock()
	defer n.fs.names.Unlock()
	return n.inDir(func(dirfd int) error {
		if err := n.fs.hide.guardName("remove", dirfd, name); err != nil {
			return err
		}
		victim, pin := n.prepareUnlink(dirfd, name)
		flags := 0
		if dir {
			flags = unix.AT_REMOVEDIR
		}
		if victim != nil && victim.isDir && pin >= 0 {
			// Unheld only once unlinked has made it a kept descriptor.
			defer victim.unhold()
		}
		if err := unix.Unlinkat(dirfd, name, flags); err != nil {
			closeFilePin(victim, pin)
			return vfs.Error("remove", name, errno(err))
		}
		n.fs.unlinked(victim, link{dir: n, name: name}, pin)
		return nil
	})
}

// prepareUnlink finds the live node that name (about to be unlinked or
// replaced) in the directory dirfd belongs to, and pins it: a file whose
// last name this is gets an O_PATH descriptor; a directory's own
// descriptor is held open (pin is that descriptor then), since it cannot
// be opened again once it has no name.
func (n *node) prepareUnlink(dirfd int, name string) (victim *node, pin int) {
	var st unix.Statx_t
	if statx(dirfd, name, &st) != nil {
		return nil, -1
	}
	victim = n.fs.lookupLive(idOf(&st))
	if victim == nil {
		return nil, -1
	}
	if victim.isDir {
		fd, err := victim.hold()
		if err != nil {
			return victim, -1
		}
		return victim, fd
	}
	if st.Nlink > 1 {
		return victim, -1
	}
	pin, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return victim, -1
	}
	return victim, pin
}

// unlinked records that name l no longer reaches victim.
func (f *FS) unlinked(victim *node, l link, pin int) {
	if victim == nil {
		return
	}
	if victim.isDir {
		victim.setParent(link{}) // its descriptor was held: kept now
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	victim.dropLinkLocked(l, pin)
}

// closeFilePin closes the pin prepareUnlink opened for a file.
func closeFilePin(victim *node, pin int) {
	if victim != nil && !victim.isDir {
		closePin(pin)
	}
}

func closePin(pin int) {
	if pin >= 0 {
		unix.Close(pin)
	}
}

func (n *node) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	return n.RenameFlags(ctx, oldName, newDir, newName, 0)
}

// RenameFlags is rename with renameat2(2)'s flags (vfs.FlagRenamer). A
// whiteout needs CAP_MKNOD, which the kernel checks of the caller.
func (n *node) RenameFlags(_ context.Context, oldName string, newDir vfs.Node, newName string, flags uint32) error {
	if flags&^(vfs.RenameNoReplace|vfs.RenameExchange|vfs.RenameWhiteout) != 0 {
		return vfs.Error("rename", oldName, syscall.EINVAL)
	}
	if err := n.dirOp("rename", oldName); err != nil {
		return err
	}
	to, ok := newDir.(*node)
	if !ok || to.fs != n.fs {
		return vfs.Error("rename", newName, syscall.EXDEV)
	}
	if err := to.dirOp("rename", newName); err != nil {
		return err
	}
	n.fs.names.Lock()
	defer n.fs.names.Unlock()
	return n.inDir(func(fromfd int) error {
		return to.inDir(func(tofd int) error {
			return n.renameIn(fromfd, oldName, to, tofd, newName, flags)
		})
	})
}

// renameIn renames between the held descriptors of n and to, keeping the
// node table true.
func (n *node) renameIn(fromfd int, oldName string, to *node, tofd int, newName string, flags uint32) error {
	if err := n.fs.hide.guardName("rename", fromfd, oldName); err != nil {
		return err
	}
	if err := n.fs.hide.guardName("rename", tofd, newName); err != nil {
		return err
	}
	moved := n.liveChild(fromfd, oldName)
	var replaced *node
	pin := -1
	switch {
	case flags&vfs.RenameExchange != 0:
		replaced = to.liveChild(tofd, newName) // not removed: it takes oldName
	case flags&vfs.RenameNoReplace == 0:
		replaced, pin = to.prepareUnlink(tofd, newName)
	}
	if replaced != nil && replaced.isDir && pin >= 0 {
		defer replaced.unhold()
	}
	if replaced != nil && replaced == moved {
		// Renaming a name onto another link of the same file does nothing
		// (rename(2)): both names stay, so the node's names stay too.
		closeFilePin(replaced, pin)
		replaced, moved = nil, nil
	}
	err := unix.Renameat2(fromfd, oldName, tofd, newName, uint(flags))
	if err != nil {
		closeFilePin(replaced, pin)
		return vfs.Error("rename", oldName, errno(err))
	}
	from, dest := link{dir: n, name: oldName}, link{dir: to, name: newName}
	if flags&vfs.RenameExchange != 0 {
		// The two files traded names; FS.names keeps the halfway
		// state from being seen.
		n.fs.moved(moved, from, dest)
		n.fs.moved(replaced, dest, from)
		return nil
	}
	n.fs.unlinked(replaced, dest, pin)
	n.fs.moved(moved, from, dest)
	return nil
}

// liveChild returns the live node of the entry name in the directory's
// held descriptor dirfd, if any.
func (n *node) liveChild(dirfd int, name string) *node {
	var st unix.Statx_t
	if statx(dirfd, name, &st) != nil {
		return nil
	}
	return n.fs.lookupLive(idOf(&st))
}

// moved records that m's name from is now to.
func (f *FS) moved(m *node, from, to link) {
	if m == nil {
		return
	}
	if m.isDir {
		m.setParent(to)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m.links = deleteLink(m.links, from)
	m.addLinkLocked(to)
}

func (n *node) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	if err := n.dirOp("link", name); err != nil {
		return nil, err
	}
	t, ok := target.(*node)
	if !ok || t.fs != n.fs {
		return nil, vfs.Error("link", name, syscall.EXDEV)
	}
	if t.isDir {
		return nil, vfs.Error("link", name, syscall.EPERM)
	}
	n.fs.names.Lock()
	defer n.fs.names.Unlock()
	err := t.doLocked(func(l loc) error {
		return t.onFd(l, func(fd int) error {
			// Linking through the descriptor's /proc link links the very
			// file checked; a file with no names left fails with ENOENT,
			// as linkat(2) does.
			return n.inDir(func(dirfd int) error {
				return unix.Linkat(unix.AT_FDCWD, fdPath(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
			})
		})
	})
	if err != nil {
		return nil, vfs.Error("link", name, errno(err))
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	t.addLinkLocked(link{dir: n, name: name})
	return t, nil
}

// Extended attributes go through the /proc/self/fd path of a descriptor of
// the node's own file (checked by withFd): the xattr calls have no *at
// form. The path is the descriptor's magic link, so it is followed, to the
// file itself and no further.

func (n *node) GetXattr(_ context.Context, attr string) ([]byte, error) {
	var val []byte
	err := n.xattrDo(func(p string) (err error) {
		val, err = sized(func(buf []byte) (int, error) { return unix.Getxattr(p, attr, buf) })
		return err
	})
	if err != nil {
		return nil, vfs.Error("getxattr", attr, errno(err))
	}
	return val, nil
}

// sized reads a value whose size is asked first (getxattr, listxattr) and
// may change before it is read: it retries until the value fits. The
// buffer is never empty, because an empty one would ask for the size
// again instead of reading an empty value.
func sized(read func([]byte) (int, error)) ([]byte, error) {
	for {
		size, err := read(nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, max(size, 1))
		got, err := read(buf)
		if err == syscall.ERANGE || got > len(buf) {
			continue // it grew in between
		}
		if err != nil {
			return nil, err
		}
		return buf[:got], nil
	}
}

func (n *node) SetXattr(_ context.Context, attr string, value []byte, flags int) error {
	err := n.xattrDo(func(p string) error { return unix.Setxattr(p, attr, value, flags) })
	if err != nil {
		return vfs.Error("setxattr", attr, errno(err))
	}
	return nil
}

func (n *node) ListXattr(context.Context) ([]string, error) {
	var names []string
	err := n.xattrDo(func(p string) error {
		buf, err := sized(func(buf []byte) (int, error) { return unix.Listxattr(p, buf) })
		names = splitNul(buf)
		return err
	})
	if err != nil {
		return nil, vfs.Error("listxattr", "", errno(err))
	}
	return names, nil
}

func (n *node) RemoveXattr(_ context.Context, attr string) error {
	err := n.xattrDo(func(p string) error { return unix.Removexattr(p, attr) })
	if err != nil {
		return vfs.Error("removexattr", attr, errno(err))
	}
	return nil
}

func (n *node) xattrDo(fn func(p string) error) error {
	return n.withFd(func(fd int) error { return fn(fdPath(fd)) })
}

func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}
