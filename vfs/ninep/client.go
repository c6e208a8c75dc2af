package ninep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// DefaultClientMsize is the message size a client offers unless told
// otherwise; servers negotiate it down (diod to 64 KiB).
const DefaultClientMsize = 1<<20 + clientIOHeader

// clientIOHeader is what the client leaves for headers when it sizes a
// Tread, Twrite or Treaddir: Linux's P9_IOHDRSZ, one byte more than
// ioHeaderSize. diod refuses a count above msize minus this.
const clientIOHeader = ioHeaderSize + 1

// DefaultLiveness is how long a client waits on a silent server, while a
// call is outstanding, before it probes; a probe unanswered for as long
// again ends the connection. Together they bound a hang to under a second.
const DefaultLiveness = 300 * time.Millisecond

// ClientOptions configures Dial.
type ClientOptions struct {
	Msize    uint32        // offered msize (DefaultClientMsize if 0)
	Liveness time.Duration // DefaultLiveness if 0
	// Idle, if set, probes a connection no call waits on once it has
	// been silent that long, so a peer that vanished is noticed with
	// nothing outstanding (a link to a remote device); 0 probes only
	// while calls wait.
	Idle time.Duration
}

// ErrServerGone is the cause of every failed call once the connection has
// ended; callers see EIO, as with Linux's own 9p client.
var ErrServerGone = errors.New("9p: server connection lost")

// Client is one 9P2000.L connection. Its methods are safe for concurrent
// use; every call carries a context, and a call whose context ends is
// flushed on the server.
type Client struct {
	nc       net.Conn
	msize    uint32
	liveness time.Duration
	idle     time.Duration

	wmu sync.Mutex // serialises frames on the wire

	mu       sync.Mutex
	pending  map[uint16]chan reply
	nextTag  uint16
	fids     fidAllocator
	lastRecv time.Time
	probeAt  time.Time // when the outstanding probe went out; zero if none
	probing  bool      // a probe is on its way out
	sending  int       // frames being written now
	err      error     // set once the connection is dead
	dead     chan struct{}
}

// reply is a decoded R-message and the pooled frame it aliases.
type reply struct {
	m  Message
	bp *[]byte
}

func (r reply) release() {
	if r.bp != nil {
		putBuf(r.bp)
	}
}

// Dial connects to a (unix:PATH or tcp:HOST:PORT), negotiates the
// version, and returns a client ready to Attach.
func Dial(ctx context.Context, a Address, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, a.Network, a.Addr)
	if err != nil {
		return nil, err
	}
	c, err := NewClient(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	return c, nil
}

// NewClient speaks 9P2000.L over an established connection, which it owns.
func NewClient(ctx context.Context, nc net.Conn, opts ClientOptions) (*Client, error) {
	if opts.Msize == 0 {
		opts.Msize = DefaultClientMsize
	}
	if opts.Liveness == 0 {
		opts.Liveness = DefaultLiveness
	}
	c := &Client{
		nc: nc, msize: opts.Msize, liveness: opts.Liveness, idle: opts.Idle,
		pending: map[uint16]chan reply{}, lastRecv: time.Now(),
		dead: make(chan struct{}),
	}
	go c.readLoop(opts.Msize)
	go c.watch()
	r, err := c.rpc(ctx, NoTag, &Tversion{Msize: opts.Msize, Version: Version})
	if err != nil {
		c.Close()
		return nil, err
	}
	defer r.release()
	rv, ok := r.m.(*Rversion)
	if !ok || rv.Version != Version || rv.Msize < minMsize || rv.Msize > opts.Msize {
		c.Close()
		return nil, fmt.Errorf("9p: server does not speak %s", Version)
	}
	c.msize = rv.Msize
	return c, nil
}

// Msize is the negotiated message size.
func (c *Client) Msize() uint32 { return c.msize }

// iounit is the data one Tread or Twrite may carry.
func (c *Client) iounit() int { return int(c.msize - clientIOHeader) }

// Close ends the connection; calls in flight fail.
func (c *Client) Close() error {
	c.fail(ErrServerGone)
	return nil
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.dead }

// fail ends the connection once, waking every waiter.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.dead)
	c.mu.Unlock()
	c.nc.Close()
}

