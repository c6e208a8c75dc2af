package ninep

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// codecSamples is one realistic value of every message type the codec
// knows, with the tag it travels under. The fuzzers seed from it too.
func codecSamples() []struct {
	tag uint16
	m   Message
} {
	q := QID{Type: QTFile, Version: 0x5eed, Path: 0x1122334455667788}
	dq := QID{Type: QTDir, Version: 0, Path: 2}
	dirents := AppendDirent(nil, Dirent{QID: dq, Offset: 1, Type: 4, Name: "."})
	dirents = AppendDirent(dirents, Dirent{QID: q, Offset: 2, Type: 8, Name: "notes.txt"})
	lock := lockDesc{Type: LockWrite, Start: 100, Length: 0, ProcID: 4242, ClientID: "host-a"}
	attr := &Rgetattr{Valid: AttrBasic, QID: q, Mode: 0o100644, Uid: 1000, Gid: 1000, Nlink: 1, Size: 12345,
		Blksize: 4096, Blocks: 24, AtimeSec: 1700000000, MtimeSec: 1700000001, MtimeNsec: 2, CtimeSec: 1700000002}
	direntsPlus := AppendDirentPlus(nil, DirentPlus{Dirent{QID: dq, Offset: 1, Type: 4, Name: "."}, Rgetattr{}})
	direntsPlus = AppendDirentPlus(direntsPlus, DirentPlus{Dirent{QID: q, Offset: 2, Type: 8, Name: "notes.txt"}, *attr})
	return []struct {
		tag uint16
		m   Message
	}{
		{1, &Rlerror{Ecode: 2}},
		{2, &Rerror{Ename: "file not found"}},
		{3, &Tstatfs{Fid: 7}},
		{3, &Rstatfs{Type: v9fsMagic, Bsize: 4096, Blocks: 1 << 20, Bfree: 1 << 19, Bavail: 1 << 18,
			Files: 65536, Ffree: 60000, Fsid: 0xdeadbeef, Namelen: 255}},
		{4, &Tlopen{Fid: 7, Flags: 2}},
		{4, &Rlopen{QID: q, Iounit: 8168}},
		{5, &Tlcreate{Fid: 7, Name: "new.txt", Flags: 0o1102, Mode: 0o644, Gid: 1000}},
		{5, &Rlcreate{Rlopen{QID: q, Iounit: 8168}}},
		{6, &Tsymlink{Fid: 7, Name: "link", Target: "../target/file", Gid: 1000}},
		{6, &Rsymlink{rqid{QID{Type: QTSymlink, Path: 99}}}},
		{7, &Tmknod{Dfid: 7, Name: "fifo", Mode: 0o10644, Major: 0, Minor: 0, Gid: 1000}},
		{7, &Rmknod{rqid{q}}},
		{8, &Trename{Fid: 8, Dfid: 7, Name: "renamed"}},
		{8, &Rrename{}},
		{9, &Treadlink{Fid: 9}},
		{9, &Rreadlink{Target: "/etc/hostname"}},
		{10, &Tgetattr{Fid: 9, Mask: AttrAll}},
		{10, &Rgetattr{Valid: AttrBasic, QID: q, Mode: 0o100644, Uid: 1000, Gid: 1000,
			Nlink: 1, Rdev: 0, Size: 12345, Blksize: 4096, Blocks: 24,
			AtimeSec: 1700000000, AtimeNsec: 1, MtimeSec: 1700000001, MtimeNsec: 2,
			CtimeSec: 1700000002, CtimeNsec: 3, BtimeSec: 0, BtimeNsec: 0, Gen: 5, DataVersion: 6}},
		{11, &Tsetattr{Fid: 9, Valid: SetattrMode | SetattrSize | SetattrMtime | SetattrMtimeSet,
			Mode: 0o600, Size: 10, MtimeSec: 1700000000, MtimeNsec: 500}},
		{11, &Rsetattr{}},
		{12, &Txattrwalk{Fid: 9, NewFid: 10, Name: "user.comment"}},
		{12, &Rxattrwalk{Size: 42}},
		{13, &Txattrcreate{Fid: 10, Name: "user.comment", Size: 5, Flags: 1}},
		{13, &Rxattrcreate{}},
		{14, &Treaddir{Fid: 7, Offset: 0, Count: 8168}},
		{14, &Rreaddir{Data: dirents}},
		{15, &Tfsync{Fid: 9, Datasync: 1}},
		{15, &Rfsync{}},
		{16, &Tlock{Fid: 9, Type: LockWrite, Flags: LockFlagBlock, Start: 0, Length: 100, ProcID: 4242, ClientID: "host-a"}},
		{16, &Rlock{Status: LockBlocked}},
		{17, &Tgetlock{Fid: 9, lockDesc: lock}},
		{17, &Rgetlock{lockDesc: lock}},
		{18, &Tlink{Dfid: 7, Fid: 9, Name: "hard"}},
		{18, &Rlink{}},
		{19, &Tmkdir{Dfid: 7, Name: "sub", Mode: 0o755, Gid: 1000}},
		{19, &Rmkdir{rqid{dq}}},
		{20, &Trenameat{OldDfid: 7, OldName: "a", NewDfid: 8, NewName: "b"}},
		{20, &Rrenameat{}},
		{21, &Tunlinkat{Dfid: 7, Name: "sub", Flags: AtRemoveDir}},
		{21, &Runlinkat{}},
		{NoTag, &Tversion{Msize: 1 << 20, Version: Version}},
		{NoTag, &Rversion{Tversion{Msize: 65536, Version: Version}}},
		{40, &Twatch{Fid: 9, Count: 65536}},
		{40, host.rwatch([]vfs.Change{{Lost: true}, {Dir: 2, Name: "gone"},
			{Dir: 2, Name: "notes.txt", Data: true, Attr: vfs.Attr{Ino: 7, Gen: 9, Mode: syscall.S_IFREG | 0o644,
				Nlink: 1, Size: 5, Blocks: 8, Blksize: 4096, Atime: time.Unix(1, 2), Mtime: time.Unix(3, 4),
				Ctime: time.Unix(5, 6), Watched: true}}})},
		{41, &Tnotify{Twatch{Fid: 9, Count: 65536}, notifyAhead}},
		{41, &Rnotify{*host.rwatch([]vfs.Change{{Dir: 2, Name: "gone"}})}},
		{22, &Tauth{Afid: 1, Uname: "alice", Aname: "/home", NUname: 1000}},
		{22, &Rauth{rqid{QID{Type: QTAuth, Path: 1}}}},
		{23, &Tattach{Fid: 0, Tauth: Tauth{Afid: NoFid, Uname: "root", Aname: "/home", NUname: 0}}},
		{23, &Rattach{rqid{dq}}},
		{24, &Tflush{OldTag: 16}},
		{24, &Rflush{}},
		{25, &Twalk{Fid: 0, NewFid: 1, Names: []string{"home", "alice", "notes.txt"}}},
		{25, &Rwalk{QIDs: []QID{dq, dq, q}}},
		{26, &Tread{Fid: 1, Offset: 4096, Count: 8168}},
		{26, &Rread{Data: []byte("hello, world\n")}},
		{27, &Twrite{Fid: 1, Offset: 13, Data: []byte("more text")}},
		{27, &Rwrite{Count: 9}},
		{28, &Tclunk{fidMsg{1}}},
		{28, &Rclunk{}},
		{29, &Tremove{fidMsg{1}}},
		{29, &Rremove{}},
		{30, &Treaddirplus{Treaddir{Fid: 7, Offset: 2, Count: 8168}}},
		{30, &Rreaddirplus{Rreaddir{Data: direntsPlus}}},
		{31, &Twalkgetattr{Twalk{Fid: 0, NewFid: 1, Names: []string{"home", "notes.txt"}}}},
		{31, &Rwalkgetattr{Rwalk{QIDs: []QID{dq, q}}, *attr}},
		{32, &Tclunkmany{Fids: []uint32{1, 2, 0xfffffffe}}},
		{32, &Rclunkmany{}},
		{33, &Twalkopen{2, Twalk{Fid: 0, NewFid: 1, Names: []string{"notes.txt"}}, syscall.O_RDWR}},
		{33, &Rwalkopen{Rlopen{QID: q, Iounit: 8168}}},
		{37, &Twalkreaddir{Twalkopen{2, Twalk{Fid: 0, NewFid: 1, Names: []string{"src"}}, syscall.O_RDONLY}, 8168}},
		{37, &Rwalkreaddir{Rlopen{QID: q, Iounit: 8168}, Rreaddirplus{Rreaddir{Data: []byte{1, 2, 3}}}}},
		{34, &Tsetattrget{Tsetattr{Fid: 1, Valid: SetattrMode | SetattrMtime | SetattrMtimeSet, Mode: 0o600, MtimeSec: 1700000000}}},
		{34, &Rsetattrget{*attr}},
		{35, &Tcreateget{NewFid: 2, NodeFid: 3, Tlcreate: Tlcreate{Fid: 1, Name: "new.txt", Flags: syscall.O_RDWR | syscall.O_EXCL, Mode: 0o644, Gid: 100}}},
		{35, &Rcreateget{Rlopen{QID: q, Iounit: 8168}, *attr, *attr}},
		{38, &Tmkdirget{NewFid: 2, Tmkdir: Tmkdir{Dfid: 1, Name: "d", Mode: 0o755, Gid: 100}}},
		{38, &Rmkdirget{dq, *attr, *attr}},
	}
}

