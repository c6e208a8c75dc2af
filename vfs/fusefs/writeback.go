//go:build linux

package fusefs

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// The writeback cache (FUSE_WRITEBACK_CACHE) lets the kernel gather small
// writes in its page cache and send them in large batches at writeback,
// close(2) and fsync(2): a 4 KiB write then costs no round trip to the
// daemon. The kernel refuses passthrough on a connection that has it, so
// it is on only where passthrough is not in use: an ordinary user's
// mount (the kernel gives backing files to CAP_SYS_ADMIN alone) and
// --no-passthrough. Under it the kernel owns a stored file's size and
// times, and the daemon meets what that demands (gsvfs-mount(1)).
//
// Invariants (each checked by the test named; pageguard.go has those of
// the kernel's view of a file):
//
//  1. The kernel reads pages to fill partial ones, also through a handle
//     its caller opened write-only (openFlags). (TestOpenFlagsUnderWriteback,
//     TestWritebackWriteOnlyAndAppend, TestUserMountCoherence/OnDiskAtClose.)
//  2. It computes O_APPEND offsets from the size it holds, so appending
//     handles bypass its cache and land at the disk's end (appendFlags).
//     (TestUserMountCoherence/AppendTwoProcesses, TestWritebackWriteOnlyAndAppend.)
//  3. What a process wrote is on the disk when close(2) or fsync(2)
//     returns (the kernel writes dirty pages back then), and within about
//     a second while the process holds the file open: the daemon makes the
//     kernel write back its dirty pages every second while any handle may
//     dirty them (flusher). (TestPageWritersCounted;
//     TestUserMountCoherence/OnDiskAtClose, OnDiskAtFsync, HeldFileOnDisk.)
//  4. The kernel takes no size from the daemon for a file it has but a
//     truncate's, so a file that grew or shrank on the disk is truncated
//     through the mount by the daemon, which answers that truncate from
//     the disk and leaves the disk as it is (mend, ownResize); failing
//     that, one that grew is pushed into the kernel's cache (grown), and
//     one that shrank is forgotten by name once no handle holds it
//     (shrank, unhold). The view takes the kernel's new size only once
//     the truncate has returned: an open that checks the file while the
//     kernel is yet to take the answer mends it again rather than return
//     with the old size. No byte is pushed over a page a process may
//     have written since it saw the change (bringTo).
//     (TestWritebackOutsideGrowthWhileOpen, TestCloseToOpen,
//     TestUserMountCloseToOpen, TestIntegrityFsx/no-passthrough/actor.)
//  5. Of the daemon's own SETATTRs with a size, only mend's is answered:
//     the daemon truncates no file through its mount otherwise.
//     (TestDaemonTruncateRefused.)

// writebackWanted says whether a mount with opts has the writeback cache:
// wherever passthrough cannot be.
func writebackWanted(opts Options) bool {
	return opts.NoPassthrough || os.Geteuid() != 0
}

// openFlags are the flags a stored file is opened with for the kernel's
// open with flags. Under the writeback cache the kernel reads through any
// handle it caches pages for, so a write-only open becomes read-write
// where the caller may also read. An O_APPEND open keeps its flags: its
// handle is served with direct I/O (appendFlags), and its descriptor
// appends at the disk's end of file. retry reports the flags to try when
// the read-write open is refused (a write-only file): the kernel then
// cannot fill partial pages, and such writes fail with EBADF
// (gsvfs-mount(1)).
func (s *server) openFlags(flags uint32, volatile bool) (open, retry int) {
	open = int(flags)
	if !s.writeback || volatile || open&syscall.O_APPEND != 0 {
		return open, -1
	}
	if open&syscall.O_ACCMODE != syscall.O_WRONLY {
		return open, -1
	}
	return open&^syscall.O_ACCMODE | syscall.O_RDWR, open
}

