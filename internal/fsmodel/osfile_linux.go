package fsmodel

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// OSFile is a File of the operating system: an open descriptor of a path.
type OSFile struct{ *os.File }

// OpenPath returns a Config.Open for the file at path.
func OpenPath(path string) func(create bool) (File, error) {
	return func(create bool) (File, error) {
		flags := os.O_RDWR
		if create {
			flags |= os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return nil, err
		}
		return OSFile{f}, nil
	}
}

// Size is fstat's size.
func (f OSFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// unsupported wraps the errors by which a path says it has no such call
// in errors.ErrUnsupported; others it returns as they are.
func unsupported(what string, err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%w: %s: %v", errors.ErrUnsupported, what, err)
	}
	return err
}

// mapped calls fn with a shared mapping of the pages that hold off..off+n
// and the offset of off in it. A fault on the mapping (SIGBUS past what
// the kernel thinks the file's end) comes back as an error.
func (f OSFile) mapped(off, n int64, prot int, fn func(m []byte, at int64) error) (err error) {
	start := off &^ (page - 1)
	m, err := unix.Mmap(int(f.Fd()), start, int(off+n-start), prot, unix.MAP_SHARED)
	if errors.Is(err, unix.EINVAL) {
		// The arguments are right (an aligned offset, a length): this
		// is how a file system with read-only mappings only refuses a
		// shared one of a file open for writing
		// (generic_file_readonly_mmap: v9fs without a cache).
		return fmt.Errorf("%w: a shared mmap of a file open for writing: %v", errors.ErrUnsupported, err)
	}
	if err != nil {
		return unsupported("mmap", err)
	}
	defer unix.Munmap(m)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("fault on the mapping: %v", p)
		}
	}()
	return fn(m, off-start)
}

// MapRead copies n bytes at off out of a shared mapping.
func (f OSFile) MapRead(off, n int64) ([]byte, error) {
	b := make([]byte, n)
	err := f.mapped(off, n, unix.PROT_READ, func(m []byte, at int64) error {
		copy(b, m[at:])
		return nil
	})
	return b, err
}

// MapWrite writes p at off through a shared mapping and msyncs it.
func (f OSFile) MapWrite(p []byte, off int64) error {
	return f.mapped(off, int64(len(p)), unix.PROT_READ|unix.PROT_WRITE, func(m []byte, at int64) error {
		copy(m[at:], p)
		return unix.Msync(m, unix.MS_SYNC)
	})
}

// CopyRange is one copy_file_range(2) from the file to itself.
func (f OSFile) CopyRange(src, dst, n int64) (int64, error) {
	fd := int(f.Fd())
	c, err := unix.CopyFileRange(fd, &src, fd, &dst, int(n), 0)
	return int64(c), unsupported("copy_file_range", err)
}

// Allocate is fallocate(2) with mode 0 or FALLOC_FL_KEEP_SIZE.
func (f OSFile) Allocate(off, n int64, keepSize bool) error {
	mode := uint32(0)
	if keepSize {
		mode = unix.FALLOC_FL_KEEP_SIZE
	}
	return unsupported("fallocate", unix.Fallocate(int(f.Fd()), mode, off, n))
}

// PunchHole is fallocate(2) with FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE.
func (f OSFile) PunchHole(off, n int64) error {
	return unsupported("punch hole", unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n))
}
