package ninep

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"golang.org/x/sys/unix"
)

// TestLinuxTable checks Linux's table against the wire's numbers, which
// are those of Linux's generic headers: the same on x86 and arm64, but
// for four open flags that arm64 numbers its own way.
func TestLinuxTable(t *testing.T) {
	flags := []struct {
		name string
		host int
		wire wireOpenFlags // <asm-generic/fcntl.h>
	}{
		{"O_WRONLY", syscall.O_WRONLY, 0x1}, {"O_RDWR", syscall.O_RDWR, 0x2}, {"O_CREAT", syscall.O_CREAT, 0x40},
		{"O_EXCL", syscall.O_EXCL, 0x80}, {"O_NOCTTY", syscall.O_NOCTTY, 0x100}, {"O_TRUNC", syscall.O_TRUNC, 0x200},
		{"O_APPEND", syscall.O_APPEND, 0x400}, {"O_NONBLOCK", syscall.O_NONBLOCK, 0x800},
		{"O_DSYNC", syscall.O_DSYNC, 0x1000}, {"O_ASYNC", syscall.O_ASYNC, 0x2000},
		{"O_DIRECT", syscall.O_DIRECT, 0x4000}, {"O_DIRECTORY", syscall.O_DIRECTORY, 0x10000},
		{"O_NOFOLLOW", syscall.O_NOFOLLOW, 0x20000}, {"O_NOATIME", syscall.O_NOATIME, 0x40000},
		{"O_CLOEXEC", syscall.O_CLOEXEC, 0x80000}, {"O_SYNC", syscall.O_SYNC, 0x101000},
	}
	for _, f := range flags {
		if got := host.openToWire(f.host); got != f.wire {
			t.Errorf("%s: host %#x goes on the wire as %#x, want %#x", f.name, f.host, got, f.wire)
		}
		if got := host.openFromWire(f.wire); got != f.host {
			t.Errorf("%s: wire %#x comes to the host as %#x, want %#x", f.name, f.wire, got, f.host)
		}
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		for e := syscall.Errno(1); e <= 133; e++ { // every errno: the wire's own
			if e == 41 || e == 58 {
				continue // numbers Linux never gave an errno
			}
			if got, back := host.errnoToWire(e), host.errnoFromWire(wireErrno(e)); got != wireErrno(e) || back != e {
				t.Errorf("errno %d (%v): on the wire %d, back %d; want %d both ways", e, e, got, back, e)
			}
		}
	}
	for _, x := range []struct {
		host int
		wire wireXattrFlags
	}{{unix.XATTR_CREATE, 1}, {unix.XATTR_REPLACE, 2}} {
		if got := host.xattrToWire(x.host); got != x.wire || host.xattrFromWire(x.wire) != x.host {
			t.Errorf("xattr flag %d: on the wire %d, want %d both ways", x.host, got, x.wire)
		}
	}
	for _, m := range []uint32{syscall.S_IFREG | 0o644, syscall.S_IFDIR | 0o1777, syscall.S_IFLNK | 0o777, syscall.S_IFCHR | 0o600} {
		if got := host.modeFromWire(host.modeToWire(m)); got != m || uint32(host.modeToWire(m)) != m {
			t.Errorf("mode %#o: on the wire %#o, back %#o; want the same", m, host.modeToWire(m), got)
		}
	}
	if got := host.devToWire(unix.Mkdev(259, 70000)); uint64(got) != unix.Mkdev(259, 70000) {
		t.Errorf("device 259,70000: on the wire %#x, want Linux's own %#x", got, unix.Mkdev(259, 70000))
	}
}

// side is the numbers one end of a connection speaks: a Linux host's, or
// a Mac's as its headers write them.
type side struct {
	name                                     string
	table                                    *hostNumbers
	wronly, rdwr, append, trunc, creat, excl int
	xattrCreate                              int
	enotempty, eexist, enodata               syscall.Errno
}

