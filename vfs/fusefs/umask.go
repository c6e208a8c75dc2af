//go:build linux

package fusefs

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/vfs"
)

// The umask of a creating process must not apply where its directory has
// a default ACL: the ACL takes its place (a default ACL granting rw- to
// a user gives new files mask::rw-, whatever the umask). The kernel
// applies the umask itself before a FUSE server sees the mode unless the
// server asks for the mode unmasked (FUSE_DONT_MASK), and then only the
// server can tell. So the mount asks, and each create, mkdir and mknod
// masks the mode here unless the directory has a default ACL.
//
// go-fuse's node API passes the mode but not the umask, so umaskFS, in
// front of it, carries the umask in the unused high bits of the mode,
// and the node methods take it out again (splitUmask). Nothing outside
// this file sees the encoding.
type umaskFS struct{ fuse.RawFileSystem }

// hasUmask marks a mode that carries its creator's umask in bits 16-24.
const hasUmask = 1 << 31

func withUmask(mode, umask uint32) uint32 { return mode&0xffff | hasUmask | (umask&0o777)<<16 }

// splitUmask takes the umask out of a mode made by withUmask.
func splitUmask(mode uint32) (m, umask uint32, ok bool) {
	if mode&hasUmask == 0 {
		return mode, 0, false
	}
	return mode & 0xffff, mode >> 16 & 0o777, true
}

func (fs umaskFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return fs.RawFileSystem.Create(cancel, in, name, out)
}

func (fs umaskFS) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return fs.RawFileSystem.Tmpfile(cancel, in, out)
}

func (fs umaskFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return fs.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (fs umaskFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return fs.RawFileSystem.Mknod(cancel, in, name, out)
}

// newMode is the mode a file made in directory n is given: the creator's
// mode with its umask applied, unless n has a default ACL.
func (n *node) newMode(ctx context.Context, mode uint32) uint32 {
	m, umask, ok := splitUmask(mode)
	if !ok || m&umask == 0 || n.hasDefaultACL(ctx) {
		return m
	}
	return m &^ umask
}

func (n *node) hasDefaultACL(ctx context.Context) bool {
	x, ok := n.vn.(vfs.Xattrer)
	if !ok {
		return false
	}
	_, err := x.GetXattr(ctx, "system.posix_acl_default")
	return err == nil
}
