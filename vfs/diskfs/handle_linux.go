package diskfs

import (
	"context"
	"encoding/binary"
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// fileHandle is an open host file. Its descriptor is offered to edges as a
// vfs.HostFile so FUSE can pass data through the kernel.
type fileHandle struct {
	fd int
	n  *node
	// use orders the node's borrowing of fd (node.withOpenFd) before its
	// close: the number must not be closed, and given to another file,
	// under a borrower. shut says it was.
	use  sync.RWMutex
	shut bool
	// locked and flocked say a record lock or a flock was taken through
	// the handle, which its close must then let go (lock_linux.go).
	locked, flocked atomic.Bool
}

// HostFd offers the descriptor for passthrough. The kernel uses it only to
// name the backing file: each open of the FUSE file gets a backing file of
// its own, opened with that open's flags.
func (h *fileHandle) HostFd() (int, bool) { return h.fd, true }

func (h *fileHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Pread(h.fd, p, off)
		if err == syscall.EINTR && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return 0, vfs.Error("read", "", errno(err))
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// WriteAt writes all of p: a short write from the host is continued, so the
// edges never report a partial write that the disk could have taken. When
// the disk refuses part way (ENOSPC), the count written comes with the
// error, as io.WriterAt requires.
func (h *fileHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pwrite(h.fd, p[done:], off+int64(done))
		if err == syscall.EINTR && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return done, vfs.Error("write", "", errno(err))
		}
		done += n
	}
	return done, nil
}

func (h *fileHandle) Close() error {
	h.dropLocks()
	h.use.Lock()
	h.shut = true
	err := unix.Close(h.fd)
	h.use.Unlock()
	h.n.closed(h)
	if err != nil {
		return vfs.Error("close", "", errno(err))
	}
	return nil
}

func (h *fileHandle) Sync(context.Context) error {
	if err := unix.Fsync(h.fd); err != nil {
		return vfs.Error("fsync", "", errno(err))
	}
	return nil
}

func (h *fileHandle) Attr(context.Context) (vfs.Attr, error) {
	var st unix.Statx_t
	if err := fstatx(h.fd, &st); err != nil {
		return vfs.Attr{}, vfs.Error("fstat", "", errno(err))
	}
	a := toAttr(&st)
	a.Watched = h.n.nameWatched()
	return a, nil
}

// SetAttr changes the open file itself: ftruncate works on a handle opened
// for writing whatever the file's mode now says (git writes loose objects
// that way).
func (h *fileHandle) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if s.Has(vfs.SetSize) {
		if err := unix.Ftruncate(h.fd, s.Size); err != nil {
			return vfs.Attr{}, vfs.Error("ftruncate", "", errno(err))
		}
		s.Valid &^= vfs.SetSize
	}
	if s.Valid != 0 {
		if err := setAttrFd(h.fd, s); err != nil {
			return vfs.Attr{}, vfs.Error("setattr", "", errno(err))
		}
	}
	return h.Attr(ctx)
}

func (h *fileHandle) Allocate(_ context.Context, off, size int64, mode uint32) error {
	if err := unix.Fallocate(h.fd, mode, off, size); err != nil {
		return vfs.Error("fallocate", "", errno(err))
	}
	return nil
}

// dirHandle is an open host directory, read with getdents64. Its offsets
// are the filesystem's own directory cookies, which stay valid while
// entries come and go (ext4 hashes, for instance).
type dirHandle struct {
	mu  sync.Mutex
	fd  int
	pos uint64 // the cookie the descriptor's position is at
	buf []byte
	// hide is what the listing leaves out.
	hide *Hidden
}

func (h *dirHandle) ReadDir(_ context.Context, off uint64) ([]vfs.DirEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off != h.pos {
		if _, err := unix.Seek(h.fd, int64(off), io.SeekStart); err != nil {
			return nil, vfs.Error("readdir", "", errno(err))
		}
		h.pos = off
	}
	if h.buf == nil {
		h.buf = make([]byte, 32<<10)
	}
	for {
		n, err := unix.Getdents(h.fd, h.buf)
		if err != nil {
			return nil, vfs.Error("readdir", "", errno(err))
		}
		if n <= 0 {
			return nil, nil
		}
		entries := h.hide.listed(h.fd, parseDirents(h.buf[:n]))
		h.pos = lastNext(h.buf[:n])
		if len(entries) > 0 {
			return entries, nil
		}
		// The batch held only "." and ".." or hidden entries: read on.
	}
}

// parseDirents decodes linux_dirent64 records, leaving out "." and "..":
// edges add those themselves.
func parseDirents(b []byte) []vfs.DirEntry {
	var out []vfs.DirEntry
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		name := cstring(b[19:reclen])
		if name != "." && name != ".." {
			out = append(out, vfs.DirEntry{
				Name: name,
				Ino:  binary.NativeEndian.Uint64(b[0:8]),
				Type: uint32(b[18]) << 12, // DT_* << 12 is S_IF*
				Next: binary.NativeEndian.Uint64(b[8:16]),
			})
		}
		b = b[reclen:]
	}
	return out
}

// lastNext returns the cookie after the last record of a getdents batch.
func lastNext(b []byte) uint64 {
	var next uint64
	for len(b) >= 19 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			break
		}
		next = binary.NativeEndian.Uint64(b[8:16])
		b = b[reclen:]
	}
	return next
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (h *dirHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", "", syscall.EISDIR)
}

func (h *dirHandle) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("write", "", syscall.EISDIR)
}

func (h *dirHandle) Sync(context.Context) error {
	if err := unix.Fsync(h.fd); err != nil {
		return vfs.Error("fsync", "", errno(err))
	}
	return nil
}

func (h *dirHandle) Close() error {
	if err := unix.Close(h.fd); err != nil {
		return vfs.Error("close", "", errno(err))
	}
	return nil
}
