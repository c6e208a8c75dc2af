package ninep

import (
	"syscall"
	"testing"
	"time"
)

// A connection at its limit of open files gets EMFILE for its next open,
// another connection does not, and a clunk makes room again.
func TestOpenLimitPerConnection(t *testing.T) {
	root := newDisk(t)
	_, addr := serveWith(t, root, ServerOptions{MaxOpen: 8})
	a := wireAttach(t, addr)
	defer a.nc.Close()
	open := func(c *wireConn, fid uint32) Message {
		t.Helper()
		if _, ok := c.rpc(t, 3, &Twalk{Fid: 1, NewFid: fid}).(*Rwalk); !ok {
			t.Fatalf("walk to fid %d failed", fid)
		}
		return c.rpc(t, 4, &Tlopen{Fid: fid, Flags: 0})
	}
	for fid := uint32(10); fid < 18; fid++ {
		if r, ok := open(a, fid).(*Rlopen); !ok {
			t.Fatalf("open %d of 8: %#v", fid-9, r)
		}
	}
	if r, ok := open(a, 18).(*Rlerror); !ok || syscall.Errno(r.Ecode) != syscall.EMFILE {
		t.Fatalf("open past the limit: %#v, want Rlerror EMFILE", r)
	}
	b := wireAttach(t, addr)
	defer b.nc.Close()
	if r, ok := open(b, 10).(*Rlopen); !ok {
		t.Fatalf("open on another connection: %#v", r)
	}
	if _, ok := a.rpc(t, 5, &Tclunk{fidMsg{Fid: 10}}).(*Rclunk); !ok {
		t.Fatal("clunk failed")
	}
	if r, ok := open(a, 19).(*Rlopen); !ok {
		t.Fatalf("open after a clunk: %#v", r)
	}
}

// Past the limit of connections a new one is closed at once; the ones
// served go on, and a place freed is taken again.
func TestConnectionLimit(t *testing.T) {
	_, addr := serveWith(t, newDisk(t), ServerOptions{MaxConns: 2})
	a, b := wireDial(t, addr), wireDial(t, addr)
	a.version(t, fuzzMsize)
	b.version(t, fuzzMsize)
	c := wireDial(t, addr)
	defer c.nc.Close()
	waitPeerClosed(t, c.nc)
	a.attach(t, 1)
	b.nc.Close()
	var d *wireConn
	for range 100 { // the server notices b's end a moment later
		d = wireDial(t, addr)
		d.nc.SetReadDeadline(time.Now().Add(fuzzHangBound))
		// Refused, the connection may be closed before the write too.
		_, err := d.nc.Write(appendFrame(nil, NoTag, &Tversion{Msize: fuzzMsize, Version: Version}))
		if err == nil {
			if _, _, err = d.recv(); err == nil {
				break
			}
		}
		d.nc.Close()
		time.Sleep(10 * time.Millisecond)
	}
	d.attach(t, 1)
	d.nc.Close()
	a.nc.Close()
}

// A client that stops half-way through a large frame loses the
// connection once the frame's time is up, and what it sent is let go.
func TestStalledFrameDropped(t *testing.T) {
	old := frameTime
	frameTime = 200 * time.Millisecond
	defer func() { frameTime = old }()
	_, addr := serve(t, newDisk(t))
	a := wireDial(t, addr)
	defer a.nc.Close()
	a.version(t, 1<<20)
	a.attach(t, 1)
	frame := appendFrame(nil, 7, &Twrite{Fid: 1, Data: make([]byte, 100<<10)})
	if _, err := a.nc.Write(frame[:len(frame)-1]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitPeerClosed(t, a.nc) // at 1.2 s; fuzzHangBound is longer
	if waited := time.Since(start); waited < frameTime {
		t.Errorf("connection closed after %v, before the frame's time was up: for another reason", waited)
	}
	// Two bytes of a size field, then nothing.
	b := wireDial(t, addr)
	defer b.nc.Close()
	b.version(t, 1<<20)
	if _, err := b.nc.Write([]byte{0x20, 0x00}); err != nil {
		t.Fatal(err)
	}
	waitPeerClosed(t, b.nc)
	checkFreshConn(t, addr)
}
