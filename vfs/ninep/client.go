package ninep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

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
	// Limits bound what the server can make the client hold.
	Limits ClientLimits
	// CacheSize bounds the cache of what the server said, in entries
	// (DefaultCacheSize if 0).
	CacheSize int
	// WriteBehind, if set, is how many bytes of writes to stored files
	// may be in flight, acknowledged before the server answers them
	// (cwrite.go); 0 waits for each write's answer.
	WriteBehind int64
	// OverBound, if set, is told the first time a listing of this
	// connection goes past its bound (the listing fails with EFBIG;
	// the connection is kept), so the owner can log it once.
	OverBound func(*LimitError)
	// Exact, if set, says the server shares this machine's disk (a
	// `gsvfs mount --server` of a local daemon), where close-to-open is
	// exact (DESIGN.md section 3) while the server's change notices
	// still come behind: what an open depends on is asked of the server
	// rather than answered from notices that may not have come yet. A
	// name found missing is walked again (an open of it is a lookup
	// only), and an opened file's attributes are fetched with the open.
	// Other answers (a present name's walk, a stat) stay cached. Unset
	// (a link to a device), an open is causal and costs no round trip
	// for what the cache holds.
	Exact bool
	// IDs, if set, translates the server's user and group numbers (a
	// server on another machine: a gateway's device); nil shows them as
	// they are (a server of this machine).
	IDs *IDMap

	host *hostNumbers // the numbers the caller speaks (this OS's if nil)
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

	host     *hostNumbers // the numbers the caller speaks
	extended bool         // VersionExt negotiated; fixed before the client is returned
	// noWalkReaddir: the server refused Twalkreaddir (an older gsvfs),
	// so directories open and list in two requests.
	noWalkReaddir atomic.Bool
	// noMkdirGet: the server refused Tmkdirget, so a mkdir is a Tmkdir
	// and a walk from then on.
	noMkdirGet atomic.Bool
	exact      bool   // ClientOptions.Exact
	ids        *IDMap // ClientOptions.IDs
	notices    notices
	cache      *cache

	limits ClientLimits
	behind *behind             // writes in flight (cwrite.go); nil: none are
	raHeld atomic.Int64        // reply memory read-ahead windows hold (cread.go)
	tags   chan uint16         // free tags; a call's flush goes as tag+limits.Tags
	mem    *semaphore.Weighted // reply memory (limits.Memory bytes)
	clunks chan uint32         // fids to clunk in the background
	// overBound hears of the first listing past its bound.
	overBound  func(*LimitError)
	listWarned sync.Once
	life       context.Context // ends with the connection
	endLife    context.CancelFunc

	wmu sync.Mutex // serialises frames on the wire

	mu       sync.Mutex
	pending  map[uint16]*waiter // by tag: a call's, and its flush's
	fids     fidAllocator
	lastRecv time.Time
	probeAt  time.Time // when the outstanding probe went out; zero if none
	probing  bool      // a probe is on its way out
	sending  int       // frames being written now
	polls    int       // pending Twatches (waiter.poll), not counted as waiting
	err      error     // set once the connection is dead
	dead     chan struct{}

	sent [256]atomic.Int64 // requests put on the wire by type, for Sent
}

// reply is a decoded R-message, the pooled frame it aliases, and the
// reply memory its call reserved.
type reply struct {
	m   Message
	bp  *[]byte
	c   *Client
	mem int64
}

// release gives back the frame and the memory; once per reply.
func (r reply) release() {
	if r.bp != nil {
		putBuf(r.bp)
	}
	if r.mem > 0 {
		r.c.mem.Release(r.mem)
	}
}

