package ninep

import "github.com/gsvfs/gsvfs/vfs"

// The change notices of gsvfs's extensions (VersionExt). A client keeps
// one Twatch outstanding on a connection; the server answers it with the
// changes made to its tree since the last answer, as soon as there are
// any, and the client asks again. The first Twatch of a connection is
// answered at once, empty: from then on every change is reported, so
// the client may trust what it caches of watched files.
//
//	Twatch: fid[4] count[4]            (count bounds the reply's size)
//	Rwatch: n[2] n*(flags[1] dir[8] name[s] attr, if flags&watchAttr)
//
// attr is an Rgetattr body. Each change is a vfs.Change in the server's
// inode numbers, which are its QID paths.
//
// Tnotify (a later extension) subscribes the connection for good: the
// server answers it with a stream of Rnotify frames on its tag, the
// first at once and empty, then one for each batch, for as long as the
// connection lasts, until a Tflush of the tag (answered by Rlerror, then
// Rflush) or a Tversion. The tag stays in use all that time. Each
// Rnotify is at most count bytes. With notifyAhead in flags, the server
// writes every change its tree made before a reply was made ahead of
// that reply (it fences its tree's watch first, vfs.Watcher), so a
// client that applies each Rnotify as it reads it has heard of every
// change that preceded anything a reply tells it; without it, batches
// come as the tree hands them on (a client of a server on its own
// machine, which asks what an open depends on anyway, spares the fence
// its microseconds a reply). A server that does not know Tnotify refuses
// it (EOPNOTSUPP), and the client polls with Twatch, whose batches come
// when they come.
//
//	Tnotify: fid[4] count[4] flags[4]
//	Rnotify: (as Rwatch)

// Rwatch change flags.
const (
	watchLost = 1 << iota // changes were lost: everything may be stale
	watchData             // the file's content changed
	watchAttr             // an attr follows: what the entry leads to now
)

// AttrGsvfsWatched is an Rgetattr valid bit that a gsvfs server sets, on
// a connection that negotiated VersionExt, for a file whose changes its
// Twatch reports (vfs.Attr.Watched). Plain peers never see it.
const AttrGsvfsWatched = 1 << 62

// AttrGsvfsNoXattrs is an Rgetattr valid bit that a gsvfs server sets, in
// the attributes of Rreaddirplus and Rwalkgetattr, for a file whose
// extended attributes it listed and found none, or for a generated file
// that is not a directory (gsvfs's generated files have none): every getxattr of it
// would miss (ENODATA), which a client may answer itself, as long as it
// keeps the attributes. `ls -l` asks two or three names of every file
// (security.selinux, the ACLs) that nearly no file has.
const AttrGsvfsNoXattrs = 1 << 61

// AttrGsvfsFixed is an Rgetattr valid bit that a gsvfs server sets, on a
// connection that negotiated VersionExt, for a file whose attributes
// never change while it exists (vfs.Attr.Fixed), though its content be
// generated: a client holds them as long as it likes. A one-shot
// command through a gateway stats a session's ctl and wait three times
// between its walks and its opens; each was a round trip to the device.
const AttrGsvfsFixed = 1 << 60

// Twatch asks for the next batch of changes of the tree fid is in.
type Twatch struct {
	Fid, Count uint32
}

func (*Twatch) msgType() uint8 { return msgTwatch }
func (m *Twatch) encode(e *encoder) {
	e.u32(m.Fid)
	e.u32(m.Count)
}
func (m *Twatch) decode(d *decoder) { m.Fid, m.Count = d.u32(), d.u32() }

// Rwatch carries a batch of changes.
type Rwatch struct {
	Changes []wireChange
}

// wireChange is one change of an Rwatch: a vfs.Change as the wire has it
// (see hostNumbers.changeToWire).
type wireChange struct {
	Flags uint8 // watchLost, watchData, watchAttr
	Dir   uint64
	Name  string
	Attr  Rgetattr // only if Flags&watchAttr
}

