package ninep

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/gsvfs/gsvfs/vfs"
)

// Limits a client cannot go past, so that one client, or many, cannot
// take the daemon's memory or descriptors from everyone else. Each limit
// that is hit says so in the log (rate-limited).
const (
	// DefaultMaxConns bounds the connections one server serves at once.
	DefaultMaxConns = 1024
	// DefaultMemory bounds the bytes of large frames and read replies
	// the server holds for all connections together.
	DefaultMemory = 256 << 20
	// smallFrame is the size up to which a frame is read without waiting
	// for memory: flushes and metadata requests always get through, and
	// maxInflight of them hold little.
	smallFrame = 64 << 10
	// frameRate is the slowest a frame may come, in bytes a second, on
	// top of frameTime.
	frameRate = 64 << 10
)

// frameTime is how long the rest of a frame may take once its first byte
// came, plus a second for each frameRate bytes of its size: a client that
// stops half-way through a frame loses the connection. A variable so
// tests need not wait for it.
var frameTime = 10 * time.Second

// memory is a budget of bytes, taken before they are held and given back
// after: one per connection (a share of the server's) and one for the
// server.
type memory struct {
	sem  *semaphore.Weighted
	size int64
}

func newMemory(size int64) memory { return memory{semaphore.NewWeighted(size), size} }

// reserve takes n bytes from the connection's budget and the server's,
// waiting while they are spent (which stops a connection that does not
// read its replies from taking more), or until ctx ends. The returned
// function gives them back.
func (c *conn) reserve(ctx context.Context, n int64) (func(), error) {
	n = min(n, c.mem.size, c.srv.mem.size)
	if !c.mem.sem.TryAcquire(n) {
		c.srv.warn.Warn("memory-conn", "9p connection at its memory limit; waiting for its replies to be read", "remote", c.nc.RemoteAddr(), "limit", c.mem.size)
		if err := c.mem.sem.Acquire(ctx, n); err != nil {
			return nil, vfs.Error("9p", "", syscall.EINTR)
		}
	}
	if !c.srv.mem.sem.TryAcquire(n) {
		c.srv.warn.Warn("memory-server", "9p server at its memory limit; requests wait", "limit", c.srv.mem.size)
		if err := c.srv.mem.sem.Acquire(ctx, n); err != nil {
			c.mem.sem.Release(n)
			return nil, vfs.Error("9p", "", syscall.EINTR)
		}
	}
	return func() { c.srv.mem.sem.Release(n); c.mem.sem.Release(n) }, nil
}

// readFrameLimited reads one frame of at most limit bytes. A frame larger
// than smallFrame waits for memory before its body is read, and the
// whole frame must arrive within a time that grows with its size.
func (c *conn) readFrameLimited(limit uint32) (*[]byte, func(), error) {
	if _, err := c.rd.Peek(1); err != nil { // idle: no deadline
		return nil, nil, err
	}
	// A frame has begun: its size field must not stall either. (A frame
	// already read into the buffer needs no deadline: the common case
	// of small requests costs no timer.)
	timed := c.rd.Buffered() < 4
	if timed {
		c.nc.SetReadDeadline(time.Now().Add(frameTime))
	}
	hdr, err := c.rd.Peek(4)
	if err != nil {
		c.nc.SetReadDeadline(time.Time{})
		return nil, nil, c.stalled(err, 0)
	}
	size := binary.LittleEndian.Uint32(hdr)
	var free func()
	if size > smallFrame && size <= limit {
		if free, err = c.reserve(c.ctx, int64(size)); err != nil {
			return nil, nil, err
		}
	}
	if c.rd.Buffered() < int(min(size, limit)) {
		timed = true
		c.nc.SetReadDeadline(time.Now().Add(frameTime + time.Duration(size/frameRate)*time.Second))
	}
	bp, err := readFrame(c.rd, limit)
	if timed {
		c.nc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		if free != nil {
			free()
		}
		return nil, nil, c.stalled(err, size)
	}
	return bp, free, nil
}

// stalled logs a frame that timed out half-way and ends the connection
// quietly (io.EOF: already logged); other errors pass as they are.
func (c *conn) stalled(err error, size uint32) error {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.srv.warn.Warn("frame-timeout", "9p connection dropped: a frame stalled half-way", "remote", c.nc.RemoteAddr(), "size", size)
		return io.EOF
	}
	return err
}

// takeOpen counts an open file of the connection, failing with EMFILE
// for this client alone at its limit.
func (c *conn) takeOpen() error {
	if c.opens.Add(1) > c.srv.opts.MaxOpen {
		c.opens.Add(-1)
		c.srv.warn.Warn("open-limit", "9p connection at its limit of open files", "remote", c.nc.RemoteAddr(), "limit", c.srv.opts.MaxOpen)
		return vfs.Error("open", "", syscall.EMFILE)
	}
	return nil
}

func (c *conn) dropOpen() { c.opens.Add(-1) }
