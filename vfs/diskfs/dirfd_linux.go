package diskfs

import (
	"container/list"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Directory descriptors are a cache, not a cost of every cached directory.
// The kernel keeps a directory's node for as long as it caches the
// directory, so if each held an O_PATH descriptor, any user could run the
// daemon out of descriptors by making directories (or one very deep path).
// Instead a directory node keeps its descriptor only while the cache has
// room: an idle one (no call using it) may be closed, least recently used
// first, and is opened again from the directory's parent by its one name,
// checked to be the same directory, when a call next needs it. A call
// holds the descriptor (hold/unhold) for as long as it uses the number, so
// none is closed, and its number reused, under a system call.
//
// A directory that keeps its descriptor follows renames made by other
// programs for free; one reopened by name finds such a rename only as a
// changed or missing name, and answers ESTALE so the kernel looks the path
// up afresh, as for files. Renames made through the tree keep the parent
// link true.
type dirCache struct {
	mu   sync.Mutex
	idle list.List // *descriptor, most recently used at the front
	open int       // evictable descriptors open, in use or idle
	max  int       // open is trimmed to max by closing idle ones
	// closed says the tree was closed (FS.Close): no descriptor is kept,
	// given or opened again, and one a call holds is closed as it lets
	// it go.
	closed bool
}

// descriptor owns a host fd so that a cleanup can close it without keeping
// its node reachable. Its fields are guarded by the cache's mu.
type descriptor struct {
	c  *dirCache
	fd int
	// evictable says the cache may close fd while no call holds it: true
	// for directories other than the root and removed ones.
	evictable bool
	users     int           // calls holding fd
	idle      *list.Element // in c.idle while evictable, open and unused
}

// newDirCache sizes the cache from the descriptor limit: an eighth of it,
// so files opened through the edges keep most of the limit.
func newDirCache() *dirCache {
	size := 256
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		size = int(min(max(lim.Cur/8, 64), 4096))
	}
	return &dirCache{max: size}
}

func (c *dirCache) newDescriptor(fd int, evictable bool) *descriptor {
	d := &descriptor{c: c, fd: fd, evictable: evictable}
	if !evictable && fd < 0 {
		return d // a file's: nothing to count or close (set checks closed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		d.fd = -1
		if fd >= 0 {
			unix.Close(fd)
		}
	case evictable:
		c.open++
		d.idle = c.idle.PushFront(d)
		c.trimLocked()
	}
	return d
}

// shut closes the cache's tree: the descriptors ds now, or, those a call
// holds, as the call lets them go (unhold), so no number is closed, and
// reused, under a system call.
func (c *dirCache) shut(ds []*descriptor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, d := range ds {
		if d.users == 0 {
			d.closeLocked()
		}
	}
}

func (c *dirCache) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// offer gives the descriptor a directory's fd opened by a lookup, unless
// it still has one.
func (d *descriptor) offer(fd int) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if d.fd >= 0 || !d.evictable || d.c.closed {
		unix.Close(fd)
		return
	}
	d.fd = fd
	d.c.open++
	if d.users == 0 {
		d.idle = d.c.idle.PushFront(d)
		d.c.trimLocked()
	}
}

// trimLocked closes idle descriptors, oldest first, while over the limit.
func (c *dirCache) trimLocked() {
	for c.open > c.max {
		e := c.idle.Back()
		if e == nil {
			return // all in use: the limit is exceeded only while they are
		}
		d := e.Value.(*descriptor)
		c.idle.Remove(e)
		d.idle = nil
		unix.Close(d.fd)
		d.fd = -1
		c.open--
	}
}

func (d *descriptor) get() int {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.fd
}

// set gives a descriptor that has none the fd of a pin (never evicted);
// a closed tree's closes it instead.
func (d *descriptor) set(fd int) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if d.c.closed {
		unix.Close(fd)
		return
	}
	d.fd = fd
}

// keep makes the descriptor one the cache never closes.
func (d *descriptor) keep() {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if !d.evictable {
		return
	}
	d.evictable = false
	if d.idle != nil {
		d.c.idle.Remove(d.idle)
		d.idle = nil
	}
	if d.fd >= 0 {
		d.c.open--
	}
}

func (d *descriptor) close() {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	d.closeLocked()
}

func (d *descriptor) closeLocked() {
	if d.fd < 0 {
		return
	}
	unix.Close(d.fd)
	d.fd = -1
	if d.idle != nil {
		d.c.idle.Remove(d.idle)
		d.idle = nil
	}
	if d.evictable {
		d.c.open--
	}
}

// hold returns the directory's descriptor, opening it again if the cache
// closed it, and keeps it open until the matching unhold. It fails with
// EBADF once the tree is closed.
func (n *node) hold() (int, error) {
	d := n.fd
	for try := 0; ; try++ {
		d.c.mu.Lock()
		if d.c.closed {
			d.c.mu.Unlock()
			return -1, syscall.EBADF
		}
		if d.fd >= 0 {
			fd := d.fd
			d.users++
			if d.idle != nil {
				d.c.idle.Remove(d.idle)
				d.idle = nil
			}
			d.c.mu.Unlock()
			return fd, nil
		}
		up := n.parent
		d.c.mu.Unlock()
		fd, err := n.reopen(up)
		if err != nil {
			if try < 2 && n.parentMoved(up) {
				continue // renamed through the tree meanwhile
			}
			return -1, err
		}
		d.c.mu.Lock()
		if d.fd >= 0 || d.c.closed {
			unix.Close(fd) // another call reopened it first, or the tree closed
		} else {
			d.fd = fd
			if d.evictable {
				d.c.open++
			}
		}
		d.c.mu.Unlock()
	}
}

// unhold ends a hold; the last one lists the descriptor idle.
func (n *node) unhold() {
	d := n.fd
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	d.users--
	if d.users == 0 && d.c.closed {
		d.closeLocked() // the tree closed while the call held it
		return
	}
	if d.users == 0 && d.evictable && d.fd >= 0 {
		d.idle = d.c.idle.PushFront(d)
		d.c.trimLocked()
	}
}

// inDir runs fn on the directory's held descriptor.
func (n *node) inDir(fn func(fd int) error) error {
	fd, err := n.hold()
	if err != nil {
		return err
	}
	defer n.unhold()
	return fn(fd)
}

// reopen opens the directory again by its name in its parent, and checks
// it is the same directory.
func (n *node) reopen(up link) (int, error) {
	if up.dir == nil {
		return -1, syscall.ESTALE // the root, or removed
	}
	var fd int
	err := up.dir.inDir(func(dirfd int) (err error) {
		fd, err = unix.Openat(dirfd, up.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return -1, syscall.ESTALE
	}
	if err != nil {
		return -1, err
	}
	var st unix.Statx_t
	if err := fstatx(fd, &st); err != nil || n.sameFile(&st) != nil {
		unix.Close(fd)
		return -1, syscall.ESTALE
	}
	return fd, nil
}

// setParent records the directory's one name; dir nil says it has none
// (removed). The descriptor of a removed directory is never closed by the
// cache: it could not be opened again.
func (n *node) setParent(l link) {
	n.fd.c.mu.Lock()
	n.parent = l
	n.fd.c.mu.Unlock()
	if l.dir == nil {
		n.fd.keep()
	}
}

func (n *node) parentMoved(was link) bool {
	n.fd.c.mu.Lock()
	defer n.fd.c.mu.Unlock()
	return n.parent != was
}
