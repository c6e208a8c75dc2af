package ninep

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// What a server can make a client hold is bounded per connection, so
// that a peer that misbehaves (a device serving an endless directory,
// one that answers nothing, one that sends more than it was asked for)
// costs its client a fixed amount of memory and goroutines, however it
// behaves: calls outstanding (tags), bytes of replies held, entries of
// one directory listing, and fids waiting to be clunked. A server that
// breaks the protocol's bounds (a reply larger than asked for, a flush
// never answered) is cut off: the connection ends with a *LimitError as
// its cause (Client.Err), which the client's owner logs. A listing that
// goes past its bound only fails, with EFBIG: a directory too large
// may be a user's doing, and one user must not cut a link all share.

// Default client bounds (ClientLimits fields left 0 take these).
const (
	// DefaultMaxTags bounds the calls outstanding on one connection. A
	// caller past it waits for a tag, with its context, and resumes when
	// a reply frees one.
	DefaultMaxTags = 1024
	// DefaultClientMemory bounds the bytes of replies one connection
	// holds: each call reserves room for the largest reply it may get
	// before it is sent, and gives it back when its reply is done with.
	DefaultClientMemory = 64 << 20
	// DefaultMaxListEntries and DefaultMaxListBytes bound one directory
	// listing (an open directory read from its start): its entries, and
	// the bytes of their names.
	DefaultMaxListEntries = 1 << 20
	DefaultMaxListBytes   = 128 << 20
	// DefaultMaxClunks bounds the fids of forgotten nodes waiting to be
	// clunked in the background; past it, a forget clunks at once.
	DefaultMaxClunks = 4096
	// DefaultFlushWait bounds how long a cancelled call waits for the
	// server to answer its flush (or the call). A live server answers at
	// once; one that does not holds the call hostage and is cut off. A
	// gateway's links to devices take a shorter wait, so that a client
	// of the gateway never waits past its own bound.
	DefaultFlushWait = 30 * time.Second
)

const (
	// smallReply is the room reserved for a reply to anything but a read
	// or a directory read: a walk of 16 names, a getattr, a symlink's
	// target of PATH_MAX all fit.
	smallReply = 8 << 10
	// clunkers is how many background clunks run at once.
	clunkers = 8
	// maxDots bounds the "." and ".." entries of one listing, which the
	// listing bounds do not count (so that a listing passed on through
	// a gateway counts the same at both ends): a listing has two.
	maxDots = 64
)

// ClientLimits are the per-connection bounds of a Client; 0 takes the
// default.
type ClientLimits struct {
	Tags        int   // calls outstanding at once (DefaultMaxTags)
	Memory      int64 // bytes of replies held (DefaultClientMemory)
	ListEntries int   // entries of one listing (DefaultMaxListEntries)
	ListBytes   int64 // bytes of names of one listing (DefaultMaxListBytes)
	Clunks      int   // forgotten fids queued (DefaultMaxClunks)
	// FlushWait bounds the wait for a flush's answer (DefaultFlushWait).
	FlushWait time.Duration
	// CallWait, if set, bounds the wait for the reply to any call but a
	// read, a write, an fsync or a blocking lock (which may rightly wait
	// on the peer: a stream, a pipe, a slow disk, another lock's holder):
	// past it the call is flushed and fails with ETIMEDOUT. 0 leaves it
	// to the caller's context.
	CallWait time.Duration
}

// withDefaults fills in the defaults. Tags leave room for each call's
// flush tag below the probe's; memory holds at least one largest reply.
func (l ClientLimits) withDefaults(msize uint32) ClientLimits {
	pick := func(v, def int64) int64 {
		if v <= 0 {
			return def
		}
		return v
	}
	l.Tags = int(min(pick(int64(l.Tags), DefaultMaxTags), int64(streamTag/2)))
	l.Memory = max(pick(l.Memory, DefaultClientMemory), int64(msize))
	l.ListEntries = int(pick(int64(l.ListEntries), DefaultMaxListEntries))
	l.ListBytes = pick(l.ListBytes, DefaultMaxListBytes)
	l.Clunks = int(pick(int64(l.Clunks), DefaultMaxClunks))
	l.FlushWait = time.Duration(pick(int64(l.FlushWait), int64(DefaultFlushWait)))
	return l
}

// LimitError is a bound a server went past: the cause of a connection
// cut off (Client.Err), or what ClientOptions.OverBound is told.
type LimitError struct {
	What string // the bound, as a phrase: "a directory listing of more than …"
}

func (e *LimitError) Error() string { return "9p: server went past a bound: " + e.What }

// replySize is the most a reply to m may take, and the memory its call
// reserves: a read's count plus its header, or smallReply.
func replySize(m Message) int64 {
	switch m := m.(type) {
	case *Tread:
		return int64(m.Count) + clientIOHeader
	case *Treaddir:
		return int64(m.Count) + clientIOHeader
	case *Treaddirplus:
		return int64(m.Count) + clientIOHeader
	case *Twalkreaddir:
		return int64(m.Count) + clientIOHeader + rlopenSize
	case *Twatch:
		return int64(m.Count)
	case *Tnotify:
		return int64(m.Count)
	}
	return smallReply
}

