package ninep

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDarwinHost checks, on a Mac, that the numbers darwinTable writes
// out are the ones the system's own constants have.
func TestDarwinHost(t *testing.T) {
	flags := []struct {
		name string
		host int
		wire wireOpenFlags
	}{
		{"O_WRONLY", syscall.O_WRONLY, wO_WRONLY}, {"O_RDWR", syscall.O_RDWR, wO_RDWR},
		{"O_APPEND", syscall.O_APPEND, wO_APPEND}, {"O_TRUNC", syscall.O_TRUNC, wO_TRUNC},
		{"O_CREAT", syscall.O_CREAT, wO_CREAT}, {"O_EXCL", syscall.O_EXCL, wO_EXCL},
		{"O_NONBLOCK", syscall.O_NONBLOCK, wO_NONBLOCK}, {"O_DIRECTORY", syscall.O_DIRECTORY, wO_DIRECTORY},
		{"O_NOFOLLOW", syscall.O_NOFOLLOW, wO_NOFOLLOW}, {"O_SYNC", syscall.O_SYNC, wO_SYNC},
		{"O_DSYNC", syscall.O_DSYNC, wO_DSYNC}, {"O_CLOEXEC", syscall.O_CLOEXEC, wO_CLOEXEC},
		{"O_NOCTTY", syscall.O_NOCTTY, wO_NOCTTY},
	}
	for _, f := range flags {
		if got := host.openToWire(f.host); got != f.wire {
			t.Errorf("%s: host %#x goes on the wire as %#x, want %#x", f.name, f.host, got, f.wire)
		}
	}
	errnos := []struct {
		host syscall.Errno
		wire wireErrno
	}{
		{syscall.ENOTEMPTY, wENOTEMPTY}, {syscall.EAGAIN, wEAGAIN}, {syscall.EDEADLK, wEDEADLK},
		{syscall.ENAMETOOLONG, wENAMETOOLONG}, {syscall.ELOOP, wELOOP}, {syscall.ENOTSUP, wENOTSUP},
		{syscall.EOPNOTSUPP, wEOPNOTSUPP}, {syscall.ENODATA, wENODATA}, {syscall.ENOATTR, wENODATA},
		{syscall.ESTALE, wESTALE}, {syscall.EDQUOT, wEDQUOT}, {syscall.ENOSYS, wENOSYS},
		{syscall.ENOLCK, wENOLCK}, {syscall.ETIMEDOUT, wETIMEDOUT}, {syscall.EOVERFLOW, wEOVERFLOW},
	}
	for _, e := range errnos {
		if got := host.errnoToWire(e.host); got != e.wire {
			t.Errorf("errno %d (%v) goes on the wire as %d, want %d", e.host, e.host, got, e.wire)
		}
	}
	if host.xattrToWire(unix.XATTR_CREATE) != wXATTR_CREATE || host.xattrToWire(unix.XATTR_REPLACE) != wXATTR_REPLACE {
		t.Errorf("XATTR_CREATE, XATTR_REPLACE go on the wire as %d, %d; want 1, 2",
			host.xattrToWire(unix.XATTR_CREATE), host.xattrToWire(unix.XATTR_REPLACE))
	}
	if ma, mi := host.devSplit(uint64(unix.Mkdev(16, 5))); ma != 16 || mi != 5 {
		t.Errorf("device 16,5 splits into %d,%d", ma, mi)
	}
}
