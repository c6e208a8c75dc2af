package ninep

// The 9P2000.L message types, as numbered by the protocol.
const (
	msgTlerror      = 6
	msgRlerror      = 7
	msgTstatfs      = 8
	msgRstatfs      = 9
	msgTlopen       = 12
	msgRlopen       = 13
	msgTlcreate     = 14
	msgRlcreate     = 15
	msgTsymlink     = 16
	msgRsymlink     = 17
	msgTmknod       = 18
	msgRmknod       = 19
	msgTrename      = 20
	msgRrename      = 21
	msgTreadlink    = 22
	msgRreadlink    = 23
	msgTgetattr     = 24
	msgRgetattr     = 25
	msgTsetattr     = 26
	msgRsetattr     = 27
	msgTxattrwalk   = 30
	msgRxattrwalk   = 31
	msgTxattrcreate = 32
	msgRxattrcreate = 33
	msgTreaddir     = 40
	msgRreaddir     = 41
	msgTfsync       = 50
	msgRfsync       = 51
	msgTlock        = 52
	msgRlock        = 53
	msgTgetlock     = 54
	msgRgetlock     = 55
	msgTlink        = 70
	msgRlink        = 71
	msgTmkdir       = 72
	msgRmkdir       = 73
	msgTrenameat    = 74
	msgRrenameat    = 75
	msgTunlinkat    = 76
	msgRunlinkat    = 77
	msgTversion     = 100
	msgRversion     = 101
	msgTauth        = 102
	msgRauth        = 103
	msgTattach      = 104
	msgRattach      = 105
	msgRerror       = 107
	msgTflush       = 108
	msgRflush       = 109
	msgTwalk        = 110
	msgRwalk        = 111
	msgTread        = 116
	msgRread        = 117
	msgTwrite       = 118
	msgRwrite       = 119
	msgTclunk       = 120
	msgRclunk       = 121
	msgTremove      = 122
	msgRremove      = 123
)

// Message types 200 to 239 are reserved for gsvfs's extensions of
// 9P2000.L, which a connection may use only once Tversion negotiated
// VersionExt: a plain peer never sees them. Each request is T, its reply
// T+1; the numbers are fixed once released, new ones take the next pair.
const (
	// msgTwatch asks for the next batch of changes to the tree (a long
	// poll: the server answers when it has some).
	msgTwatch = 200
	msgRwatch = 201
	// Readdir with each entry's attributes.
	msgTreaddirplus = 202
	msgRreaddirplus = 203
	// Walk that also returns the attributes of the file reached.
	msgTwalkgetattr = 204
	msgRwalkgetattr = 205
	// Clunk of many fids in one request.
	msgTclunkmany = 206
	msgRclunkmany = 207
	// Walk to a new fid and open it.
	msgTwalkopen = 208
	msgRwalkopen = 209
	// Setattr that returns the attributes it left.
	msgTsetattrget = 210
	msgRsetattrget = 211
	// Create on a new fid, leaving the directory's, with the attributes
	// of the file made.
	msgTcreateget = 212
	msgRcreateget = 213
	// Walk to a new fid, open it and read its first entries with their
	// attributes: a directory's listing in one round trip.
	msgTwalkreaddir = 214
	msgRwalkreaddir = 215
	// A subscription to the tree's changes, answered by a stream of
	// batches on its tag (watchmsg.go).
	msgTnotify = 216
	msgRnotify = 217
	// Mkdir that makes a fid on the new directory and states it and its
	// parent (proto_ext.go).
	msgTmkdirget = 218
	msgRmkdirget = 219
)

// Protocol constants.
const (
	// Version is the protocol gsvfs speaks with every peer.
	Version = "9P2000.L"
	// VersionExt is 9P2000.L with gsvfs's extensions (message types 200
	// to 239). A gsvfs client offers it; a gsvfs server answers it back,
	// any other server answers Version or "unknown", and the client
	// then speaks plain 9P2000.L.
	VersionExt = Version + ".gsvfs2"
	// NoTag is the tag of Tversion.
	NoTag uint16 = 0xffff
	// NoFid means "no fid" (an attach without authentication).
	NoFid uint32 = 0xffffffff
	// NoUid means "no numeric user" in Tattach and Tauth.
	NoUid uint32 = 0xffffffff
	// MaxWalk is the most names one Twalk may carry.
	MaxWalk = 16
)

