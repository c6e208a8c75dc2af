package ninep

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// FuzzDecode: decodeFrame never panics, and whatever it accepts encodes
// back to the very same bytes, so decode and encode agree exactly. The one
// exception is Tfsync, whose datasync field older peers leave out: that
// short form must re-encode to the long form with datasync 0.
func FuzzDecode(f *testing.F) {
	for _, tc := range codecSamples() {
		frame := appendFrame(nil, tc.tag, tc.m)
		f.Add(frame)
		f.Add(frame[:len(frame)-1])
	}
	f.Add(handFrame(msgTfsync, 3, wire32(9)))
	f.Add(handFrame(msgTwalk, 1, wire32(1), wire32(2), wire16(17)))
	f.Add([]byte{})
	f.Add([]byte("\x07\x00\x00\x00\xee\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tag, m, err := decodeFrame(data)
		if err != nil {
			if m != nil {
				t.Fatalf("decodeFrame: got message %#v with error %v, want no message", m, err)
			}
			return
		}
		want := data
		if _, ok := m.(*Tfsync); ok && len(data) == headerSize+4 {
			want = frameWithSize(append(bytes.Clone(data), 0, 0, 0, 0), uint32(len(data)+4))
		}
		frame := appendFrame(nil, tag, m)
		if !bytes.Equal(frame, want) {
			t.Fatalf("re-encoded %T: got %x, want %x", m, frame, want)
		}
		tag2, m2, err := decodeFrame(frame)
		if err != nil {
			t.Fatalf("decoding the re-encoded %T: got error %v, want nil", m, err)
		}
		if tag2 != tag || !reflect.DeepEqual(m2, m) {
			t.Fatalf("decoding the re-encoded frame: got tag %d %#v, want tag %d %#v", tag2, m2, tag, m)
		}
	})
}

// fuzzMsize is the msize FuzzServer negotiates, small so that oversized
// frames are cheap to make.
const fuzzMsize = 8192

// FuzzServer sends arbitrary bytes after a valid Tversion. Whatever they
// are, the server must not panic (not even in a request, where it would
// recover), must answer only with well-formed frames, must close the
// connection once the peer stops sending, and must go on serving others.
//
// The bytes go out unchanged either way; pipelined only decides their
// timing. Paced (false), each complete frame waits for its reply before
// the next goes, so a session means what it says (the server runs
// requests concurrently) and a failure replays exactly; whatever does not
// split into frames follows in one piece. Pipelined (true), everything
// goes at once, which exercises tags in flight, flushes and backpressure.
func FuzzServer(f *testing.F) {
	for _, s := range fuzzServerSeeds() {
		f.Add(s, false)
		f.Add(s, true)
	}
	log := &errorRecorder{}
	srv, addr := serveForFuzz(f, noDevices(newDisk(f)), log)
	f.Fuzz(func(t *testing.T, input []byte, pipelined bool) {
		before := len(log.errors())
		fuzzExchange(t, addr, input, pipelined)
		// Once the server has let go of the connection, every request
		// of this input has finished, and logged what it would.
		waitNoConns(t, srv)
		if msgs := log.errors()[before:]; len(msgs) > 0 {
			t.Fatalf("server logged errors (a recovered panic?): %q", msgs)
		}
		checkFreshConn(t, addr)
	})
}

