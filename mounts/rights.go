package mounts

import (
	"context"
	"os/user"
	"slices"
	"strconv"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// What a union does for a caller on its own behalf (a copy up, the
// directories it makes in the creation layer) is done by the daemon,
// often root. The kernel checked the caller's rights on what the union
// shows, not on the layers written behind it, so the union checks them
// there itself, as overlayfs checks both inodes.

// Access bits of a mode's triplets, as access(2) names them.
const (
	mayRead  = 4
	mayWrite = 2
	mayExec  = 1
)

// permitted reports whether the caller of ctx may access a file of
// attributes a for want (mayRead|mayWrite|mayExec bits) by its mode, as
// the kernel's generic permission check does: the owner's bits for the
// owner, the group's for a member, the others' for the rest; root passes
// reads and writes, and search or execution where any x bit is set. A
// context with no caller is the daemon's own call, always permitted.
func permitted(ctx context.Context, a vfs.Attr, want uint32) bool {
	c, ok := vfs.CallerFrom(ctx)
	if !ok {
		return true
	}
	if c.Uid == 0 {
		return want&mayExec == 0 || a.IsDir() || a.Mode&0o111 != 0
	}
	var bits uint32
	switch {
	case c.Uid == a.Uid:
		bits = a.Mode >> 6
	case c.Gid == a.Gid || inGroup(c.Uid, a.Gid):
		bits = a.Mode >> 3
	default:
		bits = a.Mode
	}
	return bits&want == want
}

// inGroup reports whether the user uid has gid among its supplementary
// groups. The edges tell only a caller's primary group, so the others
// are the user database's, as a login gives them.
func inGroup(uid, gid uint32) bool {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return false
	}
	ids, err := u.GroupIds()
	return err == nil && slices.Contains(ids, strconv.FormatUint(uint64(gid), 10))
}

// mayWriteIn fails with EACCES unless the caller may make names in dir
// (write and search it).
func mayWriteIn(ctx context.Context, dir vfs.Node, op, name string) error {
	a, err := dir.Attr(ctx)
	if err != nil {
		return err
	}
	if !permitted(ctx, a, mayWrite|mayExec) {
		return vfs.Error(op, name, syscall.EACCES)
	}
	return nil
}

// asOwner is ctx with the caller replaced by the owner of a, so that a
// file the daemon makes for a copy up is born the lower file's, never
// the caller's for a moment.
func asOwner(ctx context.Context, a vfs.Attr) context.Context {
	return vfs.WithCaller(ctx, vfs.Caller{Uid: a.Uid, Gid: a.Gid})
}