// appendFlags serves a stored file opened with O_APPEND under the
// writeback cache with direct I/O. The kernel computes an append's offset
// from the size it holds, which a writer on the disk may have moved; its
// pages would put the append there, over the other writer's. Sent to the
// daemon, each append lands at the disk's end of file, and the kernel is
// told the file's new end (ownChange).
func (s *server) appendFlags(fh gofs.FileHandle, flags uint32, volatile bool) uint32 {
	f, ok := fh.(*fileHandle)
	if !ok || !s.writeback || volatile || flags&syscall.O_APPEND == 0 {
		return 0
	}
	f.appends = true
	return fuse.FOPEN_DIRECT_IO
}

// withOpenFlags calls open with the flags openFlags gives, and again with
// the caller's own access mode where read-write is refused.
func (s *server) withOpenFlags(flags uint32, volatile bool, open func(flags int) error) error {
	first, retry := s.openFlags(flags, volatile)
	err := open(first)
	if err != nil && retry >= 0 && errors.Is(err, syscall.EACCES) {
		err = open(retry)
	}
	return err
}

// grown tells the kernel of a stored file that grew outside the mount.
// Under the writeback cache the kernel keeps the size it has for a file
// it holds (open, or still in its dentry cache) and ignores the daemon's,
// so it would read no further than the old end. Storing the file's last
// byte into the kernel's cache (FUSE_NOTIFY_STORE) moves the kernel's end
// to the new one; the page it lands in stays to be read from the disk,
// and so do the pages before it. A file that shrank outside shows its
// new size once the kernel forgets it (shrank, gsvfs-mount(1)).
//
// dropped says the kernel was just made to drop the file's pages
// (bringTo, where mend could not move the size): a process writing the
// file since may have dirtied the page again, and loses the byte
// (gsvfs-mount(1)). Otherwise only while no handle of the mount may write the file through
// its pages, which the kernel holds dirty only while one does; a writer's
// open waits for a store under way (writers.mu). The kernel's size then
// stands until the kernel forgets the file.
func (n *node) grown(a vfs.Attr, dropped bool) bool {
	if !n.srv.writeback || a.Volatile || a.Type() != syscall.S_IFREG || a.Size <= 0 {
		return false
	}
	n.writers.mu.Lock()
	defer n.writers.mu.Unlock()
	if n.writers.n > 0 && !dropped {
		return false
	}
	ctx := context.Background()
	h, err := n.vn.Open(ctx, syscall.O_RDONLY)
	if err != nil {
		return false // gone again, or not ours to read: the next lookup tells
	}
	defer h.Close()
	last := make([]byte, 1)
	if got, _ := h.ReadAt(ctx, last, a.Size-1); got != 1 {
		return false // shorter again: the watch reports it
	}
	if n.WriteCache(a.Size-1, last) != 0 {
		return false
	}
	n.view.grew(a.Size)
	return true
}

// forgetsChanged says whether a file whose content changed outside must
// also lose its name in the kernel: under the writeback cache that is the
// one way to make the kernel take a size from the daemon again (a name
// dropped lets the kernel forget the inode unless something holds it
// open), which a file that shrank needs, and it ends the file's sharing
// (pageguard.go) once nothing holds it.
func (s *server) forgetsChanged(a vfs.Attr, data bool) bool {
	return s.writeback && data && !a.Volatile && a.Type() == syscall.S_IFREG
}

// writers counts the mount's open handles of a file, and those that may
// write it through the kernel's pages.
type writers struct {
	mu    sync.Mutex
	n     int  // writing through the pages
	open  int  // all
	short bool // shrank outside while held: the kernel's size is too large
}

// hold counts fh, an open handle of n, until its release; writes says
// whether it may write. An appending handle writes past the kernel's
// pages. (One served with direct I/O does too, but a shared mapping of
// it dirties pages all the same.)
func (n *node) hold(fh gofs.FileHandle, writes bool) {
	f, ok := fh.(*fileHandle)
	if !ok || !n.srv.writeback || n.volatile {
		return
	}
	f.node, f.pageWriter = n, writes && !f.appends
	n.writers.mu.Lock()
	n.writers.open++
	if f.pageWriter {
		n.writers.n++
		n.srv.pageWriters.Add(1)
	}
	n.writers.mu.Unlock()
}

