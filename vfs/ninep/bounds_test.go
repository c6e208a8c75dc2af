package ninep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// rogue is a 9P server written frame by frame that misbehaves as a bad
// device would: it lists every directory endlessly (or with offsets that
// loop back to the start), answers reads with readSize bytes whatever
// was asked, and never answers the requests hold picks. It answers the
// rest (version, attach, walk, getattr, open, clunk, liveness probes)
// as a live server does.
type rogue struct {
	hold     func(Message) bool
	readSize int
	loop     uint64 // if set, directory offsets wrap to 0 after it
	held     atomic.Int64
	// watch, if set, answers Twatch (else EOPNOTSUPP); a nil answer
	// never comes.
	watch func(*Twatch) Message
	// notify, if set, answers Tnotify (else EOPNOTSUPP) by sending on
	// its tag from a goroutine of its own, until send fails.
	notify func(m *Tnotify, send func(Message) bool)
}

func (r *rogue) serve(t *testing.T) Address { return acceptEach(t, r.conn) }

func (r *rogue) conn(nc net.Conn) {
	rd := newFrameReader(nc)
	var frame, scratch []byte // reused, so the rogue's own allocations stay out of the client's measure
	var wmu sync.Mutex
	for {
		bp, err := readFrame(rd, DefaultMaxMsize)
		if err != nil {
			return
		}
		tag, m, err := decodeFrame(*bp)
		if err != nil {
			return
		}
		if r.hold != nil && r.hold(m) {
			r.held.Add(1)
			continue
		}
		if tn, ok := m.(*Tnotify); ok && r.notify != nil {
			go r.notify(tn, func(m Message) bool {
				wmu.Lock()
				defer wmu.Unlock()
				_, err := nc.Write(appendFrame(nil, tag, m))
				return err == nil
			})
			continue
		}
		a := r.answer(m, &scratch)
		if a == nil {
			continue
		}
		wmu.Lock()
		frame = appendFrame(frame[:0], tag, a)
		_, err = nc.Write(frame)
		wmu.Unlock()
		if err != nil {
			return
		}
	}
}

func (r *rogue) answer(m Message, scratch *[]byte) Message {
	dir := QID{Type: QTDir, Path: 1}
	switch m := m.(type) {
	case *Tversion:
		return &Rversion{*m}
	case *Tattach:
		return &Rattach{rqid{dir}}
	case *Twalk:
		return &Rwalk{walkQIDs(m)}
	case *Twalkgetattr: // the extensions, which it claims to speak
		return &Rwalkgetattr{Rwalk{walkQIDs(&m.Twalk)}, Rgetattr{Valid: AttrBasic, QID: dir, Mode: syscall.S_IFDIR | 0o755, Nlink: 2}}
	case *Treaddirplus:
		return &Rreaddirplus{Rreaddir{r.dirents(&m.Treaddir, true, scratch)}}
	case *Tclunkmany:
		return &Rclunkmany{}
	case *Twalkopen:
		return &Rwalkopen{Rlopen{QID: dir}}
	case *Tgetattr:
		return &Rgetattr{Valid: AttrBasic, QID: dir, Mode: syscall.S_IFDIR | 0o755, Nlink: 2}
	case *Tlopen:
		return &Rlopen{QID: dir}
	case *Treaddir:
		return &Rreaddir{r.dirents(m, false, scratch)}
	case *Tread:
		return &Rread{make([]byte, r.readSize)}
	case *Tflush:
		return &Rflush{}
	case *Tclunk:
		return &Rclunk{}
	case *Tmkdir:
		return &Rmkdir{rqid{QID{Type: QTDir, Path: 2}}}
	case *Twatch:
		if r.watch != nil {
			return r.watch(m)
		}
	}
	return &Rlerror{wEOPNOTSUPP}
}

func walkQIDs(m *Twalk) []QID {
	qids := make([]QID, len(m.Names))
	for i := range qids {
		qids[i] = QID{Type: QTDir, Path: uint64(i + 2)}
	}
	return qids
}

