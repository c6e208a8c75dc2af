package relink

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"
)

// A peer that cannot be reached is tried again about every second for as
// long as it stays away, so that a link comes back soon after a long cut;
// a peer that answers and fails is backed off from, up to 30 s.
func TestBackoffAfterLongCut(t *testing.T) {
	unreached := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ETIMEDOUT}
	answered := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	var b Backoff
	for i := range 100 { // far longer than the exponential schedule's cap
		level := b.Failed(unreached)
		if want := slog.LevelDebug; i > 0 && level != want {
			t.Fatalf("try %d that reached nothing: logged at %v, want %v after the first", i, level, want)
		}
		if d := b.next(); d > time.Second {
			t.Fatalf("wait after try %d that reached nothing: up to %v, want about a second", i, d)
		}
	}
	if level := b.Failed(answered); level != slog.LevelWarn {
		t.Errorf("a peer that answered and failed: logged at %v, want a warning", level)
	}
	var last time.Duration
	for range 20 {
		b.Failed(answered)
		last = b.next()
	}
	if last != mostDelay {
		t.Errorf("wait after a peer kept failing: %v, want %v", last, mostDelay)
	}
	if level := b.Failed(unreached); level != slog.LevelWarn {
		t.Errorf("the first try that reached nothing after others: logged at %v, want a warning", level)
	}
	b.Reset()
	if d := b.next(); d != firstDelay {
		t.Errorf("wait after a reset: %v, want %v", d, firstDelay)
	}
	if Unreached(errors.New("refused for now")) || Unreached(answered) || !Unreached(unreached) {
		t.Errorf("Unreached tells a dial that made no connection from the rest")
	}
}
