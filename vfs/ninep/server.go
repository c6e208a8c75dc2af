package ninep

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/internal/bounds"
	"github.com/gsvfs/gsvfs/vfs"
)

// DefaultMaxMsize is the largest message size the server agrees to unless
// ServerOptions says otherwise: four times the Linux trans=fd maximum, so
// Go clients can move larger blocks.
const DefaultMaxMsize = 4 << 20

// minMsize is the smallest msize worth speaking: room for a walk of
// MaxWalk long names is not required, but a getattr reply is.
const minMsize = 4096

// maxInflight bounds the requests one connection may have running. The
// reader stops taking frames while it is reached, which pushes back on
// the client instead of growing memory.
const maxInflight = 256

// ServerOptions configures a Server.
type ServerOptions struct {
	// MaxMsize caps the negotiated message size (DefaultMaxMsize if 0).
	MaxMsize uint32
	// Log receives connection errors and recovered panics (slog.Default if nil).
	Log *slog.Logger
	// MaxConns bounds the connections served at once (DefaultMaxConns
	// if 0); more are closed at once.
	MaxConns int
	// MaxOpen bounds the open files of one connection (a quarter of the
	// descriptor limit if 0); past it an open fails with EMFILE.
	MaxOpen int64
	// Memory bounds the bytes of large frames and read replies held for
	// all connections (DefaultMemory if 0); one connection gets at most
	// a quarter of it. Requests wait for it rather than fail.
	Memory int64
	// Fsid is the filesystem id statfs reports for every file (a kernel
	// 9P mount's f_fsid): one for the whole tree, as a mount is one
	// filesystem to the programs that compare it. 0 reports none.
	Fsid uint64

	host *hostNumbers // the numbers the backend speaks (this OS's if nil)
}

// Server exports a vfs tree over 9P2000.L.
type Server struct {
	root vfs.Node
	opts ServerOptions
	host *hostNumbers // this OS's numbers (a test may give another's)
	log  *slog.Logger
	warn *bounds.RateLog // what clients can make happen again and again
	mem  memory

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closed    bool
	wg        sync.WaitGroup // connections being served

	requests, errors, read, written atomic.Int64 // for Stats
}

// Stats is what a server was asked since it started.
type Stats struct {
	Connections                     int // being served now
	Requests, Errors, Read, Written int64
}

// Stats reports the server's counts. A request answered with an error
// counts as one, a name not found excepted.
func (s *Server) Stats() Stats {
	return Stats{Connections: s.connCount(), Requests: s.requests.Load(), Errors: s.errors.Load(),
		Read: s.read.Load(), Written: s.written.Load()}
}

// count records a request and its reply.
func (s *Server) count(resp Message) {
	s.requests.Add(1)
	switch r := resp.(type) {
	case *Rlerror:
		if r.Ecode != wENOENT {
			s.errors.Add(1)
		}
	case *readReply:
		s.read.Add(int64(r.n))
	case *Rwrite:
		s.written.Add(int64(r.Count))
	}
}

// NewServer returns a server exporting root. Tattach's aname selects a
// directory below root ("" and "/" are root itself).
func NewServer(root vfs.Node, opts ServerOptions) *Server {
	if opts.MaxMsize == 0 {
		opts.MaxMsize = DefaultMaxMsize
	}
	opts.MaxMsize = max(opts.MaxMsize, minMsize)
	opts.MaxConns = cmp.Or(opts.MaxConns, DefaultMaxConns)
	opts.MaxOpen = cmp.Or(opts.MaxOpen, bounds.OpenLimit())
	opts.Memory = max(cmp.Or(opts.Memory, DefaultMemory), 2*int64(opts.MaxMsize))
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	return &Server{
		root: root, opts: opts, host: cmp.Or(opts.host, host), log: log, warn: bounds.NewRateLog(log, 10*time.Second),
		mem:       newMemory(opts.Memory),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("9p: server closed")

// Serve accepts connections on l until Close, serving each in its own
// goroutine. The server owns l and closes it.
func (s *Server) Serve(l net.Listener) error {
	if !s.track(l) {
		l.Close()
		return ErrServerClosed
	}
	defer s.untrack(l)
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: wait for some to come back rather
				// than spin or give up on every client.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.warn.Warn("accept", "9p accept failed; retrying", "err", err, "retry", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.ServeConn(c)
	}
}

// ServeConn serves one established connection in the background. The
// server owns c and closes it when the peer leaves or the server closes.
func (s *Server) ServeConn(c net.Conn) {
	cn := newConn(s, c)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	if len(s.conns) >= s.opts.MaxConns {
		s.mu.Unlock()
		s.warn.Warn("conn-limit", "9p connection refused: the server serves its limit of connections", "remote", c.RemoteAddr(), "limit", s.opts.MaxConns)
		c.Close()
		return
	}
	s.conns[cn] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		cn.serve()
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
	}()
}

