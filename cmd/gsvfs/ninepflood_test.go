//go:build linux

package main

import (
	le "encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Floods of a hostile 9P client against a real gsvfs serve, with the
// daemon's memory read from /proc/PID/status: nothing is timed, every
// flood is bounded in count and stops by itself.

// floodFrame builds a 9P frame by hand, as a client of any make would
// send it: the tests speak the wire, not gsvfs's own encoder.
func floodFrame(typ uint8, tag uint16, body ...[]byte) []byte {
	b := []byte{0, 0, 0, 0, typ, byte(tag), byte(tag >> 8)}
	for _, p := range body {
		b = append(b, p...)
	}
	le.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

func le32(v uint32) []byte { return le.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return le.LittleEndian.AppendUint64(nil, v) }
func str9(s string) []byte { return append(le.LittleEndian.AppendUint16(nil, uint16(len(s))), s...) }

// floodConn dials the daemon's socket and opens fid 2 on name, under
// /workspaces, for reading, at msize 4 MiB. It reads the replies of the
// set-up and nothing after.
func floodConn(t *testing.T, sock, name string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, f := range [][]byte{
		floodFrame(100, 0xffff, le32(4<<20), str9("9P2000.L")),
		floodFrame(104, 1, le32(1), le32(0xffffffff), str9("root"), str9(""), le32(0)),
		floodFrame(110, 2, le32(1), le32(2), []byte{2, 0}, str9("workspaces"), str9(name)),
		floodFrame(12, 3, le32(2), le32(0)),
	} {
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
		var hdr [7]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		if hdr[4] == 7 { // Rlerror
			t.Fatalf("set-up message %d refused", f[4])
		}
		if _, err := io.CopyN(io.Discard, c, int64(le.LittleEndian.Uint32(hdr[:]))-7); err != nil {
			t.Fatal(err)
		}
	}
	c.SetDeadline(time.Time{})
	return c
}

// peakMemory is the daemon's peak resident memory so far (VmHWM), bytes.
func peakMemory(t *testing.T, pid int) int64 { return statusField(t, pid, "VmHWM") << 10 }

// statusField is a number of /proc/PID/status (sizes in kB).
func statusField(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/PID/status", key)
	return 0
}

// settle waits until the daemon's memory stops growing for a while (it
// has taken what it is going to take), bounded. The sleeps are the
// sampling: "still for half a second" is a condition on time.
func settle(t *testing.T, pid int) int64 {
	last := peakMemory(t, pid)
	deadline := time.Now().Add(time.Minute)
	for still := 0; still < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's peak memory still grows after a minute: %d", last)
		}
		time.Sleep(100 * time.Millisecond)
		now := peakMemory(t, pid)
		if now == last {
			still++
		} else {
			still, last = 0, now
		}
	}
	return last
}

// A client that pipelines 300 reads of 4 MiB and never reads its socket
// made the daemon hold every reply (1.2 GB); it is bounded by the
// connection's share of the server's memory now.
func TestServeUnreadRepliesBounded(t *testing.T) {
	d, addr := startServe(t)
	if err := os.WriteFile(filepath.Join(d.Root, "workspaces", "big"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	c := floodConn(t, addr.Addr, "big")
	before := peakMemory(t, d.cmd.Process.Pid)
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	for tag := uint16(10); tag < 310; tag++ {
		if _, err := c.Write(floodFrame(116, tag, le32(2), le64(0), le32(4<<20))); err != nil {
			break // the daemon stopped reading: that is the point
		}
	}
	peak := settle(t, d.cmd.Process.Pid)
	t.Logf("daemon peak memory: %d MiB before, %d MiB with 300 unread 4 MiB replies", before>>20, peak>>20)
	if peak-before > 200<<20 {
		t.Errorf("300 unread 4 MiB replies grew the daemon by %d MiB; want it bounded (64 MiB per connection)", (peak-before)>>20)
	}
	// Another client is still served.
	_, root := attach(t, addr)
	if _, err := root.Lookup(t.Context(), "workspaces"); err != nil {
		t.Errorf("another client while one floods: %v", err)
	}
}

// 150 connections that each send a 4 MiB frame but its last byte made
// the daemon hold 600 MB; large frames wait for the server's memory now,
// and the rest stays in the senders' sockets.
func TestServeStalledFramesBounded(t *testing.T) {
	d, addr := startServe(t)
	if err := os.WriteFile(filepath.Join(d.Root, "workspaces", "w"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	before := peakMemory(t, d.cmd.Process.Pid)
	body := make([]byte, 4<<20-23)
	frame := floodFrame(118, 5, le32(2), le64(0), le32(uint32(len(body))), body)
	var wg sync.WaitGroup
	for range 150 {
		c := floodConn(t, addr.Addr, "w")
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.Write(frame[:len(frame)-1])
		}()
	}
	wg.Wait()
	peak := settle(t, d.cmd.Process.Pid)
	t.Logf("daemon peak memory: %d MiB before, %d MiB with 150 stalled 4 MiB frames", before>>20, peak>>20)
	if peak-before > 400<<20 {
		t.Errorf("150 stalled 4 MiB frames grew the daemon by %d MiB; want it bounded (256 MiB for the server)", (peak-before)>>20)
	}
	_, root := attach(t, addr)
	if _, err := root.Lookup(t.Context(), "workspaces"); err != nil {
		t.Errorf("another client during the flood: %v", err)
	}
}
