package ninep

import (
	"context"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// darwinHost is macOS's numbers, which every OS compiles (host_darwin_table.go).
var darwinHost = newHostNumbers(darwinTable)

// macErrnos is macOS's <sys/errno.h> beside Linux's <asm-generic/errno*.h>:
// each errno's name, its number on a Mac and its number on the wire.
var macErrnos = []struct {
	name        string
	mac, linux  syscall.Errno
	fromWireMac syscall.Errno // what the wire's number turns back into, if not mac
}{
	{"EPERM", 1, 1, 0}, {"ENOENT", 2, 2, 0}, {"ESRCH", 3, 3, 0}, {"EINTR", 4, 4, 0},
	{"EIO", 5, 5, 0}, {"ENXIO", 6, 6, 0}, {"E2BIG", 7, 7, 0}, {"ENOEXEC", 8, 8, 0},
	{"EBADF", 9, 9, 0}, {"ECHILD", 10, 10, 0}, {"EDEADLK", 11, 35, 0}, {"ENOMEM", 12, 12, 0},
	{"EACCES", 13, 13, 0}, {"EFAULT", 14, 14, 0}, {"ENOTBLK", 15, 15, 0}, {"EBUSY", 16, 16, 0},
	{"EEXIST", 17, 17, 0}, {"EXDEV", 18, 18, 0}, {"ENODEV", 19, 19, 0}, {"ENOTDIR", 20, 20, 0},
	{"EISDIR", 21, 21, 0}, {"EINVAL", 22, 22, 0}, {"ENFILE", 23, 23, 0}, {"EMFILE", 24, 24, 0},
	{"ENOTTY", 25, 25, 0}, {"ETXTBSY", 26, 26, 0}, {"EFBIG", 27, 27, 0}, {"ENOSPC", 28, 28, 0},
	{"ESPIPE", 29, 29, 0}, {"EROFS", 30, 30, 0}, {"EMLINK", 31, 31, 0}, {"EPIPE", 32, 32, 0},
	{"EDOM", 33, 33, 0}, {"ERANGE", 34, 34, 0}, {"EAGAIN", 35, 11, 0}, {"EINPROGRESS", 36, 115, 0},
	{"EALREADY", 37, 114, 0}, {"ENOTSOCK", 38, 88, 0}, {"EDESTADDRREQ", 39, 89, 0},
	{"EMSGSIZE", 40, 90, 0}, {"EPROTOTYPE", 41, 91, 0}, {"ENOPROTOOPT", 42, 92, 0},
	{"EPROTONOSUPPORT", 43, 93, 0}, {"ESOCKTNOSUPPORT", 44, 94, 0},
	{"ENOTSUP", 45, 95, 102}, // Linux has one number for both: it comes back EOPNOTSUPP
	{"EPFNOSUPPORT", 46, 96, 0}, {"EAFNOSUPPORT", 47, 97, 0}, {"EADDRINUSE", 48, 98, 0},
	{"EADDRNOTAVAIL", 49, 99, 0}, {"ENETDOWN", 50, 100, 0}, {"ENETUNREACH", 51, 101, 0},
	{"ENETRESET", 52, 102, 0}, {"ECONNABORTED", 53, 103, 0}, {"ECONNRESET", 54, 104, 0},
	{"ENOBUFS", 55, 105, 0}, {"EISCONN", 56, 106, 0}, {"ENOTCONN", 57, 107, 0},
	{"ESHUTDOWN", 58, 108, 0}, {"ETOOMANYREFS", 59, 109, 0}, {"ETIMEDOUT", 60, 110, 0},
	{"ECONNREFUSED", 61, 111, 0}, {"ELOOP", 62, 40, 0}, {"ENAMETOOLONG", 63, 36, 0},
	{"EHOSTDOWN", 64, 112, 0}, {"EHOSTUNREACH", 65, 113, 0}, {"ENOTEMPTY", 66, 39, 0},
	{"EPROCLIM", 67, 5, 5}, {"EUSERS", 68, 87, 0}, {"EDQUOT", 69, 122, 0}, {"ESTALE", 70, 116, 0},
	{"EREMOTE", 71, 66, 0}, {"EBADRPC", 72, 5, 5}, {"ENOLCK", 77, 37, 0}, {"ENOSYS", 78, 38, 0},
	{"EFTYPE", 79, 5, 5}, {"EOVERFLOW", 84, 75, 0}, {"ECANCELED", 89, 125, 0}, {"EIDRM", 90, 43, 0},
	{"ENOMSG", 91, 42, 0}, {"EILSEQ", 92, 84, 0},
	{"ENOATTR", 93, 61, 96}, // Linux says ENODATA of a missing attribute
	{"EBADMSG", 94, 74, 0}, {"EMULTIHOP", 95, 72, 0}, {"ENODATA", 96, 61, 0}, {"ENOLINK", 97, 67, 0},
	{"ENOSR", 98, 63, 0}, {"ENOSTR", 99, 60, 0}, {"EPROTO", 100, 71, 0}, {"ETIME", 101, 62, 0},
	{"EOPNOTSUPP", 102, 95, 0}, {"ENOTRECOVERABLE", 104, 131, 0}, {"EOWNERDEAD", 105, 130, 0},
}

// macOpenFlags is macOS's <sys/fcntl.h> beside Linux's generic
// <asm-generic/fcntl.h> (9P2000.L's P9_DOTL_*); 0 is a flag the other
// has not.
var macOpenFlags = []struct {
	name       string
	mac, linux int
}{
	{"O_WRONLY", 0x1, 0x1}, {"O_RDWR", 0x2, 0x2}, {"O_NONBLOCK", 0x4, 0x800}, {"O_APPEND", 0x8, 0x400},
	{"O_ASYNC", 0x40, 0x2000}, {"O_SYNC", 0x80, 0x101000}, {"O_NOFOLLOW", 0x100, 0x20000},
	{"O_CREAT", 0x200, 0x40}, {"O_TRUNC", 0x400, 0x200}, {"O_EXCL", 0x800, 0x80},
	{"O_NOCTTY", 0x20000, 0x100}, {"O_DIRECTORY", 0x100000, 0x10000}, {"O_DSYNC", 0x400000, 0x1000},
	{"O_CLOEXEC", 0x1000000, 0x80000},
	{"O_SHLOCK", 0x10, 0}, {"O_EXLOCK", 0x20, 0}, {"O_SYMLINK", 0x200000, 0},
	{"O_DIRECT", 0, 0x4000}, {"O_LARGEFILE", 0, 0x8000}, {"O_NOATIME", 0, 0x40000},
}

// TestDarwinTable proves macOS's conversion table entry by entry against
// the numbers of macOS's headers, on any OS.
func TestDarwinTable(t *testing.T) {
	for _, e := range macErrnos {
		if got := darwinHost.errnoToWire(e.mac); got != wireErrno(e.linux) {
			t.Errorf("%s: mac %d goes on the wire as %d, want %d", e.name, e.mac, got, e.linux)
		}
		want := e.mac
		if e.fromWireMac != 0 {
			want = e.fromWireMac
		}
		if got := darwinHost.errnoFromWire(wireErrno(e.linux)); got != want {
			t.Errorf("%s: wire %d comes to a mac as %d, want %d", e.name, e.linux, got, want)
		}
	}
	for _, f := range macOpenFlags {
		if f.mac != 0 {
			if got := darwinHost.openToWire(f.mac); got != wireOpenFlags(f.linux) {
				t.Errorf("%s: mac %#x goes on the wire as %#x, want %#x", f.name, f.mac, got, f.linux)
			}
		}
		if f.linux != 0 {
			if got := darwinHost.openFromWire(wireOpenFlags(f.linux)); got != f.mac {
				t.Errorf("%s: wire %#x comes to a mac as %#x, want %#x", f.name, f.linux, got, f.mac)
			}
		}
	}
	// <sys/xattr.h>: XATTR_NOFOLLOW 1, XATTR_CREATE 2, XATTR_REPLACE 4;
	// Linux's <linux/xattr.h>: XATTR_CREATE 1, XATTR_REPLACE 2.
	xattrs := []struct {
		name       string
		mac, linux int
	}{{"XATTR_CREATE", 2, 1}, {"XATTR_REPLACE", 4, 2}, {"XATTR_NOFOLLOW", 1, 0}}
	for _, x := range xattrs {
		if got := darwinHost.xattrToWire(x.mac); got != wireXattrFlags(x.linux) {
			t.Errorf("%s: mac %#x goes on the wire as %#x, want %#x", x.name, x.mac, got, x.linux)
		}
		if x.linux != 0 {
			if got := darwinHost.xattrFromWire(wireXattrFlags(x.linux)); got != x.mac {
				t.Errorf("%s: wire %#x comes to a mac as %#x, want %#x", x.name, x.linux, got, x.mac)
			}
		}
	}
}

// TestDarwinFileTypes checks macOS's <sys/stat.h> file types and
// <sys/dirent.h> entry types, the same octal as Linux's, through modes
// and dirent types, and that a whiteout (S_IFWHT) has no wire type.
func TestDarwinFileTypes(t *testing.T) {
	types := []struct {
		name       string
		mode, dt   uint32 // macOS's S_IF* and DT_*, the wire's the same
		wire       wireMode
		wireDirent wireDirentType
	}{
		{"fifo", 0o010000, 1, 0o010000, 1}, {"chr", 0o020000, 2, 0o020000, 2}, {"dir", 0o040000, 4, 0o040000, 4},
		{"blk", 0o060000, 6, 0o060000, 6}, {"reg", 0o100000, 8, 0o100000, 8}, {"lnk", 0o120000, 10, 0o120000, 10},
		{"sock", 0o140000, 12, 0o140000, 12}, {"wht", 0o160000, 14, 0, 0},
	}
	for _, ty := range types {
		if got := darwinHost.modeToWire(ty.mode | 0o4755); got != ty.wire|0o4755 {
			t.Errorf("%s: mode %#o goes on the wire as %#o, want %#o", ty.name, ty.mode|0o4755, got, ty.wire|0o4755)
		}
		if got := darwinHost.direntTypeToWire(ty.mode); got != ty.wireDirent {
			t.Errorf("%s: entry type goes on the wire as %d, want %d", ty.name, got, ty.wireDirent)
		}
		if ty.wire == 0 {
			continue
		}
		if got := darwinHost.modeFromWire(ty.wire | 0o644); got != ty.mode|0o644 {
			t.Errorf("%s: wire mode %#o comes to a mac as %#o, want %#o", ty.name, ty.wire|0o644, got, ty.mode|0o644)
		}
		if got := darwinHost.direntTypeFromWire(ty.wireDirent); got != ty.dt<<12 {
			t.Errorf("%s: wire entry type %d comes to a mac as %#o, want %#o", ty.name, ty.wireDirent, got, ty.dt<<12)
		}
	}
}

// TestDarwinDevices checks device numbers: macOS's <sys/types.h> packs
// major<<24 | minor; the wire packs them as Linux's stat does.
func TestDarwinDevices(t *testing.T) {
	devs := []struct {
		major, minor uint32
		mac          uint64
		wire         wireDev
	}{
		{1, 3, 0x01000003, 0x0103},              // /dev/null on Linux is 1,3
		{16, 5, 0x10000005, 0x1005},             // a tty
		{0xff, 0x12345, 0xff012345, 0x1230ff45}, // a minor past 8 bits
	}
	for _, d := range devs {
		if got := darwinHost.devToWire(d.mac); got != d.wire {
			t.Errorf("%d,%d: mac %#x goes on the wire as %#x, want %#x", d.major, d.minor, d.mac, got, d.wire)
		}
		if got := darwinHost.devFromWire(d.wire); got != d.mac {
			t.Errorf("%d,%d: wire %#x comes to a mac as %#x, want %#x", d.major, d.minor, d.wire, got, d.mac)
		}
		if ma, mi := darwinHost.devSplit(d.mac); ma != d.major || mi != d.minor {
			t.Errorf("%#x: split into %d,%d, want %d,%d", d.mac, ma, mi, d.major, d.minor)
		}
	}
}

// statDir is a directory whose statfs counts blocks of 1 KiB and
// prefers I/O of 64 KiB, as statfs(2)'s f_frsize and f_bsize may differ.
type statDir struct{ *vfs.StaticDir }

func (statDir) StatFS(context.Context) (vfs.StatFS, error) {
	return vfs.StatFS{Bsize: 64 << 10, Frsize: 1 << 10, Blocks: 1000, Bfree: 500, Bavail: 400, NameLen: 255}, nil
}

// TestStatfsBlockUnit checks that Rstatfs's bsize is the unit its block
// counts are in (f_frsize), which a 9P client multiplies them by.
func TestStatfsBlockUnit(t *testing.T) {
	_, addr := serve(t, statDir{vfs.NewStaticDir(nil)})
	_, root := dial(t, addr, "")
	st, err := vfs.StatFSOf(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := uint64(st.Frsize)*st.Blocks, uint64(1000<<10); got != want {
		t.Errorf("statfs through 9P: %d blocks of %d bytes = %d, want %d bytes", st.Blocks, st.Frsize, got, want)
	}
}