// callWait is how long m may wait for its reply, 0 for no bound.
func (c *Client) callWait(m Message) time.Duration {
	switch m := m.(type) {
	case *Tread, *Twrite, *Tfsync, *Tversion:
		return 0
	case *Twatch:
		return 0 // a Twatch waits for changes, as long as there are none
	case *Tlock:
		if m.Flags&LockFlagBlock != 0 {
			return 0 // F_SETLKW waits for the holder, as long as it holds
		}
	}
	return c.limits.CallWait
}

// takeTag waits for a free tag: a bounded pool, so a server that holds
// every tag makes new callers wait (until their context ends or the
// connection does), never spin.
func (c *Client) takeTag(ctx context.Context) (uint16, error) {
	select {
	case t := <-c.tags:
		return t, nil
	default:
	}
	select {
	case t := <-c.tags:
		return t, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.dead:
		return 0, c.Err()
	}
}

// reserve takes n bytes of the connection's reply memory, waiting while
// replies hold it all.
func (c *Client) reserve(ctx context.Context, n int64) error {
	if c.mem.TryAcquire(n) {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()
	if err := c.mem.Acquire(ctx, n); err != nil {
		if e := c.Err(); e != nil {
			return e
		}
		return err
	}
	return nil
}

// clunkLater clunks fid in the background: a forget (a kernel dropping an
// inode) never waits on the server. Past the queue's bound the clunk is
// made at once, which slows the forgetter to the server's pace.
func (c *Client) clunkLater(fid uint32) {
	select {
	case c.clunks <- fid:
	case <-c.dead:
	default:
		c.clunk(fid)
	}
}

// clunker runs queued clunks until the connection ends, clunkers of
// them at once; an idle connection costs one goroutine for them. With
// the extensions, the fids queued by the time a clunk may start go
// together in one Tclunkmany (a kernel forgets inodes by the thousand).
func (c *Client) clunker() {
	running := make(chan struct{}, clunkers)
	for {
		select {
		case fid := <-c.clunks:
			running <- struct{}{} // a clunk ends within its own timeout
			fids := c.gatherClunks(fid)
			go func() {
				defer func() { <-running }()
				c.clunkAll(fids)
			}()
		case <-c.dead:
			return
		}
	}
}

// gatherClunks adds to fid the fids queued behind it, as many as one
// Tclunkmany carries; just fid without the extensions.
func (c *Client) gatherClunks(fid uint32) []uint32 {
	fids := []uint32{fid}
	most := min(MaxClunkMany, int(c.msize-headerSize-2)/4)
	for c.extended && len(fids) < most {
		select {
		case f := <-c.clunks:
			fids = append(fids, f)
		default:
			return fids
		}
	}
	return fids
}

// clunkAll clunks fids, in one request when there are several; if that
// fails short of the connection's end, each is clunked on its own.
func (c *Client) clunkAll(fids []uint32) {
	if len(fids) == 1 {
		c.clunk(fids[0])
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*c.liveness)
	defer cancel()
	_, err := do[*Rclunkmany](ctx, c, &Tclunkmany{Fids: fids})
	switch {
	case err == nil:
		c.mu.Lock()
		for _, f := range fids {
			c.fids.put(f)
		}
		c.mu.Unlock()
	case c.Err() == nil:
		for _, f := range fids {
			c.clunk(f)
		}
	}
}

// listing counts what one directory listing has brought, and fails a
// listing that goes past the bounds (an endless directory, or offsets
// that loop) with EFBIG, from then on without asking the server. EFBIG
// (the directory is too large) rather than EOVERFLOW, which GNU ls takes
// as one bad entry and reads on past, for ever.
type listing struct {
	entries int
	bytes   int64
	dots    int
	next    uint64 // the offset the last batch ended at
}

// start is called before a batch is read at off: a read from offset 0
// starts a new listing, unless the server itself sent the listing back
// to 0; a listing already past its bounds fails at once.
func (l *listing) start(c *Client, off uint64) error {
	if off == 0 && l.next != 0 {
		*l = listing{}
	}
	return l.check(c)
}

// count counts one entry of a batch; check the bounds after the batch.
func (l *listing) count(e *Dirent) {
	if e.Name == "." || e.Name == ".." {
		l.dots++
	} else {
		l.entries++
		l.bytes += int64(len(e.Name))
	}
	l.next = e.Offset
}

func (l *listing) check(c *Client) error {
	if l.entries <= c.limits.ListEntries && l.bytes <= c.limits.ListBytes && l.dots <= maxDots {
		return nil
	}
	cause := &LimitError{fmt.Sprintf("a directory listing of more than %d entries or %d bytes of names",
		c.limits.ListEntries, c.limits.ListBytes)}
	c.listWarned.Do(func() {
		if c.overBound != nil {
			c.overBound(cause)
		}
	})
	return &pathError{"readdir", syscall.EFBIG, cause}
}
