//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/gsvfs/gsvfs/vfs"
)

// The writeback cache (FUSE_WRITEBACK_CACHE) lets the kernel gather small
// writes in its page cache and send them in large batches at writeback,
// close(2) and fsync(2): a 4 KiB write then costs no round trip to the
// daemon. The kernel refuses passthrough on a connection that has it, so
// it is on only where passthrough is not in use: an ordinary user's
// mount (the kernel gives backing files to CAP_SYS_ADMIN alone) and
// --no-passthrough. Under it the kernel owns a stored file's size and
// times, and the daemon meets what that demands (gsvfs-mount(1)):
//   - the kernel reads pages to fill partial ones, also through a handle
//     its caller opened write-only (openFlags);
//   - it computes O_APPEND offsets itself (openFlags);
//   - it writes dirty pages before every close(2) (FLUSH is sent under
//     the writeback cache even to handles opened with FOPEN_NOFLUSH);
//   - it takes no size from the daemon for a file it has, so a file that
//     grew on the disk is pushed into its cache (grown).
func writebackWanted(opts Options) bool {
	return opts.NoPassthrough || os.Geteuid() != 0
}

// openFlags are the flags a stored file is opened with for the kernel's
// open with flags. Under the writeback cache the kernel reads through any
// handle, so a write-only open becomes read-write where the caller may
// also read; and it sends writes at the offsets it computed for O_APPEND,
// which the daemon's descriptor must not move to its own end of file.
// retry reports the flags to try when the read-write open is refused (a
// write-only file): the kernel then cannot fill partial pages, and such
// writes fail with EBADF (gsvfs-mount(1)).
func (s *server) openFlags(flags uint32, volatile bool) (open, retry int) {
	open = int(flags)
	if !s.writeback || volatile {
		return open, -1
	}
	open &^= syscall.O_APPEND
	if open&syscall.O_ACCMODE != syscall.O_WRONLY {
		return open, -1
	}
	return open&^syscall.O_ACCMODE | syscall.O_RDWR, open
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
// page into the kernel's cache (FUSE_NOTIFY_STORE) moves the kernel's end
// to the new one; the pages before it are read when asked for. A file
// that shrank outside shows its new size once read up to its end, or
// once the kernel forgets it (gsvfs-mount(1)).
//
// Only while no handle of the mount may write the file: the kernel holds
// dirty pages of a file only while one does, and the store would
// overwrite the last of them with what the disk has. A writer's open waits for a store under
// way (writers.mu). While a writer has it open the kernel's size stands
// until the kernel forgets the file.
func (n *node) grown(a vfs.Attr) bool {
	if !n.srv.writeback || a.Volatile || a.Type() != syscall.S_IFREG || a.Size <= 0 {
		return false
	}
	n.writers.mu.Lock()
	defer n.writers.mu.Unlock()
	if n.writers.n > 0 {
		return false
	}
	ctx := context.Background()
	h, err := n.vn.Open(ctx, syscall.O_RDONLY)
	if err != nil {
		return false // gone again, or not ours to read: the next lookup tells
	}
	defer h.Close()
	const page = 4096
	start := (a.Size - 1) / page * page
	buf := make([]byte, a.Size-start)
	got, err := h.ReadAt(ctx, buf, start)
	if err != nil && !errors.Is(err, io.EOF) || got == 0 {
		return false
	}
	return n.WriteCache(start, buf[:got]) == 0
}

// forgetsChanged says whether a file whose content changed outside must
// also lose its name in the kernel: under the writeback cache that is the
// one way to make the kernel take a size from the daemon again (a name
// dropped lets the kernel forget the inode unless something holds it
// open), which a file that shrank needs.
func (s *server) forgetsChanged(a vfs.Attr, data bool) bool {
	return s.writeback && data && !a.Volatile && a.Type() == syscall.S_IFREG
}

// writers counts the mount's open handles that may write a file.
type writers struct {
	mu sync.Mutex
	n  int
}

// addWriter counts fh, an open handle that may write n, until its release.
func (n *node) addWriter(fh gofs.FileHandle) {
	f, ok := fh.(*fileHandle)
	if !ok || !n.srv.writeback || n.volatile {
		return
	}
	n.writers.mu.Lock()
	n.writers.n++
	n.writers.mu.Unlock()
	f.writerOf = n
}

func (f *fileHandle) dropWriter() {
	if n := f.writerOf; n != nil {
		n.writers.mu.Lock()
		n.writers.n--
		n.writers.mu.Unlock()
	}
}

// sized tells the kernel a regular file's size where the daemon answers
// for it (getattr) under the writeback cache, which would otherwise keep
// the size it first had: generated content (a session's output) grows
// with no change reported, and so do stored files no watch covers. The
// kernel serves generated content with direct I/O and never reads its
// page cache, so one byte stored at the new end moves the size; a stored
// file gets its last page (grown). A file that shrank keeps the kernel's
// size until the kernel forgets it (gsvfs-mount(1)).
func (n *node) sized(a vfs.Attr) {
	if !n.srv.writeback || a.Type() != syscall.S_IFREG || a.Size <= 0 || a.Watched && n.srv.watch.on.Load() {
		return
	}
	if n.told.Load() == a.Size {
		return
	}
	if n.volatile && n.WriteCache(a.Size-1, []byte{0}) == 0 || !n.volatile && n.grown(a) {
		n.told.Store(a.Size)
	}
}