func msgName(m Message) string { return strings.TrimPrefix(fmt.Sprintf("%T", m), "*ninep.") }

func TestCodecRoundTrip(t *testing.T) {
	covered := map[uint8]bool{}
	for _, tc := range codecSamples() {
		t.Run(msgName(tc.m), func(t *testing.T) {
			covered[tc.m.msgType()] = true
			frame := appendFrame(nil, tc.tag, tc.m)
			if got, want := binary.LittleEndian.Uint32(frame), uint32(len(frame)); got != want {
				t.Errorf("size field: got %d, want %d", got, want)
			}
			if got, want := frame[4], tc.m.msgType(); got != want {
				t.Errorf("type byte: got %d, want %d", got, want)
			}
			tag, m, err := decodeFrame(frame)
			if err != nil {
				t.Fatalf("decodeFrame: got error %v, want nil", err)
			}
			if got, want := tag, tc.tag; got != want {
				t.Errorf("tag: got %d, want %d", got, want)
			}
			if !reflect.DeepEqual(m, tc.m) {
				t.Errorf("message: got %#v, want %#v", m, tc.m)
			}
			// appendFrame appends: a frame after existing bytes is the same frame.
			prefix := []byte("xyz")
			if got, want := appendFrame(prefix, tc.tag, tc.m)[len(prefix):], frame; !bytes.Equal(got, want) {
				t.Errorf("appendFrame after a prefix: got %x, want %x", got, want)
			}
		})
	}
	for typ := range 256 {
		if newMessage(uint8(typ)) != nil && !covered[uint8(typ)] {
			t.Errorf("message type %d has no round-trip case", typ)
		}
	}
}

