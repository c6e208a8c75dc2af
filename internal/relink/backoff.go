package relink

import (
	"context"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"time"
)

// Backoff paces the dials that make a lost link again. A peer that
// answered and failed (a refusal for now, a broken handshake, a link
// that ended) is dialled again after a wait that doubles from half a
// second to 30 s, so a struggling peer is not hammered. A peer that was
// not reached at all (no connection made: a cut network, nothing
// listening) is tried again after about a second, every time: such a try
// costs the peer nothing, and it brings the link back within a second or
// two of the peer becoming reachable, however long it was away. Every
// wait has jitter, so that many dialers do not come back at once.
// The zero value is ready to use.
type Backoff struct {
	delay     time.Duration
	unreached bool // the last try reached nothing
}

const (
	firstDelay, mostDelay = 500 * time.Millisecond, 30 * time.Second
	// unreachedDelay is the wait after a try that reached nothing.
	unreachedDelay = time.Second
)

// ConnectTimeout bounds the connection a dial makes (a TCP connect) as
// opposed to what it then says on it: during a cut a connect hangs until
// this, and the next one starts a second later, so the link is made
// again soon after the cut ends rather than at a retransmission of a
// connect begun long before.
const ConnectTimeout = 3 * time.Second

// Reset starts over after a link was made.
func (b *Backoff) Reset() { *b = Backoff{} }

// Failed records why a dial failed, and says at which level to log it:
// a warning, but for the tries after the first of a run that reach
// nothing (one a second while the peer is away), which are debug lines.
func (b *Backoff) Failed(err error) slog.Level {
	was := b.unreached
	b.unreached = Unreached(err)
	if was && b.unreached {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// Wait sleeps before the next dial, or until ctx ends.
func (b *Backoff) Wait(ctx context.Context) {
	d := b.next()
	select {
	case <-time.After(d/2 + mrand.N(d/2+1)):
	case <-ctx.Done():
	}
}

// next is the most the next wait may be (it is jittered down to half).
func (b *Backoff) next() time.Duration {
	if b.unreached {
		return unreachedDelay
	}
	b.delay = min(max(2*b.delay, firstDelay), mostDelay)
	return b.delay
}

// Unreached reports whether err is a dial that made no connection.
func Unreached(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
