package devices

import (
	"encoding/binary"
	"slices"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// A device's user is not a local user (ninep.IDMap shows its files as
// the gateway owner's), so /mnt/ID is a door only the gateway's owner
// (and root) may pass, and whoever the owner grants the device
// (`gsvfs device grant`). The kernel keeps the door, as for any
// directory: /mnt/ID shows as the owner's, with no rights for its group
// or others, and a POSIX access ACL names the granted users and groups.
// It is volatile and unwatched, so the kernel (and a mount attached to
// the gateway) asks again at every path walked through it, and a grant
// or its end takes effect at once, online or offline.
//
// Invariants:
//  1. Nobody but the owner, root and those granted reaches a device's
//     files, whatever their numbers on either machine
//     (TestDeviceFilesAreTheOwners, TestDeviceGrant).
//  2. A grant gives entry (r-x) to /mnt/ID alone; below it the files'
//     own modes apply to the granted as to any user not their owner
//     (TestDeviceGrant).

// Grantee is a local user or group the owner lets into a device's tree.
type Grantee struct {
	Group bool   `json:"group,omitempty"`
	ID    uint32 `json:"id"`
}

// gate is relink's Gate for device id's /mnt/ID.
type gate struct {
	store *Store
	id    string
}

// granted is r-x: enough to list /mnt/ID and walk through it.
const granted = 0o5

func (g gate) Attr(a vfs.Attr) vfs.Attr {
	perm := a.Mode & 0o700
	if len(g.store.Grants(g.id)) > 0 {
		perm |= granted << 3 // the ACL's mask
	}
	a.Mode = a.Mode&syscall.S_IFMT | perm
	a.Uid, a.Gid = ownerUid, ownerGid
	// Grants change with no notice from the device: nothing of the
	// door may be cached, by the kernel or a client of this daemon.
	a.Volatile, a.Watched, a.Fixed = true, false, false
	return a
}

// POSIX ACL entries (linux/posix_acl_xattr.h), in the order an ACL keeps.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
	aclVersion  = 2
	aclNoID     = 0xffffffff
)

// ACL is system.posix_acl_access of /mnt/ID as shown with a: the owner's
// bits, and r-x for each grantee; nil when there are none.
func (g gate) ACL(a vfs.Attr) []byte {
	grants := g.store.Grants(g.id)
	if len(grants) == 0 {
		return nil
	}
	slices.SortFunc(grants, func(x, y Grantee) int {
		switch {
		case x.Group != y.Group:
			if x.Group {
				return 1
			}
			return -1
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	grants = slices.Compact(grants)
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	entry := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	entry(aclUserObj, uint16(a.Mode>>6&7), aclNoID)
	groupsFrom := slices.IndexFunc(grants, func(x Grantee) bool { return x.Group })
	if groupsFrom < 0 {
		groupsFrom = len(grants)
	}
	for _, u := range grants[:groupsFrom] {
		entry(aclUser, granted, u.ID)
	}
	entry(aclGroupObj, 0, aclNoID)
	for _, gr := range grants[groupsFrom:] {
		entry(aclGroup, granted, gr.ID)
	}
	entry(aclMask, granted, aclNoID)
	entry(aclOther, 0, aclNoID)
	return b
}