// QID types (the high byte of a Plan 9 mode).
const (
	QTDir     = 0x80
	QTAppend  = 0x40
	QTExcl    = 0x20
	QTMount   = 0x10
	QTAuth    = 0x08
	QTTmp     = 0x04
	QTSymlink = 0x02
	QTFile    = 0x00
)

// Tgetattr request and Rgetattr valid bits.
const (
	AttrMode        = 0x1
	AttrNlink       = 0x2
	AttrUid         = 0x4
	AttrGid         = 0x8
	AttrRdev        = 0x10
	AttrAtime       = 0x20
	AttrMtime       = 0x40
	AttrCtime       = 0x80
	AttrIno         = 0x100
	AttrSize        = 0x200
	AttrBlocks      = 0x400
	AttrBtime       = 0x800
	AttrGen         = 0x1000
	AttrDataVersion = 0x2000
	AttrBasic       = 0x7ff
	AttrAll         = 0x3fff
)

// Tsetattr valid bits. Atime/Mtime without the _SET bit mean "now".
const (
	SetattrMode     = 0x1
	SetattrUid      = 0x2
	SetattrGid      = 0x4
	SetattrSize     = 0x8
	SetattrAtime    = 0x10
	SetattrMtime    = 0x20
	SetattrCtime    = 0x40
	SetattrAtimeSet = 0x80
	SetattrMtimeSet = 0x100
)

// Tlock and Tgetlock types, Tlock flags and Rlock status.
const (
	LockRead   wireLockType = 0
	LockWrite  wireLockType = 1
	LockUnlock wireLockType = 2

	LockFlagBlock   wireLockFlags = 1
	LockFlagReclaim wireLockFlags = 2

	LockSuccess wireLockStatus = 0
	LockBlocked wireLockStatus = 1
	LockError   wireLockStatus = 2
	LockGrace   wireLockStatus = 3
)

// AtRemoveDir is Tunlinkat's flag for rmdir.
const AtRemoveDir wireUnlinkFlags = 0x200

// QID is the server's identity of a file: type, version and a path that
// stays unique and stable for as long as the file exists.
type QID struct {
	Type    uint8
	Version uint32
	Path    uint64
}

// Message is one 9P2000.L T- or R-message body.
type Message interface {
	msgType() uint8
	encode(*encoder)
	decode(*decoder)
}

// newMessage returns an empty message of type t, or nil if gsvfs does not
// know t. Tlerror and Rerror exist on the wire but are never valid requests.
func newMessage(t uint8) Message {
	if f := messageTypes[t]; f != nil {
		return f()
	}
	return nil
}

var messageTypes = [256]func() Message{
	msgRlerror: func() Message { return new(Rlerror) }, msgRerror: func() Message { return new(Rerror) },
	msgTstatfs: func() Message { return new(Tstatfs) }, msgRstatfs: func() Message { return new(Rstatfs) },
	msgTlopen: func() Message { return new(Tlopen) }, msgRlopen: func() Message { return new(Rlopen) },
	msgTlcreate: func() Message { return new(Tlcreate) }, msgRlcreate: func() Message { return new(Rlcreate) },
	msgTsymlink: func() Message { return new(Tsymlink) }, msgRsymlink: func() Message { return new(Rsymlink) },
	msgTmknod: func() Message { return new(Tmknod) }, msgRmknod: func() Message { return new(Rmknod) },
	msgTrename: func() Message { return new(Trename) }, msgRrename: func() Message { return new(Rrename) },
	msgTreadlink: func() Message { return new(Treadlink) }, msgRreadlink: func() Message { return new(Rreadlink) },
	msgTgetattr: func() Message { return new(Tgetattr) }, msgRgetattr: func() Message { return new(Rgetattr) },
	msgTsetattr: func() Message { return new(Tsetattr) }, msgRsetattr: func() Message { return new(Rsetattr) },
	msgTxattrwalk: func() Message { return new(Txattrwalk) }, msgRxattrwalk: func() Message { return new(Rxattrwalk) },
	msgTxattrcreate: func() Message { return new(Txattrcreate) }, msgRxattrcreate: func() Message { return new(Rxattrcreate) },
	msgTreaddir: func() Message { return new(Treaddir) }, msgRreaddir: func() Message { return new(Rreaddir) },
	msgTfsync: func() Message { return new(Tfsync) }, msgRfsync: func() Message { return new(Rfsync) },
	msgTlock: func() Message { return new(Tlock) }, msgRlock: func() Message { return new(Rlock) },
	msgTgetlock: func() Message { return new(Tgetlock) }, msgRgetlock: func() Message { return new(Rgetlock) },
	msgTlink: func() Message { return new(Tlink) }, msgRlink: func() Message { return new(Rlink) },
	msgTmkdir: func() Message { return new(Tmkdir) }, msgRmkdir: func() Message { return new(Rmkdir) },
	msgTrenameat: func() Message { return new(Trenameat) }, msgRrenameat: func() Message { return new(Rrenameat) },
	msgTunlinkat: func() Message { return new(Tunlinkat) }, msgRunlinkat: func() Message { return new(Runlinkat) },
	msgTversion: func() Message { return new(Tversion) }, msgRversion: func() Message { return new(Rversion) },
	msgTauth: func() Message { return new(Tauth) }, msgRauth: func() Message { return new(Rauth) },
	msgTattach: func() Message { return new(Tattach) }, msgRattach: func() Message { return new(Rattach) },
	msgTflush: func() Message { return new(Tflush) }, msgRflush: func() Message { return new(Rflush) },
	msgTwalk: func() Message { return new(Twalk) }, msgRwalk: func() Message { return new(Rwalk) },
	msgTread: func() Message { return new(Tread) }, msgRread: func() Message { return new(Rread) },
	msgTwrite: func() Message { return new(Twrite) }, msgRwrite: func() Message { return new(Rwrite) },
	msgTclunk: func() Message { return new(Tclunk) }, msgRclunk: func() Message { return new(Rclunk) },
	msgTremove: func() Message { return new(Tremove) }, msgRremove: func() Message { return new(Rremove) },
}

