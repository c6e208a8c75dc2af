package ninep

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// heldRoot is a tree whose watch holds the changes made to it until it is
// fenced, as a disk tree's watch holds a burst it gathers: only a reply
// that waits for the fence can be sure its client heard of them first.
type heldRoot struct {
	vfs.Node
	mu      sync.Mutex
	fn      func([]vfs.Change)
	held    []vfs.Change
	fences  atomic.Int64
	fenceOn atomic.Bool // Fence hands the held changes on (off: it does nothing)
}

func (h *heldRoot) Watch(fn func([]vfs.Change)) (stop func()) {
	h.mu.Lock()
	h.fn = fn
	h.mu.Unlock()
	return func() {}
}

func (h *heldRoot) Fence(context.Context) error {
	h.fences.Add(1)
	if !h.fenceOn.Load() {
		return nil
	}
	h.mu.Lock()
	fn, cs := h.fn, h.held
	h.held = nil
	h.mu.Unlock()
	if fn != nil && len(cs) > 0 {
		fn(cs)
	}
	return nil
}

// change is made in the tree: held until the next fence.
func (h *heldRoot) change(c vfs.Change) {
	h.mu.Lock()
	h.held = append(h.held, c)
	h.mu.Unlock()
}

// TestNoticeGoesAheadOfReply: on a Tnotify stream, a change the tree
// made before a reply is written on the stream before the reply, so the
// client has applied it when the call returns. The tree's watch here
// hands changes on only when fenced: a server that does not fence, or
// a client that applies notices after it delivers replies, fails.
func TestNoticeGoesAheadOfReply(t *testing.T) {
	root := &heldRoot{Node: newDisk(t)}
	root.fenceOn.Store(true)
	_, addr := serve(t, root)
	c, croot := dial(t, addr, "")
	waitUntil(t, "the notice stream", func() bool { return c.notices.on.Load() && c.notices.streaming.Load() })
	ctx := context.Background()
	made, h, err := croot.Create(ctx, "f", syscall.O_RDWR|syscall.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	for round := range 50 {
		a, err := made.Attr(ctx) // held by the cache from here on
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.cache.get(cacheKey{cAttr, a.Ino, ""}); !ok {
			t.Fatalf("round %d: the file's attributes are not held", round)
		}
		root.change(vfs.Change{Dir: 1, Name: "f", Data: true, Attr: vfs.Attr{Ino: a.Ino, Mode: a.Mode, Size: int64(round + 1)}})
		// Any call with a round trip: a lookup of a name not there.
		if _, err := croot.Lookup(ctx, fmt.Sprint("missing-", round)); err == nil {
			t.Fatal("lookup of a missing name succeeded")
		}
		if _, ok := c.cache.get(cacheKey{cAttr, a.Ino, ""}); ok {
			t.Fatalf("round %d: a reply made after the change was delivered before its notice was applied", round)
		}
	}
	if root.fences.Load() == 0 {
		t.Error("the server never fenced its tree")
	}
}

// TestNoticeStreamOnTheWire: Tnotify's first Rnotify comes at once,
// empty; a held change goes on the stream ahead of the next reply; a
// second subscription is refused while one is on (EBUSY); a Tflush of
// the stream's tag ends it with Rlerror, then Rflush, and ends the
// subscription, so a new Tnotify is taken.
func TestNoticeStreamOnTheWire(t *testing.T) {
	root := &heldRoot{Node: newDisk(t)}
	root.fenceOn.Store(true)
	_, addr := serve(t, root)
	rc := wireDial(t, addr)
	defer rc.nc.Close()
	if rv := rc.rpc(t, NoTag, &Tversion{Msize: 65536, Version: VersionExt}).(*Rversion); rv.Version != VersionExt {
		t.Fatalf("version: %q", rv.Version)
	}
	rc.attach(t, 1)
	if r, ok := rc.rpc(t, 7, &Tnotify{Twatch{Fid: 1, Count: 65536}, notifyAhead}).(*Rnotify); !ok || len(r.Changes) != 0 {
		t.Fatalf("first Rnotify: got %#v, want an empty one at once", r)
	}
	root.change(vfs.Change{Dir: 1, Name: "made"})
	rc.send(t, 2, &Tgetattr{Fid: 1, Mask: AttrBasic})
	tags := recvTags(t, rc, 2)
	if tags[0].tag != 7 || len(tags[0].m.(*Rnotify).Changes) != 1 || tags[1].tag != 2 {
		t.Fatalf("after a held change, got %v; want the Rnotify (tag 7) with the change, then the Rgetattr (tag 2)", tags)
	}
	if r, ok := rc.rpc(t, 3, &Twatch{Fid: 1, Count: 65536}).(*Rlerror); !ok || syscall.Errno(r.Ecode) != syscall.EBUSY {
		t.Errorf("Twatch while the stream is on: got %#v, want EBUSY", r)
	}
	rc.send(t, 4, &Tflush{OldTag: 7})
	tags = recvTags(t, rc, 2)
	if e, ok := tags[0].m.(*Rlerror); !ok || tags[0].tag != 7 || syscall.Errno(e.Ecode) != syscall.EINTR || tags[1].tag != 4 {
		t.Fatalf("Tflush of the stream: got %v, want Rlerror EINTR on tag 7, then Rflush", tags)
	}
	if r, ok := rc.rpc(t, 7, &Tnotify{Twatch: Twatch{Fid: 1, Count: 65536}}).(*Rnotify); !ok || len(r.Changes) != 0 {
		t.Fatalf("Tnotify after the flush: got %#v, want a new stream", r)
	}
	// Without notifyAhead the tree is not fenced: a held change waits.
	before := root.fences.Load()
	root.change(vfs.Change{Dir: 1, Name: "later"})
	if r, ok := rc.rpc(t, 2, &Tgetattr{Fid: 1, Mask: AttrBasic}).(*Rgetattr); !ok || root.fences.Load() != before {
		t.Errorf("a stream that did not ask for changes ahead: got %#v, %d fences; want the Rgetattr and none", r, root.fences.Load()-before)
	}
}

type taggedReply struct {
	tag uint16
	m   Message
}

// recvTags reads n frames.
func recvTags(t *testing.T, rc *wireConn, n int) []taggedReply {
	t.Helper()
	var got []taggedReply
	for range n {
		rc.nc.SetReadDeadline(time.Now().Add(fuzzHangBound))
		tag, m, err := rc.recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, taggedReply{tag, m})
	}
	return got
}