// dirents fills a reply with entries from m's offset on (with
// attributes if plus): the listing never ends.
func (r *rogue) dirents(m *Treaddir, plus bool, scratch *[]byte) []byte {
	b := (*scratch)[:0]
	defer func() { *scratch = b }()
	for off := m.Offset; ; off++ {
		next := off + 1
		if r.loop != 0 {
			next %= r.loop
		}
		d := Dirent{QID: QID{Path: off + 100}, Offset: next, Type: 8, Name: fmt.Sprintf("file-%012d", off)}
		if plus {
			if len(b)+direntPlusSize(d.Name) > int(m.Count) {
				return b
			}
			b = AppendDirentPlus(b, DirentPlus{d, Rgetattr{Valid: AttrBasic, QID: d.QID, Mode: syscall.S_IFREG | 0o644}})
			continue
		}
		if len(b)+direntSize(d.Name) > int(m.Count) {
			return b
		}
		b = AppendDirent(b, d)
	}
}

// holdAllBut holds every request but the version, the attach and the
// liveness probes: a server that looks alive and answers nothing.
func holdAllBut(m Message) bool {
	switch m := m.(type) {
	case *Tversion, *Tattach:
		return false
	case *Tflush:
		return m.OldTag != NoTag
	}
	return true
}

// cutOff checks that c ended its connection for going past a bound.
func cutOff(t *testing.T, c *Client) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(hangBound):
		t.Fatal("the client still serves a server past its bounds")
	}
	var lim *LimitError
	if !errors.As(c.Err(), &lim) {
		t.Fatalf("the connection ended with %v, want a LimitError", c.Err())
	}
	t.Logf("cut off: %v", lim)
}

// A directory that never ends, or whose offsets loop back to its start,
// fails the listing with EFBIG once it passes the listing's bound,
// instead of growing the client's memory for ever; the owner is told
// once however many listings fail, the connection is kept, and nothing
// is left behind.
func TestEndlessDirectoryBounded(t *testing.T) {
	const limit = 50_000
	for _, loop := range []uint64{0, 3000} {
		t.Run(fmt.Sprintf("loop=%d", loop), func(t *testing.T) {
			addr := (&rogue{loop: loop}).serve(t)
			var told atomic.Int64
			_, root := dialWith(t, addr, "", ClientOptions{
				Limits:    ClientLimits{ListEntries: limit},
				OverBound: func(*LimitError) { told.Add(1) },
			})
			goroutines := runtime.NumGoroutine()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 2 {
				err := within(t, "listing an endless directory", func() error {
					_, err := vfs.ReadDirAll(context.Background(), root)
					return err
				})
				if got := vfs.Errno(err); got != syscall.EFBIG {
					t.Errorf("listing: got %v (%v), want EFBIG", got, err)
				}
			}
			runtime.ReadMemStats(&after)
			// Two listings of 50,000 entries of 17-byte names take
			// tens of MB in all (about 45 plain; the rogue speaks the
			// extensions, whose entries carry attributes, some 75),
			// plus what the cache collects of each before it gives up
			// on a listing too long to hold; a listing that grew for
			// ever would take all there is.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("two listings allocated %d MB", alloc>>20)
			if alloc > 120<<20 {
				t.Errorf("listing allocated %d MB, want under 120", alloc>>20)
			}
			if n := told.Load(); n != 1 {
				t.Errorf("the owner was told %d times, want once", n)
			}
			if _, err := root.Attr(context.Background()); err != nil {
				t.Errorf("the connection after the listings: %v", err)
			}
			waitGoroutines(t, goroutines)
		})
	}
}