// fuzzExchange sends input after a Tversion and reads every reply until
// the server closes the connection. It returns the replies.
func fuzzExchange(t testing.TB, addr Address, input []byte, pipelined bool) []Message {
	t.Helper()
	rc := wireDial(t, addr)
	defer rc.nc.Close()
	rc.version(t, fuzzMsize)
	var replies []Message
	// recv reads one reply; false means the server closed the connection.
	recv := func() bool {
		rc.nc.SetReadDeadline(time.Now().Add(fuzzHangBound))
		_, m, err := rc.recv()
		switch {
		case err == nil:
			replies = append(replies, m)
			return true
		case isNetTimeout(err):
			t.Fatalf("no reply and no close within %v", fuzzHangBound)
		case errors.Is(err, errMalformed):
			t.Fatalf("server sent a malformed reply: %v", err)
		}
		return false
	}
	// Writes are bounded too: a server that stops reading must not hang
	// the harness where no reply is awaited.
	rc.nc.SetWriteDeadline(time.Now().Add(fuzzHangBound))
	rest := input
	for !pipelined && len(rest) >= 4 {
		size := binary.LittleEndian.Uint32(rest)
		if size < headerSize || uint64(size) > uint64(len(rest)) {
			break
		}
		if _, err := rc.nc.Write(rest[:size]); err != nil {
			if isNetTimeout(err) {
				t.Fatalf("server stopped reading for %v", fuzzHangBound)
			}
			return replies // the server closed on an earlier frame
		}
		rest = rest[size:]
		if !recv() {
			return replies
		}
	}
	written := make(chan error, 1)
	go func() {
		_, err := rc.nc.Write(rest)
		rc.nc.(*net.UnixConn).CloseWrite()
		written <- err
	}()
	// Read (concurrently with the write, so that a server blocked on a
	// full socket never stalls the writer) until the server closes.
	for recv() {
	}
	if err := <-written; isNetTimeout(err) {
		t.Fatalf("server stopped reading for %v", fuzzHangBound)
	}
	return replies
}

// TestFuzzSessionSeed checks that the session FuzzServer starts from is a
// real one: paced, every request in it succeeds.
func TestFuzzSessionSeed(t *testing.T) {
	_, addr := serveForFuzz(t, noDevices(newDisk(t)), &errorRecorder{})
	replies := fuzzExchange(t, addr, fuzzServerSeeds()[0], false)
	if got, want := len(replies), len(fuzzSession()); got != want {
		t.Errorf("got %d replies, want %d", got, want)
	}
	for i, m := range replies {
		if _, ok := m.(*Rlerror); ok {
			t.Errorf("reply %d: got %#v, want success", i+1, m)
		}
	}
}

// fuzzHangBound is the generous limit for "does not hang".
const fuzzHangBound = 10 * time.Second

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fuzzServerSeeds are real sessions (to follow a valid Tversion with msize
// fuzzMsize) and broken variants of them.
func fuzzServerSeeds() [][]byte {
	const root = 1
	session := encodeFrames(fuzzSession()...)
	attach := encodeFrames(&Tattach{Fid: root, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}})
	return [][]byte{
		session,
		session[:len(session)/2], // cut mid-frame
		append(bytes.Clone(session[:100]), []byte("garbage!")...),         // garbage after a frame
		append(bytes.Clone(attach), wire32(fuzzMsize+1)...),               // oversized: size > msize
		append(bytes.Clone(attach), wire32(0xffffffff)...),                // oversized: size 4 GiB
		append(bytes.Clone(attach), wire32(3)...),                         // size below a header
		append(bytes.Clone(attach), handFrame(0xee, 1)...),                // unknown type
		append(bytes.Clone(attach), handFrame(msgRread, 1, wire32(0))...), // an R-message as request
		append(bytes.Clone(attach), encodeFrames(&Tversion{Msize: 1 << 20, Version: Version})...),
		append(bytes.Clone(attach), encodeFrames(&Tversion{Msize: 512, Version: Version}, &Tstatfs{Fid: root})...),
		append(bytes.Clone(attach), frameWithSize(encodeFrames(&Twalk{Fid: root, NewFid: 2, Names: []string{"abc"}})[:16], 16)...),
		[]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
		encodeFrames(fuzzExtSession()...),
	}
}