// empty is embedded by messages without a body.
type empty struct{}

func (empty) encode(*encoder) {}
func (empty) decode(*decoder) {}

// Rlerror carries a Linux errno.
type Rlerror struct{ Ecode wireErrno }

func (*Rlerror) msgType() uint8      { return msgRlerror }
func (m *Rlerror) encode(e *encoder) { e.u32(uint32(m.Ecode)) }
func (m *Rlerror) decode(d *decoder) { m.Ecode = wireErrno(d.u32()) }

// Rerror is the legacy string error; gsvfs only decodes it from peers.
type Rerror struct{ Ename string }

func (*Rerror) msgType() uint8      { return msgRerror }
func (m *Rerror) encode(e *encoder) { e.str(m.Ename) }
func (m *Rerror) decode(d *decoder) { m.Ename = d.str() }

type Tstatfs struct{ Fid uint32 }

func (*Tstatfs) msgType() uint8      { return msgTstatfs }
func (m *Tstatfs) encode(e *encoder) { e.u32(m.Fid) }
func (m *Tstatfs) decode(d *decoder) { m.Fid = d.u32() }

type Rstatfs struct {
	Type, Bsize                               uint32
	Blocks, Bfree, Bavail, Files, Ffree, Fsid uint64
	Namelen                                   uint32
}

func (*Rstatfs) msgType() uint8 { return msgRstatfs }
func (m *Rstatfs) encode(e *encoder) {
	e.u32(m.Type)
	e.u32(m.Bsize)
	for _, v := range [...]uint64{m.Blocks, m.Bfree, m.Bavail, m.Files, m.Ffree, m.Fsid} {
		e.u64(v)
	}
	e.u32(m.Namelen)
}
func (m *Rstatfs) decode(d *decoder) {
	m.Type, m.Bsize = d.u32(), d.u32()
	m.Blocks, m.Bfree, m.Bavail = d.u64(), d.u64(), d.u64()
	m.Files, m.Ffree, m.Fsid = d.u64(), d.u64(), d.u64()
	m.Namelen = d.u32()
}

type Tlopen struct {
	Fid   uint32
	Flags wireOpenFlags
}

func (*Tlopen) msgType() uint8      { return msgTlopen }
func (m *Tlopen) encode(e *encoder) { e.u32(m.Fid); e.u32(uint32(m.Flags)) }
func (m *Tlopen) decode(d *decoder) { m.Fid, m.Flags = d.u32(), wireOpenFlags(d.u32()) }

type Rlopen struct {
	QID    QID
	Iounit uint32
}