// TestNoticeStreamFallsBack: a server that does not know Tnotify (an
// older gsvfs) is polled with Twatch, and its notices still come.
func TestNoticeStreamFallsBack(t *testing.T) {
	answered := make(chan struct{}, 1)
	r := &rogue{watch: func(*Twatch) Message {
		select {
		case answered <- struct{}{}:
			return &Rwatch{}
		default:
			return nil // the second Twatch waits
		}
	}}
	c, _ := dial(t, r.serve(t), "")
	waitUntil(t, "notices polled with Twatch", func() bool { return c.notices.on.Load() })
	if c.notices.streaming.Load() {
		t.Error("the client streams from a server that refused Tnotify")
	}
}

// TestNoticeStreamFloodBounded: a peer that streams Rnotify frames as
// fast as it can write them keeps the client within its bounds: the
// cache within its size, the batches waiting to be handed on within
// noticeQueue, those a stuck watcher could not take handed on as one
// Lost once it goes on.
func TestNoticeStreamFloodBounded(t *testing.T) {
	f := &flood{}
	r := &rogue{notify: func(m *Tnotify, send func(Message) bool) {
		send(&Rnotify{})
		for send(&Rnotify{*f.batch(&m.Twatch).(*Rwatch)}) {
		}
	}}
	c, root := dial(t, r.serve(t), "")
	var lost atomic.Int64
	stuck := make(chan struct{})
	stop := root.(vfs.Watcher).Watch(func(cs []vfs.Change) {
		<-stuck
		if len(cs) == 1 && cs[0].Lost {
			lost.Add(1)
		}
	})
	defer stop()
	testenv.WaitFor(t, 10*hangBound, "more batches than wait to be handed on", func() bool { return f.batches.Load() > 2*noticeQueue })
	if n := c.Notices().Cached; n > DefaultCacheSize {
		t.Errorf("the cache holds %d entries, want at most %d", n, DefaultCacheSize)
	}
	if n := len(c.notices.queue); n > noticeQueue {
		t.Errorf("%d batches wait to be handed on, want at most %d", n, noticeQueue)
	}
	close(stuck)
	testenv.WaitFor(t, hangBound, "the watcher told changes were lost", func() bool { return lost.Load() > 0 })
}