// fuzzSession is a walk/create/write/read/readdir/clunk session touching
// every kind of request, each relying on the ones before.
func fuzzSession() []Message {
	const root, clone, file, dir, link, xattr, sym, xset = 1, 2, 3, 4, 5, 6, 7, 8
	return []Message{
		&Tattach{Fid: root, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}},
		&Tmkdir{Dfid: root, Name: "d", Mode: 0o755, Gid: 0},
		&Twalk{Fid: root, NewFid: clone, Names: []string{}},
		&Tlcreate{Fid: clone, Name: "f", Flags: wO_RDWR, Mode: 0o644},
		&Twrite{Fid: clone, Offset: 0, Data: []byte("hello, 9p")},
		&Tread{Fid: clone, Offset: 0, Count: 100},
		&Tfsync{Fid: clone},
		&Tlock{Fid: clone, Type: LockWrite, Start: 0, Length: 5, ProcID: 1, ClientID: "fuzz"},
		&Tgetlock{Fid: clone, lockDesc: lockDesc{Type: LockRead, ProcID: 2, ClientID: "other"}},
		&Tclunk{fidMsg{clone}},
		&Twalk{Fid: root, NewFid: file, Names: []string{"f"}},
		&Tgetattr{Fid: file, Mask: AttrAll},
		&Tsetattr{Fid: file, Valid: SetattrSize | SetattrMode, Size: 5, Mode: 0o600},
		&Txattrwalk{Fid: file, NewFid: xattr, Name: ""},
		&Tread{Fid: xattr, Offset: 0, Count: 100},
		&Tclunk{fidMsg{xattr}},
		&Twalk{Fid: file, NewFid: xset, Names: nil},
		&Txattrcreate{Fid: xset, Name: "user.fuzz", Size: 3, Flags: 0},
		&Twrite{Fid: xset, Offset: 0, Data: []byte("abc")},
		&Tclunk{fidMsg{xset}},
		&Tmknod{Dfid: root, Name: "p", Mode: syscall.S_IFREG | 0o644, Gid: 0},
		&Tunlinkat{Dfid: root, Name: "p", Flags: 0},
		&Tlink{Dfid: root, Fid: file, Name: "g"},
		&Tsymlink{Fid: root, Name: "s", Target: "f", Gid: 0},
		&Twalk{Fid: root, NewFid: sym, Names: []string{"s"}},
		&Treadlink{Fid: sym},
		&Trenameat{OldDfid: root, OldName: "g", NewDfid: root, NewName: "h"},
		&Twalk{Fid: root, NewFid: dir, Names: []string{"d", "..", "."}},
		&Tlopen{Fid: dir, Flags: wO_DIRECTORY},
		&Treaddir{Fid: dir, Offset: 0, Count: 4000},
		&Tclunk{fidMsg{dir}},
		&Twalk{Fid: root, NewFid: link, Names: []string{"h"}},
		&Trename{Fid: link, Dfid: root, Name: "i"},
		&Tflush{OldTag: 3},
		&Tstatfs{Fid: root},
		&Tunlinkat{Dfid: root, Name: "i", Flags: 0},
		&Tunlinkat{Dfid: root, Name: "d", Flags: AtRemoveDir},
		&Tremove{fidMsg{file}},
		&Tclunk{fidMsg{sym}},
		&Tclunk{fidMsg{root}},
	}
}

// encodeFrames encodes ms as consecutive frames with tags 1, 2, ...
func encodeFrames(ms ...Message) []byte {
	var b []byte
	for i, m := range ms {
		b = appendFrame(b, uint16(i+1), m)
	}
	return b
}

// waitNoConns waits until srv serves no connection: each one's requests
// have all returned.
func waitNoConns(t testing.TB, srv *Server) {
	t.Helper()
	testenv.Eventually(t, fuzzHangBound, "the server done with its closed connections", func() (bool, string) {
		srv.mu.Lock()
		n := len(srv.conns)
		srv.mu.Unlock()
		return n == 0, fmt.Sprintf("%d connections", n)
	})
}

