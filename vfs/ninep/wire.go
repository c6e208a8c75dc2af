package ninep

import "syscall"

// The numbers 9P2000.L carries are Linux's, whatever the host: a Linux
// kernel's client puts them on the wire as its own syscalls take them
// (Linux's generic numbering, that of x86 and arm: the P9_DOTL_* and
// errno-base.h values). Each kind of wire number has a type of its own,
// so a host number put in a message without conversion does not
// compile, and TestWireFieldsTyped fails when a new message field
// carries a plain integer nobody said carries no host number. The
// server and client convert at the edge, through their hostNumbers.

type (
	// wireOpenFlags is Tlopen's and Tlcreate's flags (P9_DOTL_*).
	wireOpenFlags uint32
	// wireMode is a mode: file-type bits (S_IF*) and permission bits.
	wireMode uint32
	// wireDev is a device number packed as Linux's stat packs it.
	wireDev uint64
	// wireDirentType is an Rreaddir entry's type (DT_*).
	wireDirentType uint8
	// wireXattrFlags is Txattrcreate's flags (XATTR_*).
	wireXattrFlags uint32
	// wireUnlinkFlags is Tunlinkat's flags (AT_REMOVEDIR).
	wireUnlinkFlags uint32
	// wireLockType is Tlock's and Tgetlock's lock type.
	wireLockType uint8
	// wireLockFlags is Tlock's flags.
	wireLockFlags uint32
	// wireLockStatus is Rlock's status.
	wireLockStatus uint8
)

// Open flags on the wire: Linux's generic O_* (P9_DOTL_* in Linux's
// include/net/9p/9p.h). Access modes are the low two bits.
const (
	wO_WRONLY    wireOpenFlags = 0x1
	wO_RDWR      wireOpenFlags = 0x2
	wO_ACCMODE   wireOpenFlags = 0x3
	wO_CREAT     wireOpenFlags = 0x40
	wO_EXCL      wireOpenFlags = 0x80
	wO_NOCTTY    wireOpenFlags = 0x100
	wO_TRUNC     wireOpenFlags = 0x200
	wO_APPEND    wireOpenFlags = 0x400
	wO_NONBLOCK  wireOpenFlags = 0x800
	wO_DSYNC     wireOpenFlags = 0x1000
	wO_FASYNC    wireOpenFlags = 0x2000
	wO_DIRECT    wireOpenFlags = 0x4000
	wO_LARGEFILE wireOpenFlags = 0x8000
	wO_DIRECTORY wireOpenFlags = 0x10000
	wO_NOFOLLOW  wireOpenFlags = 0x20000
	wO_NOATIME   wireOpenFlags = 0x40000
	wO_CLOEXEC   wireOpenFlags = 0x80000
	wO_SYNC      wireOpenFlags = 0x101000 // __O_SYNC | O_DSYNC
)

// wireOpenMask is the open flags a server passes on to a backend:
// creation flags belong to Tlcreate, and the rest (O_NOCTTY, O_CLOEXEC,
// O_DIRECT, O_LARGEFILE, FASYNC) mean nothing to it.
const wireOpenMask = wO_ACCMODE | wO_APPEND | wO_TRUNC | wO_SYNC | wO_DSYNC | wO_NONBLOCK |
	wO_DIRECTORY | wO_NOATIME

// File types on the wire (S_IF*, the same octal on every Unix gsvfs
// knows; a DT_* is its S_IF* shifted right by 12). Permission bits
// (07777) are POSIX's own numbers and pass as they are.
const (
	wS_IFMT   wireMode = 0o170000
	wS_IFSOCK wireMode = 0o140000
	wS_IFLNK  wireMode = 0o120000
	wS_IFREG  wireMode = 0o100000
	wS_IFBLK  wireMode = 0o060000
	wS_IFDIR  wireMode = 0o040000
	wS_IFCHR  wireMode = 0o020000
	wS_IFIFO  wireMode = 0o010000
	wS_PERM   wireMode = 0o7777
)

// Extended attribute flags on the wire (Linux's <linux/xattr.h>).
const (
	wXATTR_CREATE  wireXattrFlags = 1
	wXATTR_REPLACE wireXattrFlags = 2
)

// numPair is one number as the wire and the host each write it.
type numPair[W, H any] struct {
	wire W
	host H
}

// hostTable is how one OS numbers what 9P2000.L carries. A number of
// either side that is in no pair has no counterpart: an errno becomes
// EIO, a flag is dropped, a file type is none. Where several host
// numbers share one wire number (darwin's ENOTSUP and EOPNOTSUPP), the
// first pair of that wire number is the one it turns back into.
type hostTable struct {
	errnos []numPair[wireErrno, syscall.Errno]
	open   []numPair[wireOpenFlags, int]
	xattr  []numPair[wireXattrFlags, int]
	types  []numPair[wireMode, uint32] // file types (the S_IFMT bits)
	// devJoin and devSplit pack and unpack the host's dev_t.
	devJoin  func(major, minor uint32) uint64
	devSplit func(dev uint64) (major, minor uint32)
}