func (*Rlopen) msgType() uint8      { return msgRlopen }
func (m *Rlopen) encode(e *encoder) { e.qid(m.QID); e.u32(m.Iounit) }
func (m *Rlopen) decode(d *decoder) { m.QID, m.Iounit = d.qid(), d.u32() }

type Tlcreate struct {
	Fid   uint32
	Name  string
	Flags wireOpenFlags
	Mode  wireMode
	Gid   uint32
}

func (*Tlcreate) msgType() uint8 { return msgTlcreate }
func (m *Tlcreate) encode(e *encoder) {
	e.u32(m.Fid)
	e.str(m.Name)
	e.u32(uint32(m.Flags))
	e.u32(uint32(m.Mode))
	e.u32(m.Gid)
}
func (m *Tlcreate) decode(d *decoder) {
	m.Fid, m.Name = d.u32(), d.str()
	m.Flags, m.Mode, m.Gid = wireOpenFlags(d.u32()), wireMode(d.u32()), d.u32()
}

type Rlcreate struct{ Rlopen }

func (*Rlcreate) msgType() uint8 { return msgRlcreate }

type Tsymlink struct {
	Fid          uint32
	Name, Target string
	Gid          uint32
}

func (*Tsymlink) msgType() uint8 { return msgTsymlink }
func (m *Tsymlink) encode(e *encoder) {
	e.u32(m.Fid)
	e.str(m.Name)
	e.str(m.Target)
	e.u32(m.Gid)
}
func (m *Tsymlink) decode(d *decoder) {
	m.Fid, m.Name, m.Target, m.Gid = d.u32(), d.str(), d.str(), d.u32()
}

// rqid is the body of the R-messages that carry one QID.
type rqid struct{ QID QID }

func (m *rqid) encode(e *encoder) { e.qid(m.QID) }
func (m *rqid) decode(d *decoder) { m.QID = d.qid() }

type Rsymlink struct{ rqid }

func (*Rsymlink) msgType() uint8 { return msgRsymlink }

type Tmknod struct {
	Dfid              uint32
	Name              string
	Mode              wireMode
	Major, Minor, Gid uint32
}

func (*Tmknod) msgType() uint8 { return msgTmknod }
func (m *Tmknod) encode(e *encoder) {
	e.u32(m.Dfid)
	e.str(m.Name)
	e.u32(uint32(m.Mode))
	e.u32(m.Major)
	e.u32(m.Minor)
	e.u32(m.Gid)
}
func (m *Tmknod) decode(d *decoder) {
	m.Dfid, m.Name = d.u32(), d.str()
	m.Mode, m.Major, m.Minor, m.Gid = wireMode(d.u32()), d.u32(), d.u32(), d.u32()
}

type Rmknod struct{ rqid }

func (*Rmknod) msgType() uint8 { return msgRmknod }

type Trename struct {
	Fid, Dfid uint32
	Name      string
}

func (*Trename) msgType() uint8 { return msgTrename }
func (m *Trename) encode(e *encoder) {
	e.u32(m.Fid)
	e.u32(m.Dfid)
	e.str(m.Name)
}
func (m *Trename) decode(d *decoder) { m.Fid, m.Dfid, m.Name = d.u32(), d.u32(), d.str() }

type Rrename struct{ empty }

func (*Rrename) msgType() uint8 { return msgRrename }

type Treadlink struct{ Fid uint32 }

func (*Treadlink) msgType() uint8      { return msgTreadlink }
func (m *Treadlink) encode(e *encoder) { e.u32(m.Fid) }
func (m *Treadlink) decode(d *decoder) { m.Fid = d.u32() }

type Rreadlink struct{ Target string }

func (*Rreadlink) msgType() uint8      { return msgRreadlink }
func (m *Rreadlink) encode(e *encoder) { e.str(m.Target) }
func (m *Rreadlink) decode(d *decoder) { m.Target = d.str() }

type Tgetattr struct {
	Fid  uint32
	Mask uint64
}

func (*Tgetattr) msgType() uint8      { return msgTgetattr }
func (m *Tgetattr) encode(e *encoder) { e.u32(m.Fid); e.u64(m.Mask) }
func (m *Tgetattr) decode(d *decoder) { m.Fid, m.Mask = d.u32(), d.u64() }