// serveForFuzz starts a server that logs to h, for the whole fuzz run.
func serveForFuzz(t testing.TB, root vfs.Node, h slog.Handler) (*Server, Address) {
	t.Helper()
	addr := Address{"unix", filepath.Join(t.TempDir(), "9p.sock")}
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(root, ServerOptions{MaxMsize: DefaultMaxMsize, Log: slog.New(h)})
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzHangBound)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return srv, addr
}

// errorRecorder is a slog.Handler that drops warnings (a fuzzer makes
// plenty of dropped connections) and keeps errors for the test to see.
type errorRecorder struct {
	mu   sync.Mutex
	errs []string
}

func (h *errorRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *errorRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *errorRecorder) WithGroup(string) slog.Handler            { return h }
func (h *errorRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.mu.Lock()
	h.errs = append(h.errs, msg)
	h.mu.Unlock()
	return nil
}

func (h *errorRecorder) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errs
}

// wireConn speaks 9P frame by frame over a plain connection.
type wireConn struct{ nc net.Conn }

func wireDial(t testing.TB, addr Address) *wireConn {
	t.Helper()
	nc, err := net.DialTimeout(addr.Network, addr.Addr, fuzzHangBound)
	if err != nil {
		t.Fatal(err)
	}
	return &wireConn{nc}
}

// wireAttach dials addr, negotiates fuzzMsize and attaches fid 1 to the
// root; the caller closes the connection.
func wireAttach(t testing.TB, addr Address) *wireConn {
	t.Helper()
	c := wireDial(t, addr)
	c.version(t, fuzzMsize)
	c.attach(t, 1)
	return c
}

func (r *wireConn) send(t testing.TB, tag uint16, m Message) {
	t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(fuzzHangBound))
	if _, err := r.nc.Write(appendFrame(nil, tag, m)); err != nil {
		t.Fatalf("send %T: %v", m, err)
	}
}

// recv reads one frame and decodes it; errMalformed means the frame was
// read whole but did not parse.
func (r *wireConn) recv() (uint16, Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r.nc, hdr[:]); err != nil {
		return 0, nil, err
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size < headerSize || size > DefaultMaxMsize {
		return 0, nil, errMalformed
	}
	frame := make([]byte, size)
	copy(frame, hdr[:])
	if _, err := io.ReadFull(r.nc, frame[4:]); err != nil {
		return 0, nil, err
	}
	return decodeFrame(frame)
}

// rpc sends m and returns the reply to it.
func (r *wireConn) rpc(t testing.TB, tag uint16, m Message) Message {
	t.Helper()
	r.send(t, tag, m)
	r.nc.SetReadDeadline(time.Now().Add(fuzzHangBound))
	got, reply, err := r.recv()
	if err != nil {
		t.Fatalf("reply to %T: %v", m, err)
	}
	if got != tag {
		t.Fatalf("reply to %T: got tag %d, want %d", m, got, tag)
	}
	return reply
}

func (r *wireConn) version(t testing.TB, msize uint32) {
	t.Helper()
	reply := r.rpc(t, NoTag, &Tversion{Msize: msize, Version: Version})
	if want := (&Rversion{Tversion{Msize: msize, Version: Version}}); !reflect.DeepEqual(reply, Message(want)) {
		t.Fatalf("Tversion: got %#v, want %#v", reply, want)
	}
}

// attach attaches fid as root and checks the reply.
func (r *wireConn) attach(t testing.TB, fid uint32) {
	t.Helper()
	reply := r.rpc(t, 1, &Tattach{Fid: fid, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}})
	if _, ok := reply.(*Rattach); !ok {
		t.Fatalf("Tattach: got %#v, want Rattach", reply)
	}
}

// getattr checks that fid is alive and a directory.
func (r *wireConn) getattr(t testing.TB, fid uint32) {
	t.Helper()
	reply := r.rpc(t, 2, &Tgetattr{Fid: fid, Mask: AttrBasic})
	ra, ok := reply.(*Rgetattr)
	if !ok {
		t.Fatalf("Tgetattr: got %#v, want Rgetattr", reply)
	}
	if got, want := ra.Mode&wS_IFMT, wS_IFDIR; got != want {
		t.Fatalf("Tgetattr: got file type %#o, want %#o", got, want)
	}
}

