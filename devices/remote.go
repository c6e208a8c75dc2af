package devices

import (
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs"
)

// deviceRoot is /mnt/ID: the device's tree across its links (package
// relink re-walks paths and reopens files when the device comes back).
// While the device is offline every call under it fails at once with
// EHOSTDOWN, and /mnt/ID itself stats as the device's root last did
// online, kept in the store so that it survives a gateway restart.
func (g *Gateway) deviceRoot(id string) vfs.Node {
	t := relink.New(relink.Options{
		Where: "/mnt/" + id,
		Current: func() *relink.Link {
			if r := g.link(id); r != nil {
				return &r.tree
			}
			return nil
		},
		Known:    rootAttrOf(g.store.LastRoot(id)),
		Remember: func(a vfs.Attr) { g.rememberRoot(id, a) },
		Gate:     gate{store: g.store, id: id},
	})
	g.trees.Store(id, t)
	return t.Root()
}

// relinked tells device id's tree that its link changed (nil: offline).
func (g *Gateway) relinked(id string) {
	if t, ok := g.trees.Load(id); ok {
		t.(*relink.Tree).Relinked()
	}
}

// rememberRoot keeps the attributes of device id's root as read on a new
// link. Only a directory's permission bits, owner and times are kept:
// whatever a device answers, /mnt/ID offline is a directory.
func (g *Gateway) rememberRoot(id string, a vfs.Attr) {
	r := keptRoot(a)
	if err := g.store.SetLastRoot(id, r); err != nil {
		g.log.Warn("could not keep the device's root attributes for while it is offline", "device", id, "err", err)
	}
}

func keptRoot(a vfs.Attr) RootAttr {
	return RootAttr{Perm: a.Mode & 0o7777, Uid: a.Uid, Gid: a.Gid,
		Atime: a.Atime.UnixNano(), Mtime: a.Mtime.UnixNano(), Ctime: a.Ctime.UnixNano()}
}

// rootAttrOf is a kept root as attributes; zero (never seen) for nil.
func rootAttrOf(r *RootAttr) vfs.Attr {
	if r == nil {
		return vfs.Attr{}
	}
	return vfs.Attr{Ino: 1, Mode: syscall.S_IFDIR | r.Perm&0o7777, Nlink: 2, Uid: r.Uid, Gid: r.Gid,
		Atime: time.Unix(0, r.Atime), Mtime: time.Unix(0, r.Mtime), Ctime: time.Unix(0, r.Ctime)}
}
