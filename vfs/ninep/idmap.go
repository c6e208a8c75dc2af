package ninep

import (
	"context"
	"os"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// IDMap translates the user and group numbers of a server on another
// machine, which mean nothing on this one, as sshfs's idmap=user does:
// the server's own user and group (the far daemon's) are this machine's
// Local ones, and every other number of the server's is Nobody. The
// translation is made once, where attributes come off the wire (replies
// and change notices alike), so no cache or edge ever holds the server's
// numbers; on the way out the Local numbers go back as the server's, and
// any other owner in a change is refused (EPERM): the server has no user
// of this machine's to give a file to. New files are made with the
// server's own group whoever asks, and POSIX ACLs, whose entries are the
// server's numbers too, are neither shown nor set (ENODATA, EOPNOTSUPP).
type IDMap struct {
	// Uid and Gid are the server's user and group.
	Uid, Gid uint32
	// LocalUid and LocalGid are what they show as here.
	LocalUid, LocalGid uint32
}

// Nobody is the user and group every number of the server's but its
// own shows as (Linux's overflow id, nobody and nogroup on Debian).
const Nobody = 65534

// localUid is the server's uid u as this machine shows it.
func (m *IDMap) localUid(u uint32) uint32 {
	if u == m.Uid {
		return m.LocalUid
	}
	return Nobody
}

func (m *IDMap) localGid(g uint32) uint32 {
	if g == m.Gid {
		return m.LocalGid
	}
	return Nobody
}

// attr shows a's owner in this machine's numbers (nil m: as it is).
func (m *IDMap) attr(a vfs.Attr) vfs.Attr {
	if m != nil && a.Ino != 0 {
		a.Uid, a.Gid = m.localUid(a.Uid), m.localGid(a.Gid)
	}
	return a
}

// changes maps the attributes of a batch of change notices, in place.
func (m *IDMap) changes(cs []vfs.Change) []vfs.Change {
	for i := range cs {
		cs[i].Attr = m.attr(cs[i].Attr)
	}
	return cs
}

// toServer is s in the server's numbers: an owner or group other than
// the Local ones cannot be given (EPERM).
func (m *IDMap) toServer(s vfs.SetAttr) (vfs.SetAttr, error) {
	if m == nil {
		return s, nil
	}
	if s.Has(vfs.SetUid) {
		if s.Uid != m.LocalUid {
			return s, vfs.Error("chown", "", syscall.EPERM)
		}
		s.Uid = m.Uid
	}
	if s.Has(vfs.SetGid) {
		if s.Gid != m.LocalGid {
			return s, vfs.Error("chown", "", syscall.EPERM)
		}
		s.Gid = m.Gid
	}
	return s, nil
}

// newGid is the group a file made for the caller in ctx gets: the
// caller's, else this process's; over an IDMap, the server's own.
func (m *IDMap) newGid(ctx context.Context) uint32 {
	if m != nil {
		return m.Gid
	}
	if cl, ok := vfs.CallerFrom(ctx); ok {
		return cl.Gid
	}
	return uint32(os.Getegid())
}

// hidesXattr reports whether the extended attribute name is one whose
// value holds the server's numbers (a POSIX ACL), which m keeps away.
func (m *IDMap) hidesXattr(name string) bool {
	return m != nil && (name == "system.posix_acl_access" || name == "system.posix_acl_default")
}