// Rgetattr is stat in 9P2000.L; times are seconds and nanoseconds.
type Rgetattr struct {
	Valid                                    uint64
	QID                                      QID
	Mode                                     wireMode
	Uid, Gid                                 uint32
	Nlink                                    uint64
	Rdev                                     wireDev
	Size, Blksize, Blocks                    uint64
	AtimeSec, AtimeNsec, MtimeSec, MtimeNsec uint64
	CtimeSec, CtimeNsec, BtimeSec, BtimeNsec uint64
	Gen, DataVersion                         uint64
}

func (*Rgetattr) msgType() uint8 { return msgRgetattr }
func (m *Rgetattr) encode(e *encoder) {
	e.u64(m.Valid)
	e.qid(m.QID)
	e.u32(uint32(m.Mode))
	e.u32(m.Uid)
	e.u32(m.Gid)
	for _, v := range [...]uint64{m.Nlink, uint64(m.Rdev), m.Size, m.Blksize, m.Blocks,
		m.AtimeSec, m.AtimeNsec, m.MtimeSec, m.MtimeNsec, m.CtimeSec, m.CtimeNsec,
		m.BtimeSec, m.BtimeNsec, m.Gen, m.DataVersion} {
		e.u64(v)
	}
}
func (m *Rgetattr) decode(d *decoder) {
	m.Valid, m.QID = d.u64(), d.qid()
	m.Mode, m.Uid, m.Gid = wireMode(d.u32()), d.u32(), d.u32()
	m.Nlink, m.Rdev = d.u64(), wireDev(d.u64())
	for _, p := range [...]*uint64{&m.Size, &m.Blksize, &m.Blocks,
		&m.AtimeSec, &m.AtimeNsec, &m.MtimeSec, &m.MtimeNsec, &m.CtimeSec, &m.CtimeNsec,
		&m.BtimeSec, &m.BtimeNsec, &m.Gen, &m.DataVersion} {
		*p = d.u64()
	}
}

type Tsetattr struct {
	Fid, Valid                               uint32
	Mode                                     wireMode
	Uid, Gid                                 uint32
	Size                                     uint64
	AtimeSec, AtimeNsec, MtimeSec, MtimeNsec uint64
}

func (*Tsetattr) msgType() uint8 { return msgTsetattr }
func (m *Tsetattr) encode(e *encoder) {
	for _, v := range [...]uint32{m.Fid, m.Valid, uint32(m.Mode), m.Uid, m.Gid} {
		e.u32(v)
	}
	for _, v := range [...]uint64{m.Size, m.AtimeSec, m.AtimeNsec, m.MtimeSec, m.MtimeNsec} {
		e.u64(v)
	}
}
func (m *Tsetattr) decode(d *decoder) {
	m.Fid, m.Valid, m.Mode, m.Uid, m.Gid = d.u32(), d.u32(), wireMode(d.u32()), d.u32(), d.u32()
	m.Size, m.AtimeSec, m.AtimeNsec, m.MtimeSec, m.MtimeNsec = d.u64(), d.u64(), d.u64(), d.u64(), d.u64()
}

type Rsetattr struct{ empty }

func (*Rsetattr) msgType() uint8 { return msgRsetattr }

type Txattrwalk struct {
	Fid, NewFid uint32
	Name        string
}

func (*Txattrwalk) msgType() uint8 { return msgTxattrwalk }
func (m *Txattrwalk) encode(e *encoder) {
	e.u32(m.Fid)
	e.u32(m.NewFid)
	e.str(m.Name)
}
func (m *Txattrwalk) decode(d *decoder) { m.Fid, m.NewFid, m.Name = d.u32(), d.u32(), d.str() }

type Rxattrwalk struct{ Size uint64 }

func (*Rxattrwalk) msgType() uint8      { return msgRxattrwalk }
func (m *Rxattrwalk) encode(e *encoder) { e.u64(m.Size) }
func (m *Rxattrwalk) decode(d *decoder) { m.Size = d.u64() }

type Txattrcreate struct {
	Fid   uint32
	Name  string
	Size  uint64
	Flags wireXattrFlags
}

func (*Txattrcreate) msgType() uint8 { return msgTxattrcreate }
func (m *Txattrcreate) encode(e *encoder) {
	e.u32(m.Fid)
	e.str(m.Name)
	e.u64(m.Size)
	e.u32(uint32(m.Flags))
}
func (m *Txattrcreate) decode(d *decoder) {
	m.Fid, m.Name, m.Size, m.Flags = d.u32(), d.str(), d.u64(), wireXattrFlags(d.u32())
}