// Close stops accepting, closes every connection (cancelling the requests
// they have running) and waits until their handlers have returned or ctx
// ends.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.shutdown()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) track(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) untrack(l net.Listener) {
	s.mu.Lock()
	delete(s.listeners, l)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// conn is one client connection: its fids, its requests in flight, and
// the lock that keeps replies whole on the wire.
type conn struct {
	srv  *Server
	nc   net.Conn
	rd   *bufio.Reader // only the serve loop reads
	peer peerIdentity

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	wmu       sync.Mutex // serialises replies
	msize     uint32     // set by Tversion before any other request runs
	versioned bool       // a Tversion succeeded; only the current reader uses it
	// extended: Tversion negotiated VersionExt, so the peer is gsvfs and
	// may send the extension messages.
	extended atomic.Bool
	watch    connWatch // the changes a Twatch waits for

	mem   memory       // this connection's share of the server's
	opens atomic.Int64 // open files (fids holding a handle)

	mu       sync.Mutex
	fids     map[uint32]*fid
	frees    map[*[]byte]func() // memory taken by large frames being handled
	inflight map[uint16]*request
	nodeRefs map[vfs.Forgetter]int // fids per forgettable node
	slots    chan struct{}
	handlers sync.WaitGroup
}

// request is one T-message being handled.
type request struct {
	tag    uint16
	cancel context.CancelFunc
	done   chan struct{}
}

// connIDs numbers the connections of every server in the process, for
// vfs.WithPeer.
var connIDs atomic.Uint64

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(vfs.WithPeer(context.Background(), connIDs.Add(1)))
	return &conn{
		srv: s, nc: nc, rd: newFrameReader(nc), peer: identify(nc), ctx: ctx, cancel: cancel,
		msize:    s.opts.MaxMsize,
		fids:     map[uint32]*fid{},
		frees:    map[*[]byte]func(){},
		mem:      newMemory(max(s.opts.Memory/4, 2*int64(s.opts.MaxMsize))),
		inflight: map[uint16]*request{},
		nodeRefs: map[vfs.Forgetter]int{},
		slots:    make(chan struct{}, maxInflight),
	}
}

// shutdown ends the connection from the server's side.
func (c *conn) shutdown() {
	c.cancel()
	c.nc.Close()
}

// serve reads frames until the peer leaves or sends something malformed,
// then cancels what is running, waits for it, and drops every fid and lock.
func (c *conn) serve() {
	defer c.finish()
	if c.peer.err != nil {
		c.srv.warn.Warn("unauthorized", "9p connection refused", "remote", c.nc.RemoteAddr(), "err", c.peer.err)
		return
	}
	done := make(chan struct{})
	go c.readLoop(done)
	<-done
}

// readLoop reads and runs requests. A request that may wait hands the
// reading on to a new goroutine (see handoff) and this one ends with it;
// a quick one, a walk or stat on a local disk, runs right here, with no
// goroutine to start or schedule. The last reader closes done when the
// connection ends.
func (c *conn) readLoop(done chan struct{}) {
	for {
		tag, m, bp, ok := c.next()
		if !ok {
			close(done)
			return
		}
		if tv, isVersion := m.(*Tversion); isVersion {
			c.version(tag, tv)
			c.putFrame(bp)
			c.versioned = c.msize != 0
			continue
		}
		h := &handoff{start: func() { go c.readLoop(done) }}
		run, ok := c.admit(tag, m, bp, h)
		if !ok {
			c.srv.warn.Warn("dropped", "9p connection dropped: tag reused while in flight", "tag", tag)
			close(done)
			return
		}
		if !mayInline(m) {
			h.do()
		}
		run()
		if h.started {
			return // another goroutine reads now
		}
	}
}

// handoff starts the connection's next reader, once. A request running on
// the reader's goroutine calls it before anything that may wait, so the
// connection is always being read: no request waits on another, and a
// Tflush can always arrive.
type handoff struct {
	start   func()
	started bool // only the request's own goroutine touches it
}

func (h *handoff) do() {
	if !h.started {
		h.started = true
		h.start()
	}
}