// checkFreshConn opens a fresh connection: Tversion, Tattach and Tgetattr
// must all succeed.
func checkFreshConn(t testing.TB, addr Address) {
	t.Helper()
	rc := wireAttach(t, addr)
	defer rc.nc.Close()
	rc.getattr(t, 1)
}

// waitPeerClosed reads until the server closes c and fails if anything but
// the end arrives, or nothing does within fuzzHangBound.
func waitPeerClosed(t testing.TB, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(fuzzHangBound))
	var buf [512]byte
	n, err := io.ReadFull(c, buf[:])
	switch {
	case isNetTimeout(err):
		t.Fatalf("connection still open after %v", fuzzHangBound)
	case n > 0:
		t.Fatalf("got %d unexpected bytes %x, want the connection closed", n, buf[:n])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		t.Fatalf("reading a closing connection: got error %v, want EOF", err)
	}
}

func TestBadFramesCloseOnlyThatConnection(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	b := wireAttach(t, addr)
	defer b.nc.Close()

	walk := appendFrame(nil, 5, &Twalk{Fid: 1, NewFid: 2, Names: []string{"some", "where"}})
	tests := []struct {
		name      string
		version   bool // send a valid Tversion and Tattach first
		bad       []byte
		closeSend bool // end the stream after bad
	}{
		{"Garbage", true, []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"), false},
		{"GarbageBeforeVersion", false, []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), false},
		{"TruncatedStream", true, walk[:len(walk)-3], true},
		{"SizeBelowHeader", true, wire32(6), false},
		{"Oversized", true, append(wire32(fuzzMsize+1), make([]byte, 64)...), false},
		{"OversizedHuge", true, wire32(0xffffffff), false},
		{"OversizedBeforeVersion", false, append(wire32(minMsize+1), make([]byte, 64)...), false},
		{"AttachBeforeVersion", false, appendFrame(nil, 1, &Tattach{Fid: 1, Tauth: Tauth{Afid: NoFid, NUname: 0}}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := wireDial(t, addr)
			defer a.nc.Close()
			if tc.version {
				a.version(t, fuzzMsize)
				a.attach(t, 1)
			}
			if _, err := a.nc.Write(tc.bad); err != nil {
				t.Fatalf("write: %v", err)
			}
			if tc.closeSend {
				a.nc.(*net.UnixConn).CloseWrite()
			}
			waitPeerClosed(t, a.nc)
			// B, opened before, still has its fid and its answers.
			b.getattr(t, 1)
		})
	}
	checkFreshConn(t, addr)
}

// TestBadMessagesAnswered: a whole frame the server cannot take (an
// unknown type, a walk of 17 names, a body short of its fields or with
// bytes left over) gets Rlerror for its tag, and the connection goes on.
func TestBadMessagesAnswered(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	a := wireAttach(t, addr)
	defer a.nc.Close()
	walk := appendFrame(nil, 5, &Twalk{Fid: 1, NewFid: 2, Names: []string{"some", "where"}})
	long := handFrame(uint8(msgTwalk), 5, wire32(1), wire32(2), wire16(17))
	for range 17 {
		long = append(long, append(wire16(1), 'x')...)
	}
	long = frameWithSize(long, uint32(len(long)))
	for _, tc := range []struct {
		name string
		bad  []byte
		want syscall.Errno
	}{
		{"UnknownType", handFrame(0xee, 5, wire32(1)), syscall.EOPNOTSUPP},
		{"WalkOf17Names", long, syscall.EINVAL},
		{"TruncatedBody", frameWithSize(walk[:len(walk)-3], uint32(len(walk)-3)), syscall.EINVAL},
		{"TrailingBytes", frameWithSize(append(bytes.Clone(walk), 0, 0), uint32(len(walk)+2)), syscall.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.nc.Write(tc.bad); err != nil {
				t.Fatalf("write: %v", err)
			}
			tag, m, err := a.recv()
			if e, ok := m.(*Rlerror); err != nil || !ok || tag != 5 || syscall.Errno(e.Ecode) != tc.want {
				t.Fatalf("reply: tag %d, %#v, %v; want Rlerror %v for tag 5", tag, m, err, tc.want)
			}
			a.getattr(t, 1) // the same connection goes on
		})
	}
}