type Rxattrcreate struct{ empty }

func (*Rxattrcreate) msgType() uint8 { return msgRxattrcreate }

type Treaddir struct {
	Fid    uint32
	Offset uint64
	Count  uint32
}

func (*Treaddir) msgType() uint8 { return msgTreaddir }
func (m *Treaddir) encode(e *encoder) {
	e.u32(m.Fid)
	e.u64(m.Offset)
	e.u32(m.Count)
}
func (m *Treaddir) decode(d *decoder) { m.Fid, m.Offset, m.Count = d.u32(), d.u64(), d.u32() }

// Rreaddir carries packed directory entries (see Dirent).
type Rreaddir struct{ Data []byte }

func (*Rreaddir) msgType() uint8      { return msgRreaddir }
func (m *Rreaddir) encode(e *encoder) { e.data(m.Data) }
func (m *Rreaddir) decode(d *decoder) { m.Data = d.data() }

// Tfsync carries datasync since Linux 3.x; older peers omit it.
type Tfsync struct {
	Fid      uint32
	Datasync uint32
}

func (*Tfsync) msgType() uint8      { return msgTfsync }
func (m *Tfsync) encode(e *encoder) { e.u32(m.Fid); e.u32(m.Datasync) }
func (m *Tfsync) decode(d *decoder) {
	m.Fid = d.u32()
	if len(d.b) >= 4 {
		m.Datasync = d.u32()
	}
}

type Rfsync struct{ empty }

func (*Rfsync) msgType() uint8 { return msgRfsync }

// Tlock sets or releases a POSIX byte-range lock; Length 0 means to EOF.
type Tlock struct {
	Fid           uint32
	Type          wireLockType
	Flags         wireLockFlags
	Start, Length uint64
	ProcID        uint32
	ClientID      string
}

func (*Tlock) msgType() uint8 { return msgTlock }
func (m *Tlock) encode(e *encoder) {
	e.u32(m.Fid)
	e.u8(uint8(m.Type))
	e.u32(uint32(m.Flags))
	e.u64(m.Start)
	e.u64(m.Length)
	e.u32(m.ProcID)
	e.str(m.ClientID)
}
func (m *Tlock) decode(d *decoder) {
	m.Fid, m.Type, m.Flags = d.u32(), wireLockType(d.u8()), wireLockFlags(d.u32())
	m.Start, m.Length, m.ProcID, m.ClientID = d.u64(), d.u64(), d.u32(), d.str()
}

type Rlock struct{ Status wireLockStatus }

func (*Rlock) msgType() uint8      { return msgRlock }
func (m *Rlock) encode(e *encoder) { e.u8(uint8(m.Status)) }
func (m *Rlock) decode(d *decoder) { m.Status = wireLockStatus(d.u8()) }

// lockDesc is the body shared by Tgetlock (after the fid) and Rgetlock.
type lockDesc struct {
	Type          wireLockType
	Start, Length uint64
	ProcID        uint32
	ClientID      string
}

func (m *lockDesc) encode(e *encoder) {
	e.u8(uint8(m.Type))
	e.u64(m.Start)
	e.u64(m.Length)
	e.u32(m.ProcID)
	e.str(m.ClientID)
}
func (m *lockDesc) decode(d *decoder) {
	m.Type, m.Start, m.Length, m.ProcID, m.ClientID = wireLockType(d.u8()), d.u64(), d.u64(), d.u32(), d.str()
}

type Tgetlock struct {
	Fid uint32
	lockDesc
}

func (*Tgetlock) msgType() uint8      { return msgTgetlock }
func (m *Tgetlock) encode(e *encoder) { e.u32(m.Fid); m.lockDesc.encode(e) }
func (m *Tgetlock) decode(d *decoder) { m.Fid = d.u32(); m.lockDesc.decode(d) }

type Rgetlock struct{ lockDesc }

func (*Rgetlock) msgType() uint8 { return msgRgetlock }

type Tlink struct {
	Dfid, Fid uint32
	Name      string
}

func (*Tlink) msgType() uint8 { return msgTlink }
func (m *Tlink) encode(e *encoder) {
	e.u32(m.Dfid)
	e.u32(m.Fid)
	e.str(m.Name)
}
func (m *Tlink) decode(d *decoder) { m.Dfid, m.Fid, m.Name = d.u32(), d.u32(), d.str() }

