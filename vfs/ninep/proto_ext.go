package ninep

// gsvfs's extensions of 9P2000.L that save round trips, spoken only on a
// connection that negotiated VersionExt (a plain peer never sees them):
//
//	Treaddirplus  fid[4] offset[8] count[4]          (as Treaddir)
//	Rreaddirplus  count[4] entries                   (DirentPlus, packed)
//	Twalkgetattr  fid[4] newfid[4] nwname[2] wname*  (as Twalk)
//	Rwalkgetattr  nwqid[2] qid* attr                 (Rwalk, then Rgetattr's body)
//	Tclunkmany    nfid[2] fid*
//	Rclunkmany
//	Twalkopen     nodefid[4] fid[4] newfid[4] nwname[2] wname* flags[4]
//	Rwalkopen     qid[13] iounit[4]                 (as Rlopen)
//	Tsetattrget   (as Tsetattr)
//	Rsetattrget   (as Rgetattr)
//	Tcreateget    newfid[4] nodefid[4] (then as Tlcreate)
//	Rcreateget    qid[13] iounit[4] attr dirattr    (Rlcreate, then two Rgetattr bodies)
//	Twalkreaddir  (as Twalkopen) count[4]
//	Rwalkreaddir  qid[13] iounit[4] count[4] entries (Rwalkopen, then Rreaddirplus's body)
//
// An Rreaddirplus entry is an Rreaddir entry followed by the body of an
// Rgetattr for it; valid 0 says the server could not stat it (it went
// away while listed). Rwalkgetattr's attributes are those of the last
// name walked, valid only when every name was walked (then newfid is
// made). Tclunkmany clunks each fid as Tclunk would; a fid unknown to
// the server is passed over, and the reply says nothing of each one.
// Twalkopen walks every name (none: a clone) to newfid, which must not
// be fid, and opens it with flags, as Tlopen does; nodefid (unless NoFid)
// is made on the file reached too, not open, as a walk to it would; if
// anything fails, no new fid is made. Tsetattrget is Tsetattr answered with the file's
// attributes after it. Tcreateget is Tlcreate made on newfid, a clone of
// fid (a directory's), which is left as it was; newfid stands on the new
// file, open, nodefid (unless NoFid) on the new file too, not open, and
// the reply has its attributes and then the directory's. Twalkreaddir
// is Twalkopen followed by a Treaddirplus of newfid from offset 0 with
// count; if the listing fails, no new fid is made. A server that does
// not know it refuses it as any unknown type (EOPNOTSUPP), and the
// client then walks, opens and lists in two requests.

// MaxClunkMany is the most fids one Tclunkmany may carry.
const MaxClunkMany = 1024

func init() {
	messageTypes[msgTreaddirplus] = func() Message { return new(Treaddirplus) }
	messageTypes[msgRreaddirplus] = func() Message { return new(Rreaddirplus) }
	messageTypes[msgTwalkgetattr] = func() Message { return new(Twalkgetattr) }
	messageTypes[msgRwalkgetattr] = func() Message { return new(Rwalkgetattr) }
	messageTypes[msgTclunkmany] = func() Message { return new(Tclunkmany) }
	messageTypes[msgRclunkmany] = func() Message { return new(Rclunkmany) }
	messageTypes[msgTwalkopen] = func() Message { return new(Twalkopen) }
	messageTypes[msgRwalkopen] = func() Message { return new(Rwalkopen) }
	messageTypes[msgTsetattrget] = func() Message { return new(Tsetattrget) }
	messageTypes[msgRsetattrget] = func() Message { return new(Rsetattrget) }
	messageTypes[msgTcreateget] = func() Message { return new(Tcreateget) }
	messageTypes[msgRcreateget] = func() Message { return new(Rcreateget) }
	messageTypes[msgTwalkreaddir] = func() Message { return new(Twalkreaddir) }
	messageTypes[msgRwalkreaddir] = func() Message { return new(Rwalkreaddir) }
}

// isExtension reports whether m is one of gsvfs's extension messages.
func isExtension(m Message) bool { return m.msgType() >= msgTwatch }

// Treaddirplus is Treaddir asking for each entry's attributes too.
type Treaddirplus struct{ Treaddir }

func (*Treaddirplus) msgType() uint8 { return msgTreaddirplus }

// Rreaddirplus carries packed entries with attributes (see DirentPlus).
type Rreaddirplus struct{ Rreaddir }

func (*Rreaddirplus) msgType() uint8 { return msgRreaddirplus }

