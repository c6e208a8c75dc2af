package shelld

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

// The log keeps the tail within its cap, with absolute offsets: what was
// dropped reads as gone, what is kept reads at its own offset.
func TestLogCap(t *testing.T) {
	l := NewLog(10, fixedClock())
	for _, w := range []string{"abcdef", "ghijkl", "mnop"} {
		l.Write([]byte(w))
	}
	start, end, _, closed := l.Stat()
	if start != 6 || end != 16 || closed {
		t.Fatalf("Stat: start %d end %d closed %v, want 6 16 false", start, end, closed)
	}
	if _, err := l.ReadAt(make([]byte, 4), 5); !errors.Is(err, ErrGone) {
		t.Errorf("ReadAt below start: got %v, want ErrGone", err)
	}
	for _, tc := range []struct {
		off  int64
		want string
	}{{6, "ghijklmnop"}, {12, "mnop"}, {16, ""}, {40, ""}} {
		buf := make([]byte, 32)
		n, err := l.ReadAt(buf, tc.off)
		if err != nil || string(buf[:n]) != tc.want {
			t.Errorf("ReadAt(%d): %q, %v; want %q", tc.off, buf[:n], err, tc.want)
		}
	}
	if got := string(l.Tail(3)); got != "nop" {
		t.Errorf("Tail(3): %q", got)
	}
}

// Many writes keep memory near the cap and the kept bytes exact.
func TestLogLongStream(t *testing.T) {
	l := NewLog(1000, fixedClock())
	var all strings.Builder
	for i := range 20000 {
		w := strings.Repeat(string(rune('a'+i%26)), i%37+1)
		all.WriteString(w)
		l.Write([]byte(w))
	}
	start, end, _, _ := l.Stat()
	if end != int64(all.Len()) || end-start != 1000 {
		t.Fatalf("start %d end %d, want end %d and 1000 kept", start, end, all.Len())
	}
	buf := make([]byte, 1000)
	n, _ := l.ReadAt(buf, start)
	if string(buf[:n]) != all.String()[start:] {
		t.Error("the kept tail differs from the last 1000 bytes written")
	}
	if c := cap(l.buf); c > 4*1000 {
		t.Errorf("buffer capacity %d for a cap of 1000", c)
	}
}

// Follow waits for output past an offset, returns at once when there is
// some, reports the end after Close, and gives up with its context.
func TestLogFollow(t *testing.T) {
	l := NewLog(100, fixedClock())
	got := make(chan bool, 1)
	go func() { more, _ := l.Follow(context.Background(), 0); got <- more }()
	select {
	case <-got:
		t.Fatal("Follow returned with nothing written")
	case <-time.After(20 * time.Millisecond):
	}
	l.Write([]byte("x"))
	if more := <-got; !more {
		t.Error("Follow after a write: no more")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Follow(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Follow with an ended context: %v", err)
	}
	l.Close()
	if more, err := l.Follow(context.Background(), 1); more || err != nil {
		t.Errorf("Follow at the end after Close: %v, %v; want false, nil", more, err)
	}
	if more, _ := l.Follow(context.Background(), 0); !more {
		t.Error("Follow below the end after Close: want more")
	}
}

// A line log drops its head in whole lines, at least MarkerRoom bytes at
// a time; its marked view and TailText say what went in a first line.
func TestLineLog(t *testing.T) {
	l := NewLineLog(100, fixedClock())
	var all strings.Builder
	for i := range 40 {
		line := strings.Repeat(string(rune('a'+i%26)), i%9) + "\n"
		all.WriteString(line)
		l.Write([]byte(line))
	}
	start, end, _, _ := l.Stat()
	if end != int64(all.Len()) || end-start > 100 || all.String()[start-1] != '\n' {
		t.Fatalf("start %d end %d: want every byte counted, at most 100 kept, from a line's start", start, end)
	}
	mark := TruncationMarker(start)
	want := mark + all.String()[start:]
	m := l.Marked()
	from, mend, _, _ := m.Stat()
	if from != start-int64(len(mark)) || mend != end {
		t.Errorf("marked Stat: %d %d, want %d %d", from, mend, start-int64(len(mark)), end)
	}
	buf := make([]byte, 1000)
	if n, err := m.ReadAt(buf, from); string(buf[:n]) != want || err != nil {
		t.Errorf("marked read: %q (%v), want %q", buf[:n], err, want)
	}
	if n, _ := m.ReadAt(buf[:5], from+3); string(buf[:n]) != want[3:8] {
		t.Errorf("marked read inside the marker: %q, want %q", buf[:n], want[3:8])
	}
	if _, err := m.ReadAt(buf, from-1); !errors.Is(err, ErrGone) {
		t.Errorf("marked read below the marker: %v, want ErrGone", err)
	}
	tail := string(l.TailText(20))
	first, rest, _ := strings.Cut(tail, "\n")
	var n int
	fmt.Sscanf(first, "[gsvfs: %d bytes truncated]", &n)
	if n+len(rest) != all.Len() || all.String()[n-1] != '\n' || len(rest) > 20 || first+"\n" != TruncationMarker(int64(n)) {
		t.Errorf("TailText(20): %q, want a marker and whole lines of the last 20 bytes", tail)
	}
	if got := string(NewLineLog(100, fixedClock()).TailText(20)); got != "" {
		t.Errorf("TailText of an empty log: %q", got)
	}
}