var (
	linuxSide = side{"linux", host, syscall.O_WRONLY, syscall.O_RDWR, syscall.O_APPEND, syscall.O_TRUNC,
		syscall.O_CREAT, syscall.O_EXCL, unix.XATTR_CREATE, syscall.ENOTEMPTY, syscall.EEXIST, syscall.ENODATA}
	// macOS's <sys/fcntl.h>, <sys/xattr.h> and <sys/errno.h> (ENODATA:
	// what vfs says of a missing attribute; a Mac's getxattr says
	// ENOATTR, 93, which macDisk returns).
	macSide = side{"mac", darwinHost, 0x1, 0x2, 0x8, 0x400, 0x200, 0x800, 0x2, 66, 17, 96}
)

// macDisk is a Linux disk tree as a Mac's would be: it takes macOS's
// numbers (flags, xattr flags) and answers in them (errnos), as the
// backend of a gsvfs server running on a Mac does. It converts with the
// literals of macSide and macErrnos, not with darwinTable.
type macDisk struct{ vfs.Node }

func (m macDisk) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	n, err := m.Node.Lookup(ctx, name)
	return macDisk{n}, macErr(err)
}

func (m macDisk) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	h, err := m.Node.Open(ctx, linuxOpenFlags(flags))
	return h, macErr(err)
}

func (m macDisk) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	n, h, err := m.Node.Create(ctx, name, linuxOpenFlags(flags), mode)
	if err != nil {
		return nil, nil, macErr(err)
	}
	return macDisk{n}, h, nil
}

func (m macDisk) Remove(ctx context.Context, name string, dir bool) error {
	return macErr(m.Node.Remove(ctx, name, dir))
}

func (m macDisk) GetXattr(ctx context.Context, name string) ([]byte, error) {
	v, err := m.Node.(vfs.Xattrer).GetXattr(ctx, name)
	if errors.Is(err, syscall.ENODATA) {
		return nil, vfs.Error("getxattr", name, 93) // ENOATTR
	}
	return v, macErr(err)
}

func (m macDisk) SetXattr(ctx context.Context, name string, value []byte, flags int) error {
	var linux int
	if flags&macSide.xattrCreate != 0 {
		linux |= unix.XATTR_CREATE
	}
	if flags&0x4 != 0 { // XATTR_REPLACE
		linux |= unix.XATTR_REPLACE
	}
	return macErr(m.Node.(vfs.Xattrer).SetXattr(ctx, name, value, linux))
}

func (m macDisk) ListXattr(ctx context.Context) ([]string, error) {
	names, err := m.Node.(vfs.Xattrer).ListXattr(ctx)
	return names, macErr(err)
}

func (m macDisk) RemoveXattr(ctx context.Context, name string) error {
	return macErr(m.Node.(vfs.Xattrer).RemoveXattr(ctx, name))
}

// linuxOpenFlags is a Mac's open flags as Linux numbers them.
func linuxOpenFlags(mac int) int {
	var linux int
	for _, f := range macOpenFlags {
		if f.mac != 0 && f.linux != 0 && mac&f.mac == f.mac {
			linux |= f.linux
		}
	}
	if mac&0x100000 != 0 { // O_DIRECTORY, which amd64 and arm64 number apart
		linux = linux&^0x10000 | syscall.O_DIRECTORY
	}
	return linux
}

// macErr is err with a Mac's errno.
func macErr(err error) error {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return err
	}
	for _, m := range macErrnos {
		if m.linux == e && m.fromWireMac == 0 {
			return &fs.PathError{Op: "mac", Err: m.mac}
		}
	}
	return err
}

// TestOtherHostsNumbers is issue 28's Mac device that emptied a file on
// append, both ways round: a Linux client of a server on a Mac (its
// disk, macDisk, speaks macOS's numbers), and a Mac's client (speaking
// them) of a Linux server. Where numbers pass unconverted, O_APPEND
// arrives as O_TRUNC, O_TRUNC as O_CREAT, ENOTEMPTY as EREMOTE and
// XATTR_CREATE as XATTR_NOFOLLOW.
func TestOtherHostsNumbers(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server side
	}{
		{"linux client, mac server", linuxSide, macSide},
		{"mac client, linux server", macSide, linuxSide},
	} {
		t.Run(tc.name, func(t *testing.T) { checkNumbers(t, tc.client, tc.server) })
	}
}