// hostNumbers converts between a host's numbers (vfs's vocabulary) and
// the wire's; host is this OS's (host_*.go), and a test may give a
// server or client another.
type hostNumbers struct {
	hostTable
	errTo   map[syscall.Errno]wireErrno
	errFrom map[wireErrno]syscall.Errno
}

func newHostNumbers(t hostTable) *hostNumbers {
	h := &hostNumbers{hostTable: t, errTo: map[syscall.Errno]wireErrno{}, errFrom: map[wireErrno]syscall.Errno{}}
	for _, p := range t.errnos {
		if _, dup := h.errTo[p.host]; !dup {
			h.errTo[p.host] = p.wire
		}
		if _, dup := h.errFrom[p.wire]; !dup {
			h.errFrom[p.wire] = p.host
		}
	}
	return h
}

// errnoToWire is the host's e as Rlerror carries it (EIO if the wire
// has no such errno).
func (h *hostNumbers) errnoToWire(e syscall.Errno) wireErrno {
	if w, ok := h.errTo[e]; ok {
		return w
	}
	return wEIO
}

// errnoFromWire is the wire's w as the host numbers it (EIO if the host
// has no such errno).
func (h *hostNumbers) errnoFromWire(w wireErrno) syscall.Errno {
	if e, ok := h.errFrom[w]; ok {
		return e
	}
	return syscall.EIO
}

func (h *hostNumbers) openToWire(flags int) wireOpenFlags { return bitsToWire(h.open, flags) }
func (h *hostNumbers) openFromWire(w wireOpenFlags) int   { return bitsFromWire(h.open, w) }
func (h *hostNumbers) xattrToWire(flags int) wireXattrFlags {
	return bitsToWire(h.xattr, flags)
}
func (h *hostNumbers) xattrFromWire(w wireXattrFlags) int { return bitsFromWire(h.xattr, w) }

// bitsToWire sets the wire bits of each pair, in order, whose host bits
// are all set and not taken by an earlier pair: Linux's O_SYNC holds
// O_DSYNC's bit, and a table lists it first.
func bitsToWire[W ~uint32](pairs []numPair[W, int], host int) W {
	var w W
	for _, p := range pairs {
		if p.host != 0 && host&p.host == p.host {
			w |= p.wire
			host &^= p.host
		}
	}
	return w
}

// bitsFromWire is bitsToWire the other way.
func bitsFromWire[W ~uint32](pairs []numPair[W, int], w W) int {
	var host int
	for _, p := range pairs {
		if p.wire != 0 && w&p.wire == p.wire {
			host |= p.host
			w &^= p.wire
		}
	}
	return host
}

// modeToWire is the host's mode m on the wire: its file type looked up,
// its permission bits as they are.
func (h *hostNumbers) modeToWire(m uint32) wireMode {
	w := wireMode(m) & wS_PERM
	for _, p := range h.types {
		if m&^0o7777 == p.host {
			return w | p.wire
		}
	}
	return w
}

// modeFromWire is the wire's mode w as the host numbers it.
func (h *hostNumbers) modeFromWire(w wireMode) uint32 {
	m := uint32(w & wS_PERM)
	for _, p := range h.types {
		if w&wS_IFMT == p.wire {
			return m | p.host
		}
	}
	return m
}

// direntTypeToWire is a host file type (S_IF* bits, as vfs.DirEntry
// has it) as an Rreaddir entry's DT_*.
func (h *hostNumbers) direntTypeToWire(t uint32) wireDirentType {
	return wireDirentType(h.modeToWire(t) >> 12)
}

// direntTypeFromWire is an entry's DT_* as a host file type.
func (h *hostNumbers) direntTypeFromWire(d wireDirentType) uint32 {
	return h.modeFromWire(wireMode(d)<<12) &^ 0o7777
}

// devToWire is the host's device number as Linux packs it.
func (h *hostNumbers) devToWire(dev uint64) wireDev {
	return wireDev(linuxDevJoin(h.devSplit(dev)))
}

// devFromWire is a device number packed as Linux packs it, as the host
// packs it.
func (h *hostNumbers) devFromWire(w wireDev) uint64 {
	return h.devJoin(linuxDevSplit(uint64(w)))
}

// linuxDevJoin packs a device number as Linux's stat (glibc's makedev)
// does.
func linuxDevJoin(major, minor uint32) uint64 {
	ma, mi := uint64(major), uint64(minor)
	return (ma&0xfffff000)<<32 | (ma&0xfff)<<8 | (mi&0xffffff00)<<12 | mi&0xff
}

// linuxDevSplit unpacks what linuxDevJoin packs.
func linuxDevSplit(dev uint64) (major, minor uint32) {
	return uint32(dev>>32&0xfffff000 | dev>>8&0xfff), uint32(dev>>12&0xffffff00 | dev&0xff)
}