// Twalkgetattr is Twalk asking for the attributes of the file reached.
type Twalkgetattr struct{ Twalk }

func (*Twalkgetattr) msgType() uint8 { return msgTwalkgetattr }

// Rwalkgetattr is Rwalk with the attributes of the last file walked.
type Rwalkgetattr struct {
	Rwalk
	Attr Rgetattr
}

func (*Rwalkgetattr) msgType() uint8 { return msgRwalkgetattr }
func (m *Rwalkgetattr) encode(e *encoder) {
	m.Rwalk.encode(e)
	m.Attr.encode(e)
}
func (m *Rwalkgetattr) decode(d *decoder) {
	m.Rwalk.decode(d)
	m.Attr.decode(d)
}

// Tclunkmany clunks many fids in one request: the clunks of forgotten
// files, which a client sends in the background.
type Tclunkmany struct{ Fids []uint32 }

func (*Tclunkmany) msgType() uint8      { return msgTclunkmany }
func (m *Tclunkmany) encode(e *encoder) { encodeList(e, m.Fids, e.u32) }
func (m *Tclunkmany) decode(d *decoder) { m.Fids = decodeList(d, MaxClunkMany, d.u32) }

type Rclunkmany struct{ empty }

func (*Rclunkmany) msgType() uint8 { return msgRclunkmany }

// Twalkopen is Twalk and Tlopen of the new fid in one request: what an
// open costs a client that keeps its fids for walking from. A client
// opening a file it knows only by a listing gets the file's own fid too
// (NodeFid), so the server holds the file, and watches a directory, as
// long as the client keeps it.
type Twalkopen struct {
	NodeFid uint32
	Twalk
	Flags wireOpenFlags
}

func (*Twalkopen) msgType() uint8 { return msgTwalkopen }
func (m *Twalkopen) encode(e *encoder) {
	e.u32(m.NodeFid)
	m.Twalk.encode(e)
	e.u32(uint32(m.Flags))
}
func (m *Twalkopen) decode(d *decoder) {
	m.NodeFid = d.u32()
	m.Twalk.decode(d)
	m.Flags = wireOpenFlags(d.u32())
}

// Rwalkopen is the open's Rlopen.
type Rwalkopen struct{ Rlopen }

func (*Rwalkopen) msgType() uint8 { return msgRwalkopen }

// Twalkreaddir is Twalkopen of a directory and a Treaddirplus of the
// new fid from its start: what opening and listing a directory costs
// in one round trip.
type Twalkreaddir struct {
	Twalkopen
	Count uint32
}

func (*Twalkreaddir) msgType() uint8 { return msgTwalkreaddir }
func (m *Twalkreaddir) encode(e *encoder) {
	m.Twalkopen.encode(e)
	e.u32(m.Count)
}
func (m *Twalkreaddir) decode(d *decoder) {
	m.Twalkopen.decode(d)
	m.Count = d.u32()
}

// Rwalkreaddir is the open's Rlopen and the listing's first entries.
type Rwalkreaddir struct {
	Rlopen
	Rreaddirplus
}

func (*Rwalkreaddir) msgType() uint8 { return msgRwalkreaddir }
func (m *Rwalkreaddir) encode(e *encoder) {
	m.Rlopen.encode(e)
	m.Rreaddirplus.encode(e)
}
func (m *Rwalkreaddir) decode(d *decoder) {
	m.Rlopen.decode(d)
	m.Rreaddirplus.decode(d)
}

// Tsetattrget is Tsetattr asking for the attributes it leaves, which a
// client answers its caller with (and keeps).
type Tsetattrget struct{ Tsetattr }

func (*Tsetattrget) msgType() uint8 { return msgTsetattrget }

// Rsetattrget is the file's attributes after the change.
type Rsetattrget struct{ Rgetattr }

func (*Rsetattrget) msgType() uint8 { return msgRsetattrget }

// Tcreateget is Tlcreate on a clone of the directory's fid, answered
// with the new file's attributes: a create in one round trip that leaves
// the client its directory's fid, and gives it a fid of the new file's
// own (NodeFid), as a walk to it would.
type Tcreateget struct {
	NewFid, NodeFid uint32
	Tlcreate
}

func (*Tcreateget) msgType() uint8 { return msgTcreateget }
func (m *Tcreateget) encode(e *encoder) {
	e.u32(m.NewFid)
	e.u32(m.NodeFid)
	m.Tlcreate.encode(e)
}
func (m *Tcreateget) decode(d *decoder) {
	m.NewFid, m.NodeFid = d.u32(), d.u32()
	m.Tlcreate.decode(d)
}