type Rlink struct{ empty }

func (*Rlink) msgType() uint8 { return msgRlink }

type Tmkdir struct {
	Dfid uint32
	Name string
	Mode wireMode
	Gid  uint32
}

func (*Tmkdir) msgType() uint8 { return msgTmkdir }
func (m *Tmkdir) encode(e *encoder) {
	e.u32(m.Dfid)
	e.str(m.Name)
	e.u32(uint32(m.Mode))
	e.u32(m.Gid)
}
func (m *Tmkdir) decode(d *decoder) {
	m.Dfid, m.Name, m.Mode, m.Gid = d.u32(), d.str(), wireMode(d.u32()), d.u32()
}

type Rmkdir struct{ rqid }

func (*Rmkdir) msgType() uint8 { return msgRmkdir }

type Trenameat struct {
	OldDfid uint32
	OldName string
	NewDfid uint32
	NewName string
}

func (*Trenameat) msgType() uint8 { return msgTrenameat }
func (m *Trenameat) encode(e *encoder) {
	e.u32(m.OldDfid)
	e.str(m.OldName)
	e.u32(m.NewDfid)
	e.str(m.NewName)
}
func (m *Trenameat) decode(d *decoder) {
	m.OldDfid, m.OldName, m.NewDfid, m.NewName = d.u32(), d.str(), d.u32(), d.str()
}

type Rrenameat struct{ empty }

func (*Rrenameat) msgType() uint8 { return msgRrenameat }

type Tunlinkat struct {
	Dfid  uint32
	Name  string
	Flags wireUnlinkFlags
}

func (*Tunlinkat) msgType() uint8 { return msgTunlinkat }
func (m *Tunlinkat) encode(e *encoder) {
	e.u32(m.Dfid)
	e.str(m.Name)
	e.u32(uint32(m.Flags))
}
func (m *Tunlinkat) decode(d *decoder) {
	m.Dfid, m.Name, m.Flags = d.u32(), d.str(), wireUnlinkFlags(d.u32())
}

type Runlinkat struct{ empty }

func (*Runlinkat) msgType() uint8 { return msgRunlinkat }

type Tversion struct {
	Msize   uint32
	Version string
}

func (*Tversion) msgType() uint8      { return msgTversion }
func (m *Tversion) encode(e *encoder) { e.u32(m.Msize); e.str(m.Version) }
func (m *Tversion) decode(d *decoder) { m.Msize, m.Version = d.u32(), d.str() }

type Rversion struct{ Tversion }

func (*Rversion) msgType() uint8 { return msgRversion }

type Tauth struct {
	Afid         uint32
	Uname, Aname string
	NUname       uint32
}

func (*Tauth) msgType() uint8 { return msgTauth }
func (m *Tauth) encode(e *encoder) {
	e.u32(m.Afid)
	e.str(m.Uname)
	e.str(m.Aname)
	e.u32(m.NUname)
}
func (m *Tauth) decode(d *decoder) {
	m.Afid, m.Uname, m.Aname, m.NUname = d.u32(), d.str(), d.str(), d.u32()
}

type Rauth struct{ rqid }

func (*Rauth) msgType() uint8 { return msgRauth }

type Tattach struct {
	Fid uint32
	Tauth
}

func (*Tattach) msgType() uint8      { return msgTattach }
func (m *Tattach) encode(e *encoder) { e.u32(m.Fid); m.Tauth.encode(e) }
func (m *Tattach) decode(d *decoder) { m.Fid = d.u32(); m.Tauth.decode(d) }

type Rattach struct{ rqid }

func (*Rattach) msgType() uint8 { return msgRattach }

type Tflush struct{ OldTag uint16 }

func (*Tflush) msgType() uint8      { return msgTflush }
func (m *Tflush) encode(e *encoder) { e.u16(m.OldTag) }
func (m *Tflush) decode(d *decoder) { m.OldTag = d.u16() }

type Rflush struct{ empty }

func (*Rflush) msgType() uint8 { return msgRflush }

type Twalk struct {
	Fid, NewFid uint32
	Names       []string
}

func (*Twalk) msgType() uint8 { return msgTwalk }
func (m *Twalk) encode(e *encoder) {
	e.u32(m.Fid)
	e.u32(m.NewFid)
	encodeList(e, m.Names, e.str)
}
func (m *Twalk) decode(d *decoder) {
	m.Fid, m.NewFid = d.u32(), d.u32()
	m.Names = decodeList(d, MaxWalk, d.str)
}