// waiter is one call waiting for its reply, under its tag and, once it
// is flushed, under its flush's tag too.
type waiter struct {
	tag uint16
	ch  chan reply // the reply
	fch chan reply // the Rflush, once flushed
	mem int64      // reply memory reserved
	out int        // frames still awaited; the tag is free again at 0
	// poll: a Twatch, which the server answers only when something
	// changes, so its wait is no sign of a dead server.
	poll bool
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
	l := opts.Limits.withDefaults(opts.Msize)
	c := &Client{
		nc: nc, msize: opts.Msize, liveness: opts.Liveness, idle: opts.Idle, host: cmp.Or(opts.host, host),
		limits: l, tags: make(chan uint16, l.Tags), mem: semaphore.NewWeighted(l.Memory),
		clunks: make(chan uint32, l.Clunks), overBound: opts.OverBound,
		pending: map[uint16]*waiter{}, lastRecv: time.Now(), cache: newCache(opts.CacheSize),
		dead: make(chan struct{}), exact: opts.Exact, ids: opts.IDs,
	}
	if opts.WriteBehind > 0 {
		c.behind = newBehind(opts.WriteBehind)
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	for t := range l.Tags {
		c.tags <- uint16(t)
	}
	go c.readLoop(opts.Msize)
	go c.watch()
	go c.clunker()
	if err := c.negotiate(ctx, opts.Msize); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// negotiate offers VersionExt and settles for plain 9P2000.L: a server
// may answer 9P2000.L itself (as a refinement it does not know allows),
// "unknown" (hugelgupf/p9 does) or an error (diod answers Rlerror EIO),
// and is then asked again for 9P2000.L alone.
func (c *Client) negotiate(ctx context.Context, msize uint32) error {
	got, err := c.version(ctx, msize, VersionExt)
	var errno syscall.Errno
	if err == nil && got == "unknown" || errors.As(err, &errno) {
		got, err = c.version(ctx, msize, Version)
	}
	switch {
	case err != nil:
		return err
	case got != Version && got != VersionExt:
		return fmt.Errorf("9p: server does not speak %s (it answered %q)", Version, got)
	}
	c.extended = got == VersionExt
	return nil
}

// version sends one Tversion and returns the version answered; an
// msize out of bounds is an error.
func (c *Client) version(ctx context.Context, msize uint32, offer string) (string, error) {
	r, err := c.rpc(ctx, NoTag, &Tversion{Msize: msize, Version: offer})
	if err != nil {
		return "", err
	}
	defer r.release()
	rv, ok := r.m.(*Rversion)
	if !ok {
		return "", fmt.Errorf("9p: reply type %d to Tversion", r.m.msgType())
	}
	if rv.Version != "unknown" && (rv.Msize < minMsize || rv.Msize > msize) {
		return "", fmt.Errorf("9p: server offers msize %d (asked %d)", rv.Msize, msize)
	}
	if rv.Version != "unknown" {
		c.msize = rv.Msize
	}
	return strings.Clone(rv.Version), nil
}

// Extended says whether the server is gsvfs and agreed to its
// extensions (VersionExt); false for a plain 9P2000.L server.
func (c *Client) Extended() bool { return c.extended }

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

// Err is why the connection ended (ErrServerGone, or a *LimitError for a
// server cut off), nil while it lasts.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

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
	c.endLife()
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
		if tag == streamTag && c.notices.streaming.Load() {
			ok := c.streamFrame(m, len(*bp))
			putBuf(bp)
			if !ok {
				return
			}
			continue
		}
		if !c.deliver(tag, m, bp) {
			return
		}
	}
}

// deliver hands a reply to the call waiting on tag; false if it ended
// the connection. A reply larger than its call reserved room for cuts
// the server off: that room is what bounds the memory replies hold.
func (c *Client) deliver(tag uint16, m Message, bp *[]byte) bool {
	c.mu.Lock()
	c.heardLocked()
	w := c.pending[tag]
	flushed := w != nil && tag != w.tag
	if w != nil {
		c.settle(tag, w)
		if flushed { // no reply to the call can come after its Rflush
			c.settle(w.tag, w)
		}
	}
	c.mu.Unlock()
	switch {
	case w == nil:
		putBuf(bp) // a probe's answer, or a reply to a flushed call
	case flushed:
		putBuf(bp)
		w.fch <- reply{}
	case int64(len(*bp)) > w.mem:
		c.fail(&LimitError{fmt.Sprintf("a reply of %d bytes to a call that asked for at most %d", len(*bp), w.mem)})
		putBuf(bp)
		return false
	default:
		w.ch <- reply{m: m, bp: bp, c: c, mem: w.mem}
	}
	return true
}

// heard notes that the server spoke, so it is alive.
func (c *Client) heard() {
	c.mu.Lock()
	c.heardLocked()
	c.mu.Unlock()
}

func (c *Client) heardLocked() { c.lastRecv, c.probeAt = time.Now(), time.Time{} }

