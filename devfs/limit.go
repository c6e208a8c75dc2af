package devfs

import (
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// The default share of the log each writer of /dev/log gets: a quarter
// of a mebibyte at once after a quiet time, 32 KiB a second on average.
// Hundreds of lines a second, far beyond what a program says about
// itself, while one user's loop grows the log by at most 2 MiB a minute.
const (
	DefaultRate  = 32 << 10
	DefaultBurst = 256 << 10
)

// lineCost is what a line costs its writer beyond its own bytes: what
// the log adds to each record (time, level, message, uid: some 75
// bytes), so that a flood of empty lines is limited too.
const lineCost = 80

// maxWriters bounds the writers tracked at once; past it, writers whose
// allowance is whole again are forgotten (a fresh one is the same), and
// if that is not enough the newcomers share one allowance.
const maxWriters = 4096

// Writer ids that are no uid: one the edge did not name, and the shared
// allowance of writers past maxWriters.
const (
	unknownWriter  = -1
	overflowWriter = -2
)

// LogStats counts what /dev/log was given: the lines kept, and those
// dropped because their writer was over its rate, with their bytes.
type LogStats struct {
	Lines, Bytes               int64
	DroppedLines, DroppedBytes int64
}

// limiter gives each writer of /dev/log (a uid: opening the file again
// gets no more) an allowance of bytes that refills at rate up to burst,
// a token bucket. A line over the allowance is dropped, never waited
// for: the writer's write succeeds, as with syslog.
type limiter struct {
	rate, burst float64
	clock       func() time.Time
	warn        *vfs.RateLog

	mu      sync.Mutex
	buckets map[int64]*bucket
	swept   time.Time // when forgetWhole last ran
	stats   LogStats
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(o Options) *limiter {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return &limiter{rate: float64(o.Rate), burst: float64(max(o.Burst, maxLogLine+lineCost)),
		clock: o.Clock, warn: vfs.NewRateLog(o.Log, 10*time.Second), buckets: map[int64]*bucket{}}
}

// allow takes a line of n bytes from writer's allowance and reports
// whether it may be logged, counting it either way.
func (l *limiter) allow(writer int64, n int) bool {
	cost := float64(n + lineCost)
	l.mu.Lock()
	b := l.bucket(writer)
	ok := b.tokens >= cost
	if ok {
		b.tokens -= cost
		l.stats.Lines++
		l.stats.Bytes += int64(n)
	} else {
		l.stats.DroppedLines++
		l.stats.DroppedBytes += int64(n)
	}
	l.mu.Unlock()
	if !ok {
		l.warn.Warn("dev/log", "dev/log: a writer is over its rate; its lines are dropped",
			"uid", writer, "rate", int(l.rate), "burst", int(l.burst))
	}
	return ok
}

// bucket returns writer's allowance, refilled for the time since it was
// last used. The caller holds l.mu.
func (l *limiter) bucket(writer int64) *bucket {
	now := l.clock()
	b := l.buckets[writer]
	if b == nil {
		if len(l.buckets) >= maxWriters && now.Sub(l.swept) >= time.Second {
			l.forgetWhole(now)
		}
		if len(l.buckets) >= maxWriters {
			writer = overflowWriter
			b = l.buckets[writer]
		}
	}
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[writer] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
	return b
}

// forgetWhole drops the writers whose allowance has refilled entirely,
// at most once a second: a stream of new writers costs no scan each.
func (l *limiter) forgetWhole(now time.Time) {
	l.swept = now
	for w, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, w)
		}
	}
}

func (l *limiter) counts() LogStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}