// TestCodecEmptyLists round-trips the zero-length forms: a walk of no
// names (a clone) and empty data.
func TestCodecEmptyLists(t *testing.T) {
	tests := []Message{
		&Twalk{Fid: 1, NewFid: 2, Names: []string{}},
		&Rwalk{QIDs: []QID{}},
		&Rread{Data: []byte{}},
		&Twrite{Fid: 1, Offset: 0, Data: []byte{}},
		&Rreaddir{Data: []byte{}},
		&Tversion{Msize: 8192, Version: ""},
	}
	for _, want := range tests {
		t.Run(msgName(want), func(t *testing.T) {
			_, got, err := decodeFrame(appendFrame(nil, 1, want))
			if err != nil {
				t.Fatalf("decodeFrame: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

// TestCodecFsyncWithoutDatasync: old peers send Tfsync with only a fid.
func TestCodecFsyncWithoutDatasync(t *testing.T) {
	frame := []byte{0, 0, 0, 0, msgTfsync, 5, 0, 9, 0, 0, 0}
	binary.LittleEndian.PutUint32(frame, uint32(len(frame)))
	tag, m, err := decodeFrame(frame)
	if err != nil {
		t.Fatalf("decodeFrame: got error %v, want nil", err)
	}
	if got, want := tag, uint16(5); got != want {
		t.Errorf("tag: got %d, want %d", got, want)
	}
	if got, want := m, Message(&Tfsync{Fid: 9}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// frameWithSize returns a copy of frame with its size field set to n.
func frameWithSize(frame []byte, n uint32) []byte {
	b := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(b, n)
	return b
}

func TestDecodeRejectsTruncated(t *testing.T) {
	for _, tc := range codecSamples() {
		t.Run(msgName(tc.m), func(t *testing.T) {
			frame := appendFrame(nil, tc.tag, tc.m)
			for n := range len(frame) {
				// As cut off: the size field still claims the whole frame.
				if _, m, err := decodeFrame(frame[:n]); err == nil {
					t.Errorf("decodeFrame(first %d of %d bytes): got %#v, want an error", n, len(frame), m)
				}
				if n < 4 {
					continue
				}
				// The size field agrees with the cut: the body is short.
				short := frameWithSize(frame[:n], uint32(n))
				_, m, err := decodeFrame(short)
				if _, isFsync := tc.m.(*Tfsync); isFsync && n == headerSize+4 {
					// Tfsync without datasync is the older form, and valid.
					if err != nil {
						t.Errorf("Tfsync without datasync: got error %v, want nil", err)
					}
					continue
				}
				if err == nil {
					t.Errorf("decodeFrame(%d-byte body cut to %d): got %#v, want an error", len(frame)-headerSize, n-headerSize, m)
				}
			}
		})
	}
}

func TestDecodeRejectsBadSize(t *testing.T) {
	frame := appendFrame(nil, 1, &Twalk{Fid: 1, NewFid: 2, Names: []string{"a", "b"}})
	n := uint32(len(frame))
	tests := []struct {
		name  string
		frame []byte
	}{
		{"SizeZero", frameWithSize(frame, 0)},
		{"SizeOneShort", frameWithSize(frame, n-1)},
		{"SizeOneLong", frameWithSize(frame, n+1)},
		{"SizeHuge", frameWithSize(frame, 0xffffffff)},
		{"SizeBelowHeader", frameWithSize(frame[:headerSize], 6)},
		{"Empty", nil},
		{"OnlySize", frameWithSize(frame[:4], 4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, m, err := decodeFrame(tc.frame); err == nil {
				t.Errorf("decodeFrame(%x): got %#v, want an error", tc.frame, m)
			}
		})
	}
}

func TestDecodeRejectsTrailingBytes(t *testing.T) {
	for _, tc := range codecSamples() {
		t.Run(msgName(tc.m), func(t *testing.T) {
			for _, extra := range [][]byte{{0}, {1, 2, 3}, {0, 0, 0, 0, 0}} {
				frame := append(appendFrame(nil, tc.tag, tc.m), extra...)
				frame = frameWithSize(frame, uint32(len(frame)))
				if _, m, err := decodeFrame(frame); err == nil {
					t.Errorf("decodeFrame with %d trailing bytes: got %#v, want an error", len(extra), m)
				}
			}
		})
	}
}

// handFrame builds a frame from a type, a tag and a hand-made body.
func handFrame(typ uint8, tag uint16, body ...[]byte) []byte {
	b := []byte{0, 0, 0, 0, typ}
	b = binary.LittleEndian.AppendUint16(b, tag)
	for _, p := range body {
		b = append(b, p...)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

func wire16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func wire32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func wire64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestDecodeRejectsMalformedBodies(t *testing.T) {
	names := func(n int) [][]byte {
		body := [][]byte{wire32(1), wire32(2), wire16(uint16(n))}
		for range n {
			body = append(body, wire16(1), []byte("x"))
		}
		return body
	}
	qids := func(n int) [][]byte {
		body := [][]byte{wire16(uint16(n))}
		for range n {
			body = append(body, make([]byte, 13))
		}
		return body
	}
	tests := []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"StringPastEnd", handFrame(msgTversion, NoTag, wire32(8192), wire16(100), []byte("9P2000.L")), false},
		{"StringLengthMax", handFrame(msgTversion, NoTag, wire32(8192), wire16(0xffff)), false},
		{"SecondStringPastEnd", handFrame(msgTrenameat, 1, wire32(1), wire16(1), []byte("a"), wire32(2), wire16(2), []byte("b")), false},
		{"DataPastEnd", handFrame(msgTwrite, 1, wire32(1), wire64(0), wire32(10), []byte("short")), false},
		{"DataCountHuge", handFrame(msgRread, 1, wire32(0xffffffff), []byte("x")), false},
		{"ReaddirPastEnd", handFrame(msgRreaddir, 1, wire32(100)), false},
		{"Twalk16Names", handFrame(msgTwalk, 1, names(16)...), true},
		{"Twalk17Names", handFrame(msgTwalk, 1, names(17)...), false},
		{"TwalkCountMax", handFrame(msgTwalk, 1, wire32(1), wire32(2), wire16(0xffff)), false},
		{"TwalkFewerNamesThanCount", handFrame(msgTwalk, 1, append(names(2)[:3:3], wire16(1), []byte("x"))...), false},
		{"Rwalk16QIDs", handFrame(msgRwalk, 1, qids(16)...), true},
		{"Rwalk17QIDs", handFrame(msgRwalk, 1, qids(17)...), false},
		{"TfsyncPartialDatasync", handFrame(msgTfsync, 1, wire32(1), []byte{1, 0}), false},
		{"TclunkmanyMax", handFrame(msgTclunkmany, 1, wire16(MaxClunkMany), make([]byte, 4*MaxClunkMany)), true},
		{"TclunkmanyOverMax", handFrame(msgTclunkmany, 1, wire16(MaxClunkMany+1), make([]byte, 4*MaxClunkMany+4)), false},
		{"TclunkmanyPastEnd", handFrame(msgTclunkmany, 1, wire16(3), wire32(1)), false},
		{"RwalkgetattrNoAttr", handFrame(msgRwalkgetattr, 1, wire16(0)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, m, err := decodeFrame(tc.frame)
			if got, want := err == nil, tc.ok; got != want {
				t.Errorf("decodeFrame: got message %#v, error %v; want ok=%v", m, err, want)
			}
		})
	}
}

func TestDecodeRejectsUnknownTypes(t *testing.T) {
	known := map[uint8]bool{}
	for _, tc := range codecSamples() {
		known[tc.m.msgType()] = true
	}
	for typ := range 256 {
		if known[uint8(typ)] {
			continue
		}
		// Bodies long enough for any known message: the type alone must fail.
		for _, body := range [][]byte{nil, make([]byte, 4), make([]byte, 64)} {
			if _, m, err := decodeFrame(handFrame(uint8(typ), 1, body)); err == nil {
				t.Errorf("type %d with a %d-byte body: got %#v, want an error", typ, len(body), m)
			}
		}
	}
	// Tlerror exists on the wire but is never valid, in either direction.
	if _, m, err := decodeFrame(handFrame(msgTlerror, 1, wire32(2))); err == nil {
		t.Errorf("Tlerror: got %#v, want an error", m)
	}
}

func TestDirentRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ents []Dirent
	}{
		{"Empty", nil},
		{"One", []Dirent{{QID: QID{Type: QTFile, Version: 3, Path: 12}, Offset: 1, Type: 8, Name: "a"}}},
		{"Mixed", []Dirent{
			{QID: QID{Type: QTDir, Path: 2}, Offset: 1, Type: 4, Name: "."},
			{QID: QID{Type: QTDir, Path: 1}, Offset: 2, Type: 4, Name: ".."},
			{QID: QID{Type: QTSymlink, Path: 77}, Offset: 1 << 40, Type: 10, Name: "link"},
			{QID: QID{Type: QTFile, Version: 0xffffffff, Path: 1<<64 - 1}, Offset: 1<<64 - 1, Type: 8, Name: strings.Repeat("n", 255)},
			{QID: QID{Path: 5}, Offset: 9, Type: 0, Name: "ünïcödé"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			size := 0
			for _, d := range tc.ents {
				b = AppendDirent(b, d)
				size += direntSize(d.Name)
			}
			if got, want := len(b), size; got != want {
				t.Errorf("encoded size: got %d, want %d (sum of direntSize)", got, want)
			}
			got, err := ParseDirents(b)
			if err != nil {
				t.Fatalf("ParseDirents: got error %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tc.ents) {
				t.Errorf("got %#v, want %#v", got, tc.ents)
			}
			for n := 1; n < len(b); n++ {
				ents, err := ParseDirents(b[:n])
				if k, ok := direntBoundary(tc.ents, n); ok {
					if err != nil || !reflect.DeepEqual(ents, tc.ents[:k]) {
						t.Errorf("ParseDirents(first %d entries): got %#v, %v; want %#v, nil", k, ents, err, tc.ents[:k])
					}
				} else if err == nil {
					t.Errorf("ParseDirents(first %d of %d bytes): got %#v, want an error", n, len(b), ents)
				}
			}
		})
	}
}

// direntBoundary reports whether n bytes end exactly after the first k entries.
func direntBoundary(ents []Dirent, n int) (k int, ok bool) {
	at := 0
	for i, d := range ents {
		at += direntSize(d.Name)
		if at == n {
			return i + 1, true
		}
	}
	return 0, false
}