func checkNumbers(t *testing.T, client, server side) {
	dir := t.TempDir()
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	var backend vfs.Node = d.Root()
	if server.name == "mac" {
		backend = macDisk{backend}
	}
	_, addr := serveWith(t, backend, ServerOptions{host: server.table})
	_, root := dialWith(t, addr, "", ClientOptions{host: client.table})
	ctx := context.Background()
	put := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write := func(name string, flags int, data string) {
		t.Helper()
		h, err := walk(t, root, name).Open(ctx, flags)
		if err != nil {
			t.Fatalf("open %s with %#x: %v", name, flags, err)
		}
		if _, err := h.WriteAt(ctx, []byte(data), 0); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("close %s: %v", name, err)
		}
	}

	p := put("log", "one\n")
	write("log", client.wronly|client.append, "two\n")
	if got := read(p); got != "one\ntwo\n" {
		t.Errorf("O_APPEND: the disk has %q, want %q", got, "one\ntwo\n")
	}
	p = put("old", "stale content\n")
	write("old", client.wronly|client.trunc, "new\n")
	if got := read(p); got != "new\n" {
		t.Errorf("O_TRUNC: the disk has %q, want %q", got, "new\n")
	}
	put("taken", "x")
	if _, _, err := root.Create(ctx, "taken", client.rdwr|client.creat|client.excl, 0o644); !errors.Is(err, client.eexist) {
		t.Errorf("O_EXCL create of a file there: got %v, want errno %d (EEXIST)", err, client.eexist)
	}
	if err := os.MkdirAll(filepath.Join(dir, "full", "kid"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := root.Remove(ctx, "full", true); !errors.Is(err, client.enotempty) {
		t.Errorf("rmdir of a full directory: got %v, want errno %d (ENOTEMPTY)", err, client.enotempty)
	}
	checkXattrNumbers(t, walk(t, root, "log"), client)
	checkLockNumbers(t, root, filepath.Join(dir, "log"), client)
}

// checkXattrNumbers checks XATTR_CREATE and a missing attribute's errno.
func checkXattrNumbers(t *testing.T, n vfs.Node, client side) {
	ctx := context.Background()
	x := n.(vfs.Xattrer)
	if err := x.SetXattr(ctx, "user.a", []byte("1"), client.xattrCreate); err != nil {
		t.Fatalf("setxattr XATTR_CREATE: %v", err)
	}
	if err := x.SetXattr(ctx, "user.a", []byte("2"), client.xattrCreate); !errors.Is(err, client.eexist) {
		t.Errorf("setxattr XATTR_CREATE of a name there: got %v, want errno %d (EEXIST)", err, client.eexist)
	}
	if _, err := x.GetXattr(ctx, "user.none"); !errors.Is(err, client.enodata) {
		t.Errorf("getxattr of a name not there: got %v, want errno %d (ENODATA)", err, client.enodata)
	}
}

// checkLockNumbers takes a write lock through the connection and checks
// that the disk's file is locked for a process on the server's host.
func checkLockNumbers(t *testing.T, root vfs.Node, path string, client side) {
	h, err := walk(t, root, "log").Open(context.Background(), client.rdwr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.(vfs.Locker).Lock(context.Background(), lockReq(vfs.LockSet, vfs.LockWrite, 0, vfs.LockEOF)); err != nil {
		t.Fatalf("F_SETLK F_WRLCK: %v", err)
	}
	if got := hostLock(t, path); got != syscall.F_WRLCK {
		t.Errorf("F_GETLK on the disk's file: got lock type %d, want F_WRLCK", got)
	}
}