func (*Rwatch) msgType() uint8 { return msgRwatch }
func (m *Rwatch) encode(e *encoder) {
	e.u16(uint16(len(m.Changes)))
	for _, c := range m.Changes {
		e.u8(c.Flags)
		e.u64(c.Dir)
		e.str(c.Name)
		if c.Flags&watchAttr != 0 {
			c.Attr.encode(e)
		}
	}
}
func (m *Rwatch) decode(d *decoder) {
	n := int(d.u16())
	m.Changes = make([]wireChange, 0, min(n, len(d.b)/changeMinSize))
	for i := 0; i < n && d.err == nil; i++ {
		c := wireChange{Flags: d.u8(), Dir: d.u64(), Name: d.str()}
		if c.Flags&watchAttr != 0 {
			c.Attr.decode(d)
		}
		m.Changes = append(m.Changes, c)
	}
}

// rwatch is the reply that carries cs.
func (h *hostNumbers) rwatch(cs []vfs.Change) *Rwatch {
	r := &Rwatch{Changes: make([]wireChange, len(cs))}
	for i, c := range cs {
		r.Changes[i] = wireChange{Flags: changeFlags(c), Dir: c.Dir, Name: c.Name}
		if c.Attr.Ino != 0 {
			r.Changes[i].Attr = *h.extAttrToWire(c.Attr)
		}
	}
	return r
}

// changes is what r says changed, as vfs says it.
func (h *hostNumbers) changes(r *Rwatch) []vfs.Change {
	cs := make([]vfs.Change, len(r.Changes))
	for i, w := range r.Changes {
		cs[i] = vfs.Change{Dir: w.Dir, Name: w.Name, Lost: w.Flags&watchLost != 0, Data: w.Flags&watchData != 0}
		if w.Flags&watchAttr != 0 {
			cs[i].Attr = h.attrFromWire(&w.Attr)
		}
	}
	return cs
}

// extAttrToWire is attrToWire for a peer that negotiated VersionExt:
// it says whether the file is watched.
func (h *hostNumbers) extAttrToWire(a vfs.Attr) *Rgetattr {
	r := h.attrToWire(a)
	if a.Watched {
		r.Valid |= AttrGsvfsWatched
	}
	if a.Fixed {
		r.Valid |= AttrGsvfsFixed
	}
	return r
}

func changeFlags(c vfs.Change) uint8 {
	var f uint8
	if c.Lost {
		f |= watchLost
	}
	if c.Data {
		f |= watchData
	}
	if c.Attr.Ino != 0 {
		f |= watchAttr
	}
	return f
}

// changeMinSize is a change's wire size without a name or attr;
// rgetattrSize is an Rgetattr body's.
const (
	changeMinSize = 1 + 8 + 2
	rgetattrSize  = 8 + 13 + 3*4 + 15*8
)

// changeSize is c's size on the wire.
func changeSize(c vfs.Change) int {
	n := changeMinSize + len(c.Name)
	if c.Attr.Ino != 0 {
		n += rgetattrSize
	}
	return n
}

// Tnotify subscribes to the tree's changes as a stream of Rnotify.
type Tnotify struct {
	Twatch
	Flags uint32 // notifyAhead
}

// notifyAhead asks for every change made before a reply ahead of it.
const notifyAhead = 1

func (*Tnotify) msgType() uint8 { return msgTnotify }
func (m *Tnotify) encode(e *encoder) {
	m.Twatch.encode(e)
	e.u32(m.Flags)
}
func (m *Tnotify) decode(d *decoder) {
	m.Twatch.decode(d)
	m.Flags = d.u32()
}

// Rnotify is one batch of a Tnotify's stream.
type Rnotify struct{ Rwatch }

func (*Rnotify) msgType() uint8 { return msgRnotify }

func init() {
	messageTypes[msgTwatch] = func() Message { return new(Twatch) }
	messageTypes[msgRwatch] = func() Message { return new(Rwatch) }
	messageTypes[msgTnotify] = func() Message { return new(Tnotify) }
	messageTypes[msgRnotify] = func() Message { return new(Rnotify) }
}
