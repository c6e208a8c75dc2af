package devfs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

func open(t *testing.T, dev vfs.Node, name string, flags int, ctx context.Context) vfs.Handle {
	t.Helper()
	n, err := dev.Lookup(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(ctx, flags)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return h
}

func TestLogLines(t *testing.T) {
	var out bytes.Buffer
	dev := New(Options{Log: slog.New(slog.NewTextHandler(&out, nil))}).Root()
	ctx := vfs.WithCaller(context.Background(), vfs.Caller{Uid: 1000, Gid: 1000})
	h := open(t, dev, "log", os.O_WRONLY, ctx)
	h.WriteAt(ctx, []byte("first line\nsecond "), 0)
	h.WriteAt(ctx, []byte("line\nno newline"), 0)
	if strings.Contains(out.String(), "no newline") {
		t.Errorf("a partial line was logged before its newline or close")
	}
	h.Close()
	h.WriteAt(ctx, []byte(strings.Repeat("x", maxLogLine+10)+"\n"), 0)
	got := out.String()
	for _, want := range []string{`uid=1000 line="first line"`, `line="second line"`, `line="no newline"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if _, err := open(t, dev, "log", os.O_WRONLY, ctx).ReadAt(ctx, make([]byte, 1), 0); err == nil {
		t.Errorf("/dev/log read: no error")
	}
	n, _ := dev.Lookup(ctx, "log")
	if _, err := n.Open(ctx, os.O_RDONLY); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("open /dev/log for reading: %v, want EACCES", err)
	}
}

// Each writer (uid) of /dev/log gets its burst, then its rate: lines past
// it are dropped, the writes still succeed, opening the file again gets
// no more, other writers are not touched, and time gives it back.
func TestLogRateLimit(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1e9, 0)
	const rate, burst = 1000, 10000
	dev := New(Options{Log: slog.New(slog.NewTextHandler(&out, nil)), Rate: rate, Burst: burst,
		Clock: func() time.Time { return now }})
	line := strings.Repeat("a", 1000-lineCost-1) + "\n" // costs 999 with its overhead
	as := func(uid uint32) context.Context {
		return vfs.WithCaller(context.Background(), vfs.Caller{Uid: uid, Gid: uid})
	}
	write := func(ctx context.Context, lines int) {
		t.Helper()
		for range lines {
			// A fresh open each time: the limit is the writer's, not the
			// handle's.
			h := open(t, dev.Root(), "log", os.O_WRONLY, ctx)
			if n, err := h.WriteAt(ctx, []byte(line), 0); n != len(line) || err != nil {
				t.Fatalf("write to /dev/log: %d, %v; want the whole line taken", n, err)
			}
			h.Close()
		}
	}
	kept := func(uid int) int { return strings.Count(out.String(), fmt.Sprintf("uid=%d line=", uid)) }

	write(as(1000), 100)
	write(as(1001), 3)
	if got, want := kept(1000), burst/999; got != want {
		t.Errorf("a flood of 100 lines at once: %d kept, want the burst's %d", got, want)
	}
	if got := kept(1001); got != 3 {
		t.Errorf("another writer's 3 lines during the flood: %d kept", got)
	}
	if !strings.Contains(out.String(), "over its rate") {
		t.Errorf("no warning that lines were dropped:\n%s", out.String())
	}
	now = now.Add(2 * time.Second) // 2000 bytes: two more lines
	write(as(1000), 5)
	if got, want := kept(1000), burst/999+2; got != want {
		t.Errorf("after 2 s: %d kept in all, want %d", got, want)
	}
	st := dev.LogStats()
	want := LogStats{Lines: 10 + 3 + 2, DroppedLines: 100 - 10 + 5 - 2}
	want.Bytes, want.DroppedBytes = want.Lines*int64(len(line)-1), want.DroppedLines*int64(len(line)-1)
	if st != want {
		t.Errorf("LogStats: %+v, want %+v", st, want)
	}
}

// Past maxWriters at once, writers whose allowance is whole are forgotten
// and the rest share one: many uids (a peer naming any it likes) cannot
// grow the daemon's memory without bound nor get past the rate.
func TestLogRateManyWriters(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := newLimiter(Options{Log: slog.New(slog.DiscardHandler), Rate: 1, Burst: 1,
		Clock: func() time.Time { return now }})
	for uid := range int64(3 * maxWriters) {
		l.allow(writer{uid: uid}, 10)
	}
	if got := len(l.buckets); got > maxWriters+1 {
		t.Errorf("writers tracked: %d, want at most %d", got, maxWriters+1)
	}
	// The first maxWriters each had their burst; the rest shared one.
	if got, most := l.counts().Lines, int64(maxWriters+l.burst/(10+lineCost)); got > most {
		t.Errorf("lines kept from %d writers at once: %d, want at most %d", 3*maxWriters, got, most)
	}
	now = now.Add(time.Hour) // every allowance whole again
	l.allow(writer{uid: 1 << 20}, 10)
	if got := len(l.buckets); got > 2 {
		t.Errorf("writers tracked once all were quiet: %d, want the newcomer's (and the shared one)", got)
	}
}

// A 9P peer names any uid it likes: its writers are told apart by
// connection and uid, so the same uid on another connection (another
// peer, or the kernel's FUSE callers) keeps its own share, and whatever
// the number of writers, all of them together get no more than the
// daemon's total.
func TestLogRatePeersAndTotal(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1e9, 0)
	const rate, burst, total = 1000, 10000, 50000
	dev := New(Options{Log: slog.New(slog.NewTextHandler(&out, nil)), Rate: rate, Burst: burst,
		TotalRate: rate, TotalBurst: total, Clock: func() time.Time { return now }})
	line := strings.Repeat("a", 1000-lineCost-1) + "\n" // costs 999 with its overhead
	as := func(peer uint64, uid uint32) context.Context {
		ctx := vfs.WithCaller(context.Background(), vfs.Caller{Uid: uid, Gid: uid})
		if peer != 0 {
			ctx = vfs.WithPeer(ctx, peer)
		}
		return ctx
	}
	write := func(ctx context.Context, lines int) {
		t.Helper()
		h := open(t, dev.Root(), "log", os.O_WRONLY, ctx)
		defer h.Close()
		for range lines {
			if n, err := h.WriteAt(ctx, []byte(line), 0); n != len(line) || err != nil {
				t.Fatalf("write to /dev/log: %d, %v; want the whole line taken", n, err)
			}
		}
	}
	write(as(7, 1000), 20)
	write(as(8, 1000), 3)
	write(as(0, 1000), 3)
	if got := dev.LogStats().Lines; got != burst/999+3+3 {
		t.Errorf("uid 1000 on peer 7 (a flood), peer 8 and FUSE: %d lines kept, want %d", got, burst/999+3+3)
	}
	// One peer claims a thousand uids: the total holds.
	for uid := range uint32(1000) {
		write(as(9, uid), 10)
	}
	if got, most := dev.LogStats().Lines, int64(total/999); got > most {
		t.Errorf("lines kept from a thousand writers at once: %d, want at most the total's %d", got, most)
	}
	st := dev.LogStats()
	if st.Lines+st.DroppedLines != 20+3+3+1000*10 {
		t.Errorf("lines counted: %+v, want every line kept or dropped", st)
	}
}

// BenchmarkLogLine is what a line of /dev/log costs the daemon, its
// record formatted by slog's text handler: logged as before the limit
// (unlimited), logged under the limit (kept), and dropped over it.
func BenchmarkLogLine(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	line := []byte("a normal writer's line, 40 bytes or so..")
	b.Run("unlimited", func(b *testing.B) {
		for b.Loop() {
			log.Info("dev/log", "uid", int64(1000), "line", string(line))
		}
	})
	for _, c := range []struct {
		name string
		rate int
	}{{"kept", 1 << 40}, {"dropped", 1}} {
		b.Run(c.name, func(b *testing.B) {
			l := newLimiter(Options{Log: slog.New(slog.DiscardHandler), Rate: c.rate, Burst: 1, TotalRate: c.rate, TotalBurst: 1})
			for b.Loop() {
				if l.allow(writer{uid: 1000}, len(line)) {
					log.Info("dev/log", "uid", int64(1000), "line", string(line))
				}
			}
		})
	}
}

// null, zero, full, random and urandom are Linux's character devices, as
// a Linux root shows them, so that a recursive walk passes them by, and
// never the daemon's to open; log is a regular file, which must reach
// the daemon.
func TestDeviceNodes(t *testing.T) {
	ctx := context.Background()
	dev := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Root()
	for _, c := range []struct {
		name string
		mode uint32
		rdev uint64
	}{
		{"null", syscall.S_IFCHR | 0o666, hostDev(1, 3)},
		{"zero", syscall.S_IFCHR | 0o666, hostDev(1, 5)},
		{"full", syscall.S_IFCHR | 0o666, hostDev(1, 7)},
		{"random", syscall.S_IFCHR | 0o666, hostDev(1, 8)},
		{"urandom", syscall.S_IFCHR | 0o666, hostDev(1, 9)},
		{"log", syscall.S_IFREG | 0o222, 0},
	} {
		n, err := dev.Lookup(ctx, c.name)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := n.Attr(ctx)
		if got, want := fmt.Sprintf("%o %#x", a.Mode, a.Rdev), fmt.Sprintf("%o %#x", c.mode, c.rdev); got != want {
			t.Errorf("%s: mode and rdev %s, want %s", c.name, got, want)
		}
		if _, err := n.Open(ctx, os.O_RDONLY); a.Type() == syscall.S_IFCHR && vfs.Errno(err) != syscall.EOPNOTSUPP {
			t.Errorf("%s: the daemon's open: %v, want EOPNOTSUPP (the opener's kernel's device)", c.name, err)
		}
	}
}