// settle stops waiting under tag; the call's tag is free again once
// nothing more is awaited for it. Called with mu held.
func (c *Client) settle(tag uint16, w *waiter) {
	if c.pending[tag] != w {
		return
	}
	delete(c.pending, tag)
	if tag == w.tag && w.poll {
		c.polls--
	}
	if w.out--; w.out == 0 && w.tag != NoTag {
		c.tags <- w.tag // never blocks: each tag comes back once
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
	waiting := len(c.pending) - c.polls
	idleQuiet := waiting == 0 && (c.idle == 0 || quiet < c.idle) && c.probeAt.IsZero()
	switch {
	case c.sending > 0 || idleQuiet || waiting > 0 && quiet < c.liveness:
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
	c.sent[m.msgType()].Add(1)
	return nil
}

// Sent is how many requests this client has put on the wire: every
// call, flush, background clunk and liveness probe, each one round trip.
// An owner shows it so that what a workload costs over a slow link can
// be counted (a device link in /sys/stats).
func (c *Client) Sent() int64 {
	var n int64
	for t := range c.sent {
		n += c.sent[t].Load()
	}
	return n
}

// SentByType is Sent by kind of request ("walk", "getattr", "read"...),
// the kinds never sent left out: what a workload's round trips went to.
func (c *Client) SentByType() map[string]int64 {
	out := map[string]int64{}
	for t := range c.sent {
		if n := c.sent[t].Load(); n > 0 {
			out[requestName(uint8(t))] = n
		}
	}
	return out
}

// requestName is the name of T-message type t without its T, as 9P's
// documents write it ("walkgetattr" for gsvfs's extension).
func requestName(t uint8) string {
	m := newMessage(t)
	if m == nil {
		return fmt.Sprintf("type%d", t)
	}
	name := reflect.TypeOf(m).Elem().Name()
	return strings.ToLower(strings.TrimPrefix(name, "T"))
}

// register makes a waiter for a call: a tag, taken from the bounded pool
// (or NoTag, for Tversion), and reply memory for m's reply.
func (c *Client) register(ctx context.Context, tag uint16, m Message) (*waiter, error) {
	if tag != NoTag {
		var err error
		if tag, err = c.takeTag(ctx); err != nil {
			return nil, err
		}
	}
	w := &waiter{tag: tag, ch: make(chan reply, 1), mem: replySize(m), out: 1}
	if err := c.reserve(ctx, w.mem); err != nil {
		c.mu.Lock()
		c.settleUnsent(w)
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if len(c.pending) == c.polls {
		c.lastRecv = time.Now() // the server's silence counts from now
	}
	c.pending[tag] = w
	if _, w.poll = m.(*Twatch); w.poll {
		c.polls++
	}
	return w, nil
}

// settleUnsent gives back the tag of a call never sent. Called with mu
// held.
func (c *Client) settleUnsent(w *waiter) {
	c.pending[w.tag] = w
	c.settle(w.tag, w)
}

// rpc sends m and waits for its reply. Pass NoTag only for Tversion; any
// other tag value asks for a fresh one. Rlerror becomes its errno. A
// call past its CallWait fails with ETIMEDOUT.
func (c *Client) rpc(ctx context.Context, tag uint16, m Message) (reply, error) {
	if c.behind != nil && tag != NoTag && ctx.Value(behindKey{}) == nil {
		if err := c.behind.barrier(ctx); err != nil {
			return reply{}, err
		}
	}
	d := c.callWait(m)
	if d <= 0 {
		return c.rpcWith(ctx, tag, m)
	}
	bounded, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	r, err := c.rpcWith(bounded, tag, m)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = syscall.ETIMEDOUT // the bound's, not the caller's
	}
	return r, err
}

// rpcWith is rpc under ctx alone.
func (c *Client) rpcWith(ctx context.Context, tag uint16, m Message) (reply, error) {
	w, err := c.register(ctx, tag, m)
	if err != nil {
		return reply{}, err
	}
	if err := c.send(w.tag, m); err != nil {
		return reply{}, err
	}
	select {
	case r := <-w.ch:
		return r, c.replyError(r)
	case <-c.dead:
		return reply{}, c.Err()
	case <-ctx.Done():
		return c.flush(w, ctx.Err())
	}
}

// flush asks the server to abandon w's call and waits until it has, so
// the tag is free again. A reply to the original request that arrives
// before the Rflush means the request took effect (a walk made its fid, a
// create its file): the protocol says to honour it, so it is returned as
// if the call had never been cancelled. Otherwise the call fails with
// cause. The flush goes under the call's own second tag, so it never
// waits for one; a server that answers neither within flushWait holds
// the call hostage and is cut off.
func (c *Client) flush(w *waiter, cause error) (reply, error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return reply{}, c.err
	}
	if c.pending[w.tag] != w { // answered already: the reply is on its way
		c.mu.Unlock()
		return c.await(w, cause)
	}
	if w.tag == NoTag { // a Tversion: the connection is given up with it
		c.mu.Unlock()
		return reply{}, cause
	}
	ftag := w.tag + uint16(c.limits.Tags)
	w.fch = make(chan reply, 1)
	w.out++
	c.pending[ftag] = w
	c.mu.Unlock()
	if err := c.send(ftag, &Tflush{OldTag: w.tag}); err != nil {
		return reply{}, err
	}
	return c.await(w, cause)
}

// await waits for a flushed call's reply or its Rflush, for flushWait.
func (c *Client) await(w *waiter, cause error) (reply, error) {
	t := time.NewTimer(c.limits.FlushWait)
	defer t.Stop()
	select {
	case r := <-w.ch:
		// The server answered first. The Rflush that follows settles
		// the flush's tag when it comes.
		return r, c.replyError(r)
	case <-w.fch:
	case <-c.dead:
		return reply{}, c.Err()
	case <-t.C:
		c.fail(&LimitError{fmt.Sprintf("a flushed call answered neither way within %v", c.limits.FlushWait)})
		return reply{}, c.Err()
	}
	select { // a reply sent just before the Rflush is already queued
	case r := <-w.ch:
		return r, c.replyError(r)
	default:
	}
	c.mem.Release(w.mem) // no reply can come now
	return reply{}, cause
}

// replyError is the error r carries, in the host's numbers.
func (c *Client) replyError(r reply) error {
	switch m := r.m.(type) {
	case *Rlerror:
		r.release()
		return c.host.errnoFromWire(m.Ecode)
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

// put frees f for reuse. Fid 0 is never handed out (get starts at 1):
// one put back is a bookkeeping slip of the caller's, and reusing it
// would give one fid to two files.
func (a *fidAllocator) put(f uint32) {
	if f != 0 {
		a.free = append(a.free, f)
	}
}

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
	c.startNotices(fid)
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