// readLoop delivers replies to their callers. limit is the msize offered,
// which bounds any frame the server may send.
func (c *Client) readLoop(limit uint32) {
	rd := newFrameReader(c.nc)
	for {
		bp, err := readFrame(rd, limit)
		if err != nil {
			c.fail(ErrServerGone)
			return
		}
		tag, m, err := decodeFrame(*bp)
		if err != nil {
			putBuf(bp)
			c.fail(fmt.Errorf("9p: malformed reply: %w", err))
			return
		}
		c.mu.Lock()
		c.lastRecv, c.probeAt = time.Now(), time.Time{}
		ch := c.pending[tag]
		delete(c.pending, tag)
		c.mu.Unlock()
		if ch == nil {
			putBuf(bp) // a probe's answer, or a reply to a flushed call
			continue
		}
		ch <- reply{m: m, bp: bp}
	}
}

// watch probes a server that has gone quiet while calls wait on it and
// ends the connection if the probe goes unanswered: a hung or vanished
// peer fails calls within about 2×liveness instead of hanging them.
func (c *Client) watch() {
	t := time.NewTicker(c.liveness / 6)
	defer t.Stop()
	for {
		select {
		case <-c.dead:
			return
		case now := <-t.C:
			switch c.health(now) {
			case probeNeeded:
				go c.probe()
			case peerDead:
				c.fail(ErrServerGone)
				return
			}
		}
	}
}

type healthState int

const (
	healthy healthState = iota
	probeNeeded
	peerDead
)

// probeTag is reserved for liveness probes.
const probeTag = NoTag - 1

// health judges the connection at now. Silence counts while calls wait
// on the server (or, with idle set, once nothing has come for that long)
// and no frame of ours is still being written: a server busy taking a
// large write is not a dead one (the write has its own deadline).
func (c *Client) health(now time.Time) healthState {
	c.mu.Lock()
	defer c.mu.Unlock()
	quiet := now.Sub(c.lastRecv)
	idleQuiet := len(c.pending) == 0 && (c.idle == 0 || quiet < c.idle) && c.probeAt.IsZero()
	switch {
	case c.sending > 0 || idleQuiet || len(c.pending) > 0 && quiet < c.liveness:
		return healthy
	case c.probeAt.IsZero() && !c.probing:
		c.probing = true
		return probeNeeded
	case !c.probeAt.IsZero() && now.Sub(c.probeAt) >= c.liveness:
		return peerDead
	}
	return healthy
}

// probe sends a Tflush of a tag never in use, which any server answers at
// once, and starts the clock on it once it is on the wire.
func (c *Client) probe() {
	c.mu.Lock()
	recv := c.lastRecv
	c.mu.Unlock()
	err := c.send(probeTag, &Tflush{OldTag: NoTag})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probing = false
	// The answer may be in already (a local server answers at once):
	// then the server is alive and no clock must start.
	if err == nil && c.lastRecv.Equal(recv) {
		c.probeAt = time.Now()
	}
}

// send writes one frame. The write has a deadline, so a server that
// stops reading cannot hold a caller forever: the liveness bound, plus a
// microsecond a byte (a floor of 1 MB/s) for large frames.
func (c *Client) send(tag uint16, m Message) error {
	bp := getBuf(0)
	defer putBuf(bp)
	*bp = appendFrame((*bp)[:0], tag, m)
	c.mu.Lock()
	c.sending++
	c.mu.Unlock()
	c.wmu.Lock()
	c.nc.SetWriteDeadline(time.Now().Add(10*c.liveness + time.Duration(len(*bp))*time.Microsecond))
	_, err := c.nc.Write(*bp)
	c.wmu.Unlock()
	c.mu.Lock()
	c.sending--
	c.mu.Unlock()
	if err != nil {
		c.fail(ErrServerGone)
		return ErrServerGone
	}
	return nil
}

// register reserves a tag (or uses the given one) for a call.
func (c *Client) register(tag uint16) (uint16, chan reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	if tag != NoTag {
		for {
			c.nextTag++
			if c.nextTag >= probeTag {
				c.nextTag = 0
			}
			if _, busy := c.pending[c.nextTag]; !busy {
				break
			}
		}
		tag = c.nextTag
	}
	if len(c.pending) == 0 {
		c.lastRecv = time.Now() // the server's silence counts from now
	}
	ch := make(chan reply, 1)
	c.pending[tag] = ch
	return tag, ch, nil
}

// rpc sends m and waits for its reply. Pass NoTag only for Tversion; any
// other tag value asks for a fresh one. Rlerror becomes its errno.
func (c *Client) rpc(ctx context.Context, tag uint16, m Message) (reply, error) {
	tag, ch, err := c.register(tag)
	if err != nil {
		return reply{}, err
	}
	if err := c.send(tag, m); err != nil {
		return reply{}, err
	}
	select {
	case r := <-ch:
		return r, replyError(r)
	case <-c.dead:
		return reply{}, c.err
	case <-ctx.Done():
		return c.flush(tag, ch, ctx.Err())
	}
}