// Rcreateget is the open of the new file, its attributes and the
// directory's after the create.
type Rcreateget struct {
	Rlopen
	Attr, DirAttr Rgetattr
}

func (*Rcreateget) msgType() uint8 { return msgRcreateget }
func (m *Rcreateget) encode(e *encoder) {
	m.Rlopen.encode(e)
	m.Attr.encode(e)
	m.DirAttr.encode(e)
}
func (m *Rcreateget) decode(d *decoder) {
	m.Rlopen.decode(d)
	m.Attr.decode(d)
	m.DirAttr.decode(d)
}

// DirentPlus is one entry of an Rreaddirplus: the entry and its
// attributes (Attr.Valid 0 when the server had none).
type DirentPlus struct {
	Dirent
	Attr Rgetattr
}

// getattrSize is the encoded size of an Rgetattr body.
const getattrSize = 8 + 13 + 3*4 + 15*8

// direntPlusSize is the encoded size of a DirentPlus named name.
func direntPlusSize(name string) int { return direntSize(name) + getattrSize }

// AppendDirentPlus encodes d onto b in Rreaddirplus's packed form.
func AppendDirentPlus(b []byte, d DirentPlus) []byte {
	b = AppendDirent(b, d.Dirent)
	e := encoder{b: b}
	d.Attr.encode(&e)
	return e.b
}

// ParseDirentsPlus decodes an Rreaddirplus body. A truncated entry is an
// error.
func ParseDirentsPlus(b []byte) ([]DirentPlus, error) {
	var out []DirentPlus
	err := eachDirent(b, true, func(e *DirentPlus) { out = append(out, *e) })
	return out, err
}

// eachDirent calls fn with each entry of an Rreaddir body, or of an
// Rreaddirplus body if plus (a plain entry's Attr is left zero). The
// entry passed is fn's only for the call, so a client's listing makes
// nothing per entry but what it keeps.
func eachDirent(b []byte, plus bool, fn func(*DirentPlus)) error {
	d := decoder{b: b}
	var e DirentPlus
	for len(d.b) > 0 && d.err == nil {
		e.Dirent = decodeDirent(&d)
		if plus {
			e.Attr.decode(&d)
		}
		if d.err == nil {
			fn(&e)
		}
	}
	return d.done()
}

// Tmkdirget, an extension of its own:
//
//	Tmkdirget  newfid[4] (then as Tmkdir)
//	Rmkdirget  qid[13] attr dirattr             (Rmkdir, then two Rgetattr bodies)
//
// Tmkdirget is Tmkdir that also makes newfid on the new directory, as a
// walk to it would, and answers with its attributes and then its
// parent's (valid 0 where the server could not stat one): a mkdir in one
// round trip where Tmkdir and the walk after it took two (a device's
// /proc/NAME, made through a gateway). A newfid in use fails the
// request before anything is made. A server that does not know it refuses it as any
// unknown type (EOPNOTSUPP), and the client then sends Tmkdir and a walk.
func init() {
	messageTypes[msgTmkdirget] = func() Message { return new(Tmkdirget) }
	messageTypes[msgRmkdirget] = func() Message { return new(Rmkdirget) }
}

// Tmkdirget is Tmkdir making NewFid on the new directory too.
type Tmkdirget struct {
	NewFid uint32
	Tmkdir
}

func (*Tmkdirget) msgType() uint8 { return msgTmkdirget }
func (m *Tmkdirget) encode(e *encoder) {
	e.u32(m.NewFid)
	m.Tmkdir.encode(e)
}
func (m *Tmkdirget) decode(d *decoder) {
	m.NewFid = d.u32()
	m.Tmkdir.decode(d)
}

// Rmkdirget is the new directory's QID, its attributes and its
// parent's after the mkdir.
type Rmkdirget struct {
	QID           QID
	Attr, DirAttr Rgetattr
}

func (*Rmkdirget) msgType() uint8 { return msgRmkdirget }
func (m *Rmkdirget) encode(e *encoder) {
	e.qid(m.QID)
	m.Attr.encode(e)
	m.DirAttr.encode(e)
}
func (m *Rmkdirget) decode(d *decoder) {
	m.QID = d.qid()
	m.Attr.decode(d)
	m.DirAttr.decode(d)
}