// waitGoroutines waits until the test's goroutines are back to at most
// want plus the few a cut connection ends with. The bound is generous: it
// only makes a failure slower, and a loaded machine may take its time to
// run the goroutines that end.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	var got int
	if !testenv.Poll(10*time.Second, func() bool { got = runtime.NumGoroutine(); return got <= want }) {
		t.Errorf("goroutines: %d, want at most %d", got, want)
	}
}

// A server that answers its liveness probes but nothing else: a call
// whose context ends is flushed, the flush is not answered either, and
// the server is cut off instead of holding the caller for ever.
func TestSilentServerCutOff(t *testing.T) {
	addr := (&rogue{hold: holdAllBut}).serve(t)
	c, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{FlushWait: 500 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := within(t, "getattr on a server that answers only probes", func() error {
		_, err := root.Attr(ctx)
		return err
	})
	if got := vfs.Errno(err); got != syscall.EIO {
		t.Errorf("getattr: got %v (%v), want EIO", got, err)
	}
	cutOff(t, c)
}

// A server that looks alive (it answers probes and flushes) but sits on
// a getattr: with CallWait set, the getattr fails with ETIMEDOUT though
// its caller set no deadline, and the connection stays up.
func TestCallWaitBoundsHeldCall(t *testing.T) {
	addr := (&rogue{hold: func(m Message) bool { _, getattr := m.(*Tgetattr); return getattr }}).serve(t)
	c, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{CallWait: 200 * time.Millisecond}})
	err := within(t, "getattr held by the server", func() error {
		_, err := root.Attr(context.Background())
		return err
	})
	if got := vfs.Errno(err); got != syscall.ETIMEDOUT {
		t.Errorf("getattr: got %v (%v), want ETIMEDOUT", got, err)
	}
	if _, err := root.Lookup(context.Background(), "x"); err != nil {
		t.Errorf("a walk after the timed-out getattr: %v", err)
	}
	if c.Err() != nil {
		t.Errorf("the connection ended: %v", c.Err())
	}
}

// Forgetting nodes never waits on the server: a kernel's forgets return
// at once though the server holds every clunk, the clunks wait in a
// bounded queue served by a fixed number of goroutines, and the server
// that holds them is cut off.
func TestForgetNeverWaits(t *testing.T) {
	r := &rogue{hold: func(m Message) bool {
		_, clunk := m.(*Tclunk)
		_, clunks := m.(*Tclunkmany)
		f, flush := m.(*Tflush)
		return clunk || clunks || flush && f.OldTag != NoTag
	}}
	addr := r.serve(t)
	c, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{FlushWait: 500 * time.Millisecond}})
	const nodes = 200
	var kids []vfs.Node
	for i := range nodes {
		kids = append(kids, walk(t, root, fmt.Sprint(i)))
	}
	goroutines := runtime.NumGoroutine()
	within(t, "forgetting nodes whose clunks are never answered", func() error {
		for _, k := range kids {
			k.(vfs.Forgetter).Forget()
		}
		return nil
	})
	if got := runtime.NumGoroutine(); got > goroutines+clunkers {
		t.Errorf("goroutines after %d forgets: %d, want at most %d", nodes, got, goroutines+clunkers)
	}
	cutOff(t, c)
}

// A reply larger than its request asked for is refused and the server
// cut off: the room each call reserves is what bounds the memory replies
// hold.
func TestOversizeReplyCutOff(t *testing.T) {
	addr := (&rogue{readSize: 512 << 10}).serve(t)
	c, root := dial(t, addr, "")
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	n, err := h.ReadAt(context.Background(), make([]byte, 10), 0)
	if got := vfs.Errno(err); got != syscall.EIO {
		t.Errorf("a 10-byte read answered with 512 KiB: %d bytes, %v; want EIO", n, err)
	}
	cutOff(t, c)
}