// unhold ends what hold began. The last handle of a file that shrank
// outside while the kernel held it takes the file's names from the
// kernel, so that the kernel forgets it and takes its size anew at the
// next lookup: nothing else makes it give up a size under the writeback
// cache.
func (f *fileHandle) unhold() {
	n := f.node
	if n == nil {
		return
	}
	n.writers.mu.Lock()
	n.writers.open--
	if f.pageWriter {
		n.writers.n--
		n.srv.pageWriters.Add(-1)
	}
	forget := n.writers.open == 0 && n.writers.short
	if forget {
		n.writers.short = false
	}
	n.writers.mu.Unlock()
	if forget {
		n.forgetName()
	}
}

// forgetName takes the file's name from the kernel, which then forgets
// the inode once nothing holds it. (Parent takes go-fuse's inode lock:
// only when needed.)
func (n *node) forgetName() {
	if name, parent := n.Parent(); parent != nil {
		parent.NotifyEntry(name)
	}
}

// shrank records that the kernel may keep a larger size for the file
// than the disk's: its names go at its last release (unhold), or at once
// where the watch reports the change and nothing holds it (forgetsChanged).
func (n *node) shrank() {
	n.writers.mu.Lock()
	n.writers.short = true
	n.writers.mu.Unlock()
}

// sized tells the kernel a regular file's size where the daemon answers
// for it (getattr) under the writeback cache, which would otherwise keep
// the size it first had: generated content (a session's output) grows
// with no change reported, and so do stored files no watch covers. The
// kernel serves generated content with direct I/O and never reads its
// page cache, so one byte stored at the new end moves the size; a stored
// file gets its last byte (grown). Generated content that shrank keeps
// the kernel's size until the kernel forgets the file (gsvfs-mount(1)).
func (n *node) sized(a vfs.Attr) {
	if !n.srv.writeback || a.Type() != syscall.S_IFREG || a.Size <= 0 || a.Watched && n.srv.watch.on.Load() {
		return
	}
	if n.told.Load() == a.Size {
		return
	}
	if n.volatile && n.WriteCache(a.Size-1, []byte{0}) == 0 || !n.volatile && n.grown(a, false) {
		n.told.Store(a.Size)
	}
}

// flushEvery bounds how long the kernel keeps a page written through the
// mount dirty while the writer holds the file open: without it the
// kernel's own expiry (vm.dirty_expire_centisecs, 30 s by default, for
// the whole machine) decides, and programs reading the state directory
// (a /proc session) see nothing of a log held open, nor does the disk
// keep it if the daemon dies.
const flushEvery = time.Second

// flusher makes the kernel write back the mount's dirty pages every
// flushEvery while any handle may dirty them (invariant 3). FUSE has no
// notice that writes back without dropping pages, so the daemon asks as
// any process may: syncfs(2) on the mount, through a descriptor of its
// root opened for the call alone (one held would keep the mount busy).
// It ends when stop closes, and closes done.
func (m *Mount) flusher(dev uint64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if m.srv.pageWriters.Load() > 0 {
			syncMount(m.Dir, dev)
		}
	}
}

// syncMount writes back the dirty pages of the file system at dir if it
// is still the one of device dev (not one mounted over it since).
func syncMount(dir string, dev uint64) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // unmounted, or going
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Dev == dev {
		unix.Syncfs(fd)
	}
}

// startFlusher starts the flusher of a mount under the writeback cache.
func (m *Mount) startFlusher() {
	var st unix.Stat_t
	if !m.srv.writeback || unix.Stat(m.Dir, &st) != nil {
		return
	}
	m.flushStop, m.flushDone = make(chan struct{}), make(chan struct{})
	go m.flusher(st.Dev, m.flushStop, m.flushDone)
}

// stopFlusher ends the flusher and waits for a syncfs under way, so that
// no descriptor of it keeps the mount busy.
func (m *Mount) stopFlusher() {
	if m.flushStop == nil {
		return
	}
	m.flushOnce.Do(func() { close(m.flushStop) })
	<-m.flushDone
}

// resize is a node's record of the daemon's own truncate through the
// mount (mend): the one SETATTR with a size the daemon may send itself.
type resize struct {
	mu      sync.Mutex // one mend at a time
	pending atomic.Bool
	replied atomic.Int64 // the size mend's truncate was answered with
	// current, while pending, says whether the mend is still wanted,
	// asked as the kernel holds the inode's lock for the truncate (no
	// write(2) of the file under way); nil: always.
	current atomic.Pointer[func() bool]
}