// flush asks the server to abandon tag and waits until it has, so the tag
// is free again. A reply to the original request that arrives before the
// Rflush means the request took effect (a walk made its fid, a create its
// file): the protocol says to honour it, so it is returned as if the
// call had never been cancelled. Otherwise the call fails with cause.
func (c *Client) flush(tag uint16, ch chan reply, cause error) (reply, error) {
	ftag, fch, err := c.register(0)
	if err != nil {
		return reply{}, err
	}
	if err := c.send(ftag, &Tflush{OldTag: tag}); err != nil {
		return reply{}, err
	}
	select {
	case r := <-ch:
		// The server answered first. The Rflush that follows lands in
		// fch, which nobody reads; ftag stays reserved until then so
		// no new call can take that reply for its own.
		return r, replyError(r)
	case r := <-fch:
		r.release()
	case <-c.dead:
		return reply{}, c.err
	}
	select { // a reply sent just before the Rflush is already queued
	case r := <-ch:
		return r, replyError(r)
	default:
	}
	c.forget(tag)
	return reply{}, cause
}

// forget stops waiting for a reply to tag, freeing it for reuse only when
// the reply can no longer arrive (after Rflush) or is not wanted.
func (c *Client) forget(tag uint16) {
	c.mu.Lock()
	delete(c.pending, tag)
	c.mu.Unlock()
}

func replyError(r reply) error {
	switch m := r.m.(type) {
	case *Rlerror:
		r.release()
		return syscall.Errno(m.Ecode)
	case *Rerror:
		r.release()
		return syscall.EIO
	}
	return nil
}

// call runs one request and checks that the reply is of type R.
func call[R Message](ctx context.Context, c *Client, m Message) (R, reply, error) {
	var zero R
	r, err := c.rpc(ctx, 0, m)
	if err != nil {
		return zero, reply{}, err
	}
	resp, ok := r.m.(R)
	if !ok {
		r.release()
		c.fail(fmt.Errorf("9p: reply type %d to request type %d", r.m.msgType(), m.msgType()))
		return zero, reply{}, syscall.EIO
	}
	return resp, r, nil
}

// do runs a request whose reply carries nothing the caller keeps after
// return: it is released at once (use call to keep aliased data).
func do[R Message](ctx context.Context, c *Client, m Message) (R, error) {
	resp, r, err := call[R](ctx, c, m)
	r.release()
	return resp, err
}

// fidAllocator hands out fid numbers, reusing clunked ones.
type fidAllocator struct {
	next uint32
	free []uint32
}

func (a *fidAllocator) get() uint32 {
	if n := len(a.free); n > 0 {
		f := a.free[n-1]
		a.free = a.free[:n-1]
		return f
	}
	a.next++
	return a.next
}

func (a *fidAllocator) put(f uint32) { a.free = append(a.free, f) }

func (c *Client) newFid() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fids.get()
}

// clunk releases fid on the server and for reuse. It uses its own short
// context: a fid must go even when the caller's context has ended.
func (c *Client) clunk(fid uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.liveness)
	defer cancel()
	_, err := do[*Rclunk](ctx, c, &Tclunk{fidMsg{fid}})
	if err == nil || errors.Is(err, syscall.EBADF) {
		c.mu.Lock()
		c.fids.put(fid)
		c.mu.Unlock()
	}
}

// Attach returns the root of the server's tree named aname, attached as
// user (name and uid; uid NoUid to let the server decide).
func (c *Client) Attach(ctx context.Context, uname, aname string, uid uint32) (vfs.Node, error) {
	fid := c.newFid()
	r, err := do[*Rattach](ctx, c, &Tattach{Fid: fid, Tauth: Tauth{Afid: NoFid, Uname: uname, Aname: aname, NUname: uid}})
	if err != nil {
		c.mu.Lock()
		c.fids.put(fid)
		c.mu.Unlock()
		return nil, err
	}
	return c.newNode(fid, r.QID, uid), nil
}

// asErr wraps a client-side errno for op.
func asErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrServerGone) || errors.Is(err, errMalformed) {
		return &pathError{op, syscall.EIO, err}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return vfs.Error(op, "", errno)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return vfs.Error(op, "", syscall.EINTR)
	}
	return &pathError{op, syscall.EIO, err}
}

// pathError is an EIO that keeps what caused it for logs.
type pathError struct {
	op    string
	errno syscall.Errno
	cause error
}

func (e *pathError) Error() string   { return e.op + ": " + e.cause.Error() }
func (e *pathError) Unwrap() []error { return []error{e.errno, e.cause} }