type handoffKey struct{}

// tagKey carries a request's tag, for a reply that is a stream of frames
// (Tnotify).
type tagKey struct{}

// mayBlock hands the reading on before a call on n unless n is
// vfs.Quick.
func mayBlock(ctx context.Context, n vfs.Node) {
	if h, ok := ctx.Value(handoffKey{}).(*handoff); ok && !vfs.IsQuick(n) {
		h.do()
	}
}

// mayInline reports whether a request may start on the reader's
// goroutine: not reads and writes of files (which may wait on a device, a
// pipe or a session), opens, fsyncs, blocking locks, or flushes (which
// wait for another request).
func mayInline(m Message) bool {
	switch m.(type) {
	case *Tread, *Twrite, *Tlopen, *Tfsync, *Tlock, *Tflush, *Twatch, *Tnotify:
		return false
	}
	return true
}

// next reads and decodes one frame. A whole frame the server cannot take
// (an unknown type, a walk of too many names, a body that does not parse)
// is answered with Rlerror and the connection goes on. It reports false,
// having logged why, when the connection is over: the peer left, broke
// the framing itself, or did not begin with Tversion.
func (c *conn) next() (uint16, Message, *[]byte, bool) {
	for {
		bp, err := c.readFrame(c.versioned)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && c.ctx.Err() == nil {
				c.srv.warn.Warn("dropped", "9p connection dropped", "remote", c.nc.RemoteAddr(), "err", err)
			}
			return 0, nil, nil, false
		}
		tag, m, err := decodeFrame(*bp)
		typ, size := (*bp)[4], len(*bp)
		if err != nil {
			c.putFrame(bp)
			if !c.refuse(tag, err) {
				c.srv.warn.Warn("dropped", "9p connection dropped: malformed message", "type", typ, "size", size)
				return 0, nil, nil, false
			}
			c.srv.warn.Warn("refused", "9p message refused", "type", typ, "size", size, "err", err)
			continue
		}
		if _, isVersion := m.(*Tversion); !c.versioned && !isVersion {
			c.putFrame(bp)
			c.srv.warn.Warn("dropped", "9p connection dropped: first message is not Tversion")
			return 0, nil, nil, false
		}
		return tag, m, bp, true
	}
}

// refuse answers a whole frame that could not be decoded with Rlerror:
// EOPNOTSUPP for a type the server does not know, EINVAL for the rest. It
// reports false when no answer can be given: before Tversion, or when the
// tag belongs to a request still running.
func (c *conn) refuse(tag uint16, err error) bool {
	if !c.versioned {
		return false
	}
	c.mu.Lock()
	_, busy := c.inflight[tag]
	c.mu.Unlock()
	if busy {
		return false
	}
	ecode := wEINVAL
	if errors.Is(err, errUnknownType) {
		ecode = wEOPNOTSUPP
	}
	c.reply(tag, &Rlerror{Ecode: ecode}, nil)
	return true
}

// readFrame reads one frame. Before Tversion only a small frame is
// allowed; after it, msize bounds every frame.
func (c *conn) readFrame(versioned bool) (*[]byte, error) {
	limit := uint32(minMsize)
	if versioned {
		limit = c.msize
	}
	bp, free, err := c.readFrameLimited(limit)
	if err != nil {
		return nil, err
	}
	if free != nil {
		c.mu.Lock()
		c.frees[bp] = free
		c.mu.Unlock()
	}
	return bp, nil
}

// putFrame returns a frame's buffer, and the memory a large one held.
func (c *conn) putFrame(bp *[]byte) {
	if len(*bp) > smallFrame {
		c.mu.Lock()
		free := c.frees[bp]
		delete(c.frees, bp)
		c.mu.Unlock()
		if free != nil {
			free()
		}
	}
	putBuf(bp)
}

// version negotiates msize and starts a fresh session: every fid of the
// old one is dropped, as the protocol requires.
func (c *conn) version(tag uint16, tv *Tversion) {
	c.cancelAll()
	c.dropFids()
	c.watch.end()
	rv := &Rversion{Tversion{Msize: min(tv.Msize, c.srv.opts.MaxMsize), Version: Version}}
	// A client may offer a refinement of 9P2000.L ("9P2000.L.Google.7",
	// as hugelgupf/p9's client does first); the server answers with the
	// base version, as Tversion allows, rather than "unknown".
	offered := tv.Version == Version || strings.HasPrefix(tv.Version, Version+".")
	c.extended.Store(false)
	if !offered || rv.Msize < minMsize {
		rv.Version = "unknown"
		rv.Msize = c.srv.opts.MaxMsize
		c.msize = 0
	} else {
		c.msize = rv.Msize
		if tv.Version == VersionExt {
			rv.Version = VersionExt
			c.extended.Store(true)
		}
	}
	c.reply(tag, rv, nil)
}