// mend moves the kernel's size of the file to the disk's (the file grew
// or shrank outside while the kernel had it), and says whether it did.
// Under the writeback cache the one reply the kernel takes a size from
// for a file it has is a truncate's, so the daemon truncates the file
// through its own mount: it reaches the inode by its name with O_PATH (no
// open request, no data), checks that the name still leads to this very
// inode, and truncates through the descriptor's /proc link. Its SETATTR
// answers with the disk's attributes and leaves the disk as it is
// (ownResize). The kernel's dirty pages are written back first: a
// truncate drops those past the new end.
//
// current (nil: always) says whether the mend is still wanted; asked
// under the kernel's lock of the inode, as the truncate is answered, so
// that a mend brought in the background after a process went on (it saw
// the change through an open that brought the kernel to it) does not cut
// what the process wrote since: it is refused (stale), and leaves the
// kernel's size as it is.
//
// No lock of the daemon is held: the kernel holds the inode's lock for
// the truncate and waits for the file's write-backs in flight, which
// take the view's lock. The open that asks is not an O_TRUNC one, which
// alone holds the inode's lock during its request (fuse_open).
func (n *node) mend(size int64, current func() bool) (done, stale bool) {
	dir, dev := n.srv.mountDir, n.srv.mountDev
	if dir == "" {
		return false, false
	}
	n.resize.mu.Lock()
	defer n.resize.mu.Unlock()
	fd, err := unix.Open(dir+"/"+n.Path(nil), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != dev || st.Ino != n.StableAttr().Ino {
		return false, false // renamed or replaced meanwhile: not this file's name
	}
	n.NotifyContent(0, 0)
	n.resize.current.Store(&current)
	n.resize.pending.Store(true)
	defer n.resize.pending.Store(false)
	link := "/proc/self/fd/" + strconv.Itoa(fd)
	err = unix.Truncate(link, size)
	if err == nil {
		// Only now does the kernel hold the size: an open that read
		// the view meanwhile must have mended it itself.
		n.view.resized(n.resize.replied.Load())
		n.mendTimes(link)
	}
	if err != nil {
		n.srv.log.Debug("the kernel's size of the file stays", "ino", n.StableAttr().Ino, "err", err)
	}
	return err == nil, err == syscall.ESTALE
}

// mendTimes gives the kernel the disk's times of the file after mend's
// truncate, for which the kernel took the time of the truncate: under
// the writeback cache it keeps its own times, save those a SETATTR sets.
// That SETATTR is mend's too (ownResize).
func (n *node) mendTimes(link string) {
	a, err := n.vn.Attr(context.Background())
	if err != nil {
		return
	}
	ts := []unix.Timespec{unix.NsecToTimespec(a.Atime.UnixNano()), unix.NsecToTimespec(a.Mtime.UnixNano())}
	unix.UtimesNano(link, ts)
}

// ownResize answers a SETATTR with a size, or one of times while mend
// runs: the daemon's own (mend) with the disk's attributes, untouched;
// any other of the daemon's with a size is refused,
// so that nothing the daemon runs truncates a file through its mount.
// handled says the request was the daemon's.
func (n *node) ownResize(ctx context.Context, sized bool, out *fuse.AttrOut) (handled bool, errno syscall.Errno) {
	if !n.srv.writeback || !sized && !n.resize.pending.Load() || callerProcess(ctx) != os.Getpid() {
		return false, 0
	}
	if !n.resize.pending.Load() {
		return true, syscall.EPERM
	}
	if current := n.resize.current.Load(); sized && current != nil && *current != nil && !(*current)() {
		return true, syscall.ESTALE // no longer wanted (mend)
	}
	a, err := n.vn.Attr(ctx)
	if err != nil {
		return true, n.srv.toErrno("setattr", err)
	}
	if sized {
		n.resize.replied.Store(a.Size) // the view takes it once the kernel has (mend)
	}
	n.answerAttr(out, a, false)
	return true, 0
}