type Rwalk struct{ QIDs []QID }

func (*Rwalk) msgType() uint8      { return msgRwalk }
func (m *Rwalk) encode(e *encoder) { encodeList(e, m.QIDs, e.qid) }
func (m *Rwalk) decode(d *decoder) { m.QIDs = decodeList(d, MaxWalk, d.qid) }

type Tread struct {
	Fid    uint32
	Offset uint64
	Count  uint32
}

func (*Tread) msgType() uint8 { return msgTread }
func (m *Tread) encode(e *encoder) {
	e.u32(m.Fid)
	e.u64(m.Offset)
	e.u32(m.Count)
}
func (m *Tread) decode(d *decoder) { m.Fid, m.Offset, m.Count = d.u32(), d.u64(), d.u32() }

// Rread's Data aliases the frame it was decoded from.
type Rread struct{ Data []byte }

func (*Rread) msgType() uint8      { return msgRread }
func (m *Rread) encode(e *encoder) { e.data(m.Data) }
func (m *Rread) decode(d *decoder) { m.Data = d.data() }

// Twrite's Data aliases the frame it was decoded from.
type Twrite struct {
	Fid    uint32
	Offset uint64
	Data   []byte
}

func (*Twrite) msgType() uint8 { return msgTwrite }
func (m *Twrite) encode(e *encoder) {
	e.u32(m.Fid)
	e.u64(m.Offset)
	e.data(m.Data)
}
func (m *Twrite) decode(d *decoder) { m.Fid, m.Offset, m.Data = d.u32(), d.u64(), d.data() }

type Rwrite struct{ Count uint32 }

func (*Rwrite) msgType() uint8      { return msgRwrite }
func (m *Rwrite) encode(e *encoder) { e.u32(m.Count) }
func (m *Rwrite) decode(d *decoder) { m.Count = d.u32() }

// fidMsg is the body of the T-messages that carry only a fid.
type fidMsg struct{ Fid uint32 }

func (m *fidMsg) encode(e *encoder) { e.u32(m.Fid) }
func (m *fidMsg) decode(d *decoder) { m.Fid = d.u32() }

type Tclunk struct{ fidMsg }

func (*Tclunk) msgType() uint8 { return msgTclunk }

type Rclunk struct{ empty }

func (*Rclunk) msgType() uint8 { return msgRclunk }

type Tremove struct{ fidMsg }

func (*Tremove) msgType() uint8 { return msgTremove }

type Rremove struct{ empty }

func (*Rremove) msgType() uint8 { return msgRremove }

// Dirent is one entry of an Rreaddir: Offset resumes the listing after it.
type Dirent struct {
	QID    QID
	Offset uint64
	Type   wireDirentType // DT_* as in getdents(2)
	Name   string
}

// direntSize is the encoded size of a Dirent named name.
func direntSize(name string) int { return 13 + 8 + 1 + 2 + len(name) }

// AppendDirent encodes d onto b in Rreaddir's packed form.
func AppendDirent(b []byte, d Dirent) []byte {
	e := encoder{b: b}
	e.qid(d.QID)
	e.u64(d.Offset)
	e.u8(uint8(d.Type))
	e.str(d.Name)
	return e.b
}

// ParseDirents decodes an Rreaddir body. A truncated entry is an error.
func ParseDirents(b []byte) ([]Dirent, error) {
	d := decoder{b: b}
	var out []Dirent
	for len(d.b) > 0 && d.err == nil {
		out = append(out, decodeDirent(&d))
	}
	return out, d.done()
}

// decodeDirent reads one packed directory entry.
func decodeDirent(d *decoder) Dirent {
	return Dirent{QID: d.qid(), Offset: d.u64(), Type: wireDirentType(d.u8()), Name: d.str()}
}

// encodeList writes a count[2] and then each item.
func encodeList[T any](e *encoder, items []T, put func(T)) {
	e.u16(uint16(len(items)))
	for _, it := range items {
		put(it)
	}
}

// decodeList reads a count[2] of at most most items and then the items.
func decodeList[T any](d *decoder, most int, item func() T) []T {
	n := int(d.u16())
	if n > most {
		d.err = errMalformed
		return nil
	}
	out := make([]T, 0, n)
	for range n {
		out = append(out, item())
	}
	return out
}