// TestTagReuseAfterReply: a client may reuse a tag as soon as it has the
// reply (Linux's and hugelgupf/p9's clients do at once); the server must
// not take that for a tag still in flight and drop the connection.
func TestTagReuseAfterReply(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	rc := wireAttach(t, addr)
	defer rc.nc.Close()
	for i := range 2000 {
		reply := rc.rpc(t, 9, &Tgetattr{Fid: 1, Mask: AttrBasic})
		if _, ok := reply.(*Rgetattr); !ok {
			t.Fatalf("request %d: got %#v, want Rgetattr", i, reply)
		}
	}
}

// TestRMessageAsRequest: an R-message sent as a request is refused with
// EOPNOTSUPP, and the connection stays up.
func TestRMessageAsRequest(t *testing.T) {
	_, addr := serve(t, newDisk(t))
	rc := wireAttach(t, addr)
	defer rc.nc.Close()
	for _, m := range []Message{&Rversion{Tversion{Msize: 8192, Version: Version}}, &Rread{Data: []byte("x")},
		&Rlerror{Ecode: 2}, &Rerror{Ename: "no"}, &Rclunk{}} {
		t.Run(msgName(m), func(t *testing.T) {
			got := rc.rpc(t, 7, m)
			if want := Message(&Rlerror{Ecode: wEOPNOTSUPP}); !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
	rc.getattr(t, 1)
}

// noDevices wraps a tree so that Mknod refuses character and block
// devices and FIFOs. FuzzServer runs as root on a real disk: a fuzzer
// that found Tmknod of a disk's device number and then Twrite must not
// reach the disk. And diskfs opens a FIFO with a plain open(2), which
// blocks until a peer opens the other end and no context can cancel, so
// a FIFO would only hang the harness. Everything else passes through,
// optional abilities included.
func noDevices(n vfs.Node) vfs.Node { return &noDevNode{n} }

type noDevNode struct{ n vfs.Node }

func noDevWrap(n vfs.Node, err error) (vfs.Node, error) {
	if err != nil {
		return nil, err
	}
	return &noDevNode{n}, nil
}

func noDevUnwrap(n vfs.Node) vfs.Node {
	if g, ok := n.(*noDevNode); ok {
		return g.n
	}
	return n
}

func (g *noDevNode) Attr(ctx context.Context) (vfs.Attr, error) { return g.n.Attr(ctx) }
func (g *noDevNode) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	return g.n.SetAttr(ctx, s)
}
func (g *noDevNode) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	return noDevWrap(g.n.Lookup(ctx, name))
}
func (g *noDevNode) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	return g.n.Open(ctx, flags)
}
func (g *noDevNode) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	n, h, err := g.n.Create(ctx, name, flags, mode)
	if err != nil {
		return nil, nil, err
	}
	return &noDevNode{n}, h, nil
}
func (g *noDevNode) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	return noDevWrap(g.n.Mkdir(ctx, name, mode))
}
func (g *noDevNode) Remove(ctx context.Context, name string, dir bool) error {
	return g.n.Remove(ctx, name, dir)
}
func (g *noDevNode) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	return g.n.Rename(ctx, oldName, noDevUnwrap(newDir), newName)
}
func (g *noDevNode) RenameFlags(ctx context.Context, oldName string, newDir vfs.Node, newName string, flags uint32) error {
	if fr, ok := g.n.(vfs.FlagRenamer); ok {
		return fr.RenameFlags(ctx, oldName, noDevUnwrap(newDir), newName, flags)
	}
	return vfs.Error("rename", newName, syscall.EINVAL)
}
func (g *noDevNode) Readlink(ctx context.Context) (string, error) {
	if r, ok := g.n.(vfs.Readlinker); ok {
		return r.Readlink(ctx)
	}
	return "", vfs.Error("readlink", "", syscall.EINVAL)
}
func (g *noDevNode) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	if s, ok := g.n.(vfs.Symlinker); ok {
		return noDevWrap(s.Symlink(ctx, name, target))
	}
	return nil, vfs.Error("symlink", name, syscall.EPERM)
}
func (g *noDevNode) Link(ctx context.Context, target vfs.Node, name string) (vfs.Node, error) {
	if l, ok := g.n.(vfs.Linker); ok {
		return noDevWrap(l.Link(ctx, noDevUnwrap(target), name))
	}
	return nil, vfs.Error("link", name, syscall.EPERM)
}
func (g *noDevNode) Mknod(ctx context.Context, name string, mode uint32, rdev uint64) (vfs.Node, error) {
	if t := mode & syscall.S_IFMT; t == syscall.S_IFCHR || t == syscall.S_IFBLK || t == syscall.S_IFIFO {
		return nil, vfs.Error("mknod", name, syscall.EPERM)
	}
	if m, ok := g.n.(vfs.Mknoder); ok {
		return noDevWrap(m.Mknod(ctx, name, mode, rdev))
	}
	return nil, vfs.Error("mknod", name, syscall.EPERM)
}
func (g *noDevNode) StatFS(ctx context.Context) (vfs.StatFS, error) {
	if s, ok := g.n.(vfs.StatFSer); ok {
		return s.StatFS(ctx)
	}
	return vfs.StatFS{}, vfs.Error("statfs", "", syscall.ENOSYS)
}
func (g *noDevNode) xattrer(name string) (vfs.Xattrer, error) {
	if x, ok := g.n.(vfs.Xattrer); ok {
		return x, nil
	}
	return nil, vfs.Error("xattr", name, syscall.EOPNOTSUPP)
}
func (g *noDevNode) GetXattr(ctx context.Context, name string) ([]byte, error) {
	x, err := g.xattrer(name)
	if err != nil {
		return nil, err
	}
	return x.GetXattr(ctx, name)
}
func (g *noDevNode) SetXattr(ctx context.Context, name string, value []byte, flags int) error {
	x, err := g.xattrer(name)
	if err != nil {
		return err
	}
	return x.SetXattr(ctx, name, value, flags)
}
func (g *noDevNode) ListXattr(ctx context.Context) ([]string, error) {
	x, err := g.xattrer("")
	if err != nil {
		return nil, err
	}
	return x.ListXattr(ctx)
}
func (g *noDevNode) RemoveXattr(ctx context.Context, name string) error {
	x, err := g.xattrer(name)
	if err != nil {
		return err
	}
	return x.RemoveXattr(ctx, name)
}

// TestDevGuard: the fuzz harness's guard really refuses devices and
// FIFOs, and still makes regular files and sockets.
func TestDevGuard(t *testing.T) {
	root := noDevices(newDisk(t)).(vfs.Mknoder)
	tests := []struct {
		name string
		mode uint32
		want syscall.Errno
	}{
		{"Block", syscall.S_IFBLK | 0o600, syscall.EPERM},
		{"Char", syscall.S_IFCHR | 0o600, syscall.EPERM},
		{"FIFO", syscall.S_IFIFO | 0o600, syscall.EPERM},
		{"Regular", syscall.S_IFREG | 0o600, 0},
		{"Socket", syscall.S_IFSOCK | 0o600, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := root.Mknod(t.Context(), tc.name, tc.mode, 0x0801)
			if got := vfs.Errno(err); got != tc.want {
				t.Errorf("Mknod: got errno %d (%v), want %d", got, err, tc.want)
			}
		})
	}
}