// admit registers a request and returns the function that runs it. It
// reports false if tag is already in flight, a protocol violation. While
// maxInflight requests run it waits, which stops the reading: flushes
// never wait, so they can still end what holds the slots.
func (c *conn) admit(tag uint16, m Message, bp *[]byte, h *handoff) (func(), bool) {
	flush, isFlush := m.(*Tflush)
	if !isFlush {
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			c.putFrame(bp)
			return func() {}, true
		}
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.WithValue(c.ctx, handoffKey{}, h), tagKey{}, tag))
	r := &request{tag: tag, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	if _, busy := c.inflight[tag]; busy {
		c.mu.Unlock()
		cancel()
		c.putFrame(bp)
		if !isFlush {
			<-c.slots
		}
		return nil, false
	}
	c.inflight[tag] = r
	c.handlers.Add(1)
	c.mu.Unlock()
	return func() {
		defer c.handlers.Done()
		defer close(r.done)
		defer cancel()
		if isFlush {
			c.flush(ctx, r, flush)
			return
		}
		defer func() { <-c.slots }()
		resp := c.handle(ctx, m)
		c.putFrame(bp) // m may alias the frame until here
		c.finishRequest(r, resp)
	}, true
}

// finishRequest retires the tag and sends the reply, both under the write
// lock: a client may reuse the tag as soon as it has the reply (Linux's
// and hugelgupf/p9's clients do at once), and a Tflush that comes too late
// to find the request still answers after its reply, because the Rflush
// waits for the same lock.
func (c *conn) finishRequest(r *request, resp Message) {
	c.fence(resp)
	c.reply(r.tag, resp, func() {
		c.mu.Lock()
		delete(c.inflight, r.tag)
		c.mu.Unlock()
	})
}

// flush cancels the request with the old tag and answers once that
// request has replied, as Tflush requires.
func (c *conn) flush(ctx context.Context, r *request, m *Tflush) {
	c.mu.Lock()
	old := c.inflight[m.OldTag]
	c.mu.Unlock()
	if old != nil && old != r {
		old.cancel()
		select {
		case <-old.done:
		case <-ctx.Done():
		}
	}
	c.finishRequest(r, &Rflush{})
}

// handle runs one request, turning a panic into EIO so one bad call never
// takes the daemon down.
func (c *conn) handle(ctx context.Context, m Message) (resp Message) {
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error("9p request panicked", "type", m.msgType(), "panic", p)
			resp = c.errorReply(vfs.Error("9p", "", syscall.EIO))
		}
		c.srv.count(resp)
	}()
	return c.dispatch(ctx, m)
}

// reply encodes m and writes it as one frame, running retire (if not nil)
// under the write lock just before. A failed write ends the connection;
// the reader notices.
func (c *conn) reply(tag uint16, m Message, retire func()) {
	if rr, ok := m.(*readReply); ok {
		c.write(rr.frame(tag), retire)
		rr.release()
		return
	}
	bp := getBuf(0)
	*bp = appendFrame((*bp)[:0], tag, m)
	c.write(*bp, retire)
	putBuf(bp)
}

func (c *conn) write(frame []byte, retire func()) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.writeNoticesLocked()
	if retire != nil {
		retire()
	}
	if _, err := c.nc.Write(frame); err != nil {
		c.nc.Close()
	}
}

func (c *conn) cancelAll() {
	c.mu.Lock()
	for _, r := range c.inflight {
		r.cancel()
	}
	c.mu.Unlock()
	c.handlers.Wait()
}

// finish tears the connection down: nothing it opened outlives it.
func (c *conn) finish() {
	c.shutdown()
	c.cancelAll()
	c.dropFids()
	c.watch.end()
}

// errorReply is err as Rlerror carries it: in Linux's numbers.
func (c *conn) errorReply(err error) *Rlerror {
	return &Rlerror{Ecode: c.host().errnoToWire(vfs.Errno(err))}
}

// host is the numbers the connection's backend speaks.
func (c *conn) host() *hostNumbers { return c.srv.host }

// connCount is how many connections are being served.
func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