// With every tag in use, a caller waits for one, using no CPU while it
// waits, and goes on when a call ends and frees its tag.
func TestTagsWaitNotSpin(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	const tags = 4
	_, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{Tags: tags}})
	var cancels []context.CancelFunc
	var reads []<-chan error
	for range tags {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancels = append(cancels, cancel)
		reads = append(reads, startBlockedRead(t, ctx, root, b))
	}
	// One read ends: its tag is free once its flush is answered.
	getattrWaitsFor(t, root, "a tag", cancels[0])
	if err := <-reads[0]; vfs.Errno(err) != syscall.EINTR {
		t.Errorf("cancelled read: %v, want EINTR", err)
	}
}

// With the connection's reply memory all reserved (here by one read of a
// whole message, waiting on the server), a caller waits for memory, and
// goes on when the read ends and gives its room back.
func TestMemoryWaitsForReplies(t *testing.T) {
	tree, b := blockTree(t)
	_, addr := serve(t, tree)
	c, root := dialWith(t, addr, "", ClientOptions{Limits: ClientLimits{Memory: 1}}) // raised to one message
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := startBlockedReadOf(t, ctx, root, b, c.iounit())
	getattrWaitsFor(t, root, "reply memory", cancel)
	if err := <-read; vfs.Errno(err) != syscall.EINTR {
		t.Errorf("cancelled read: %v, want EINTR", err)
	}
}

// A node held by nobody but the call in progress keeps its fid until the
// call ends: the collector, run while the server holds the call, does
// not clunk the fid (the call would fail with EBADF, or reach whatever
// file the fid number is given to next).
func TestNodeKeptDuringCall(t *testing.T) {
	var held atomic.Int64
	clunked := make(chan uint32, 64)
	addr := (&rogue{hold: func(m Message) bool {
		switch m := m.(type) {
		case *Tgetattr:
			held.Add(1)
			return true
		case *Tclunk:
			clunked <- m.Fid
		}
		return false
	}}).serve(t)
	_, root := dial(t, addr, "")
	nodes := make(chan vfs.Node, 1)
	nodes <- walk(t, root, "x") // the one reference, taken by the call
	n := <-nodes
	fid := n.(*node).fid
	nodes <- n
	n = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := (<-nodes).Attr(ctx) // held by the server
		res <- err
	}()
	testenv.WaitFor(t, hangBound, "the getattr reaching the server", func() bool { return held.Load() != 0 })
	for range 20 {
		runtime.GC()
		time.Sleep(time.Millisecond) // let cleanups queued by the collector run
	}
	for len(clunked) > 0 {
		if f := <-clunked; f == fid {
			t.Errorf("fid %d was clunked while a getattr on it was in progress", fid)
		}
	}
	cancel()
	<-res
}

// getattrWaitsFor checks that a getattr on root waits for what, blocked
// rather than spinning, and goes on once release has been called. Its
// goroutine is looked at, not the process's CPU time, which the garbage
// collector and other tests' goroutines add to: once seen blocked, it
// must be seen blocked every time it is looked at until it is released.
func getattrWaitsFor(t *testing.T, root vfs.Node, what string, release func()) {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		_, err := root.Attr(context.Background())
		res <- err
	}()
	const marker = "ninep.getattrWaitsFor.func1"
	blocked := func() bool { return testenv.Blocked(testenv.GoroutineState(marker)) }
	for start := time.Now(); !blocked(); time.Sleep(time.Millisecond) {
		select {
		case err := <-res:
			t.Fatalf("getattr waiting for %s: returned %v, want it to wait", what, err)
		default:
		}
		if time.Since(start) > hangBound {
			t.Fatalf("getattr waiting for %s: not blocked after %v (%q)", what, hangBound, testenv.GoroutineState(marker))
		}
	}
	for range 50 {
		time.Sleep(2 * time.Millisecond)
		if !blocked() {
			t.Fatalf("getattr waiting for %s woke without a release (%q): it spins", what, testenv.GoroutineState(marker))
		}
	}
	release()
	if err := within(t, "getattr once "+what+" is given back", func() error { return <-res }); err != nil {
		t.Errorf("getattr: %v", err)
	}
}
