package devfs

import (
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/internal/bounds"
)

// The default share of the log each writer of /dev/log gets: a quarter
// of a mebibyte at once after a quiet time, 32 KiB a second on average.
// Hundreds of lines a second, far beyond what a program says about
// itself, while one user's loop grows the log by at most 2 MiB a minute.
const (
	DefaultRate  = 32 << 10
	DefaultBurst = 256 << 10
)

// The default share of the whole daemon: what all writers of /dev/log
// together may add to the log, whatever the number of writers (users,
// and the uids 9P peers claim), so that the log grows by at most 15 MiB
// a minute.
const (
	DefaultTotalRate  = 256 << 10
	DefaultTotalBurst = 2 << 20
)

// lineCost is what a line costs its writer beyond its own bytes: what
// the log adds to each record (time, level, message, uid: some 75
// bytes), so that a flood of empty lines is limited too.
const lineCost = 80

// maxWriters bounds the writers tracked at once; past it, writers whose
// allowance is whole again are forgotten (a fresh one is the same), and
// if that is not enough the newcomers share one allowance.
const maxWriters = 4096

// Writer uids that are no uid: one the edge did not name, and the shared
// allowance of writers past maxWriters.
const (
	unknownWriter  = -1
	overflowWriter = -2
)

// writer is whose allowance a line takes: a uid, as the edge it came by
// names it (peer, vfs.PeerFrom: 0 for the kernel's callers through FUSE,
// whose uids the kernel vouches for). A 9P peer may attach as any uid, so
// its writers are told apart by connection too.
type writer struct {
	peer uint64
	uid  int64
}

// LogStats counts what /dev/log was given: the lines kept, and those
// dropped because their writer was over its rate, with their bytes.
type LogStats struct {
	Lines, Bytes               int64
	DroppedLines, DroppedBytes int64
}

// limiter gives each writer of /dev/log (opening the file again gets no
// more) an allowance of bytes that refills at rate up to burst, a token
// bucket, and all of them together one more (total). A line over either
// allowance is dropped, never waited for: the writer's write succeeds, as
// with syslog.
type limiter struct {
	rate, burst float64
	clock       func() time.Time
	warn        *bounds.RateLog

	mu      sync.Mutex
	buckets map[writer]*bucket
	total   bucket
	// totalRate and totalBurst are the whole daemon's allowance.
	totalRate, totalBurst float64
	swept                 time.Time // when forgetWhole last ran
	stats                 LogStats
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
	if o.TotalRate <= 0 {
		o.TotalRate = DefaultTotalRate
	}
	if o.TotalBurst <= 0 {
		o.TotalBurst = DefaultTotalBurst
	}
	l := &limiter{rate: float64(o.Rate), burst: float64(max(o.Burst, maxLogLine+lineCost)),
		totalRate: float64(o.TotalRate), totalBurst: float64(max(o.TotalBurst, maxLogLine+lineCost)),
		clock: o.Clock, warn: bounds.NewRateLog(o.Log, 10*time.Second), buckets: map[writer]*bucket{}}
	l.total = bucket{tokens: l.totalBurst, at: o.Clock()}
	return l
}

// allow takes a line of n bytes from writer's allowance and reports
// whether it may be logged, counting it either way.
func (l *limiter) allow(w writer, n int) bool {
	cost := float64(n + lineCost)
	l.mu.Lock()
	now := l.clock()
	b := l.bucket(w, now)
	l.total.refill(now, l.totalRate, l.totalBurst)
	ok := b.tokens >= cost && l.total.tokens >= cost
	if ok {
		b.tokens -= cost
		l.total.tokens -= cost
		l.stats.Lines++
		l.stats.Bytes += int64(n)
	} else {
		l.stats.DroppedLines++
		l.stats.DroppedBytes += int64(n)
	}
	l.mu.Unlock()
	if !ok {
		l.warn.Warn("dev/log", "dev/log: a writer, or all of them, is over its rate; lines are dropped",
			"uid", w.uid, "peer", w.peer, "rate", int(l.rate), "burst", int(l.burst), "total rate", int(l.totalRate))
	}
	return ok
}

// bucket returns w's allowance, refilled for the time since it was last
// used. The caller holds l.mu.
func (l *limiter) bucket(w writer, now time.Time) *bucket {
	b := l.buckets[w]
	if b == nil {
		if len(l.buckets) >= maxWriters && now.Sub(l.swept) >= time.Second {
			l.forgetWhole(now)
		}
		if len(l.buckets) >= maxWriters {
			w = writer{uid: overflowWriter}
			b = l.buckets[w]
		}
	}
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[w] = b
	}
	b.refill(now, l.rate, l.burst)
	return b
}

// refill adds to b what rate gives back since it was last used, up to
// burst.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
		b.at = now
	}
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
