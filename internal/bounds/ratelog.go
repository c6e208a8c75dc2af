package bounds

import (
	"log/slog"
	"sync"
	"time"
)

// RateLog writes each kind of warning at most once per interval, with the
// number of the same kind it held back since: a client that sends one bad
// frame after another, a user at a limit, or a listener out of
// descriptors, must not flood the log.
type RateLog struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	kinds map[string]*rateKind
}

type rateKind struct {
	last time.Time
	held int
}

// NewRateLog writes to log at most once per kind per every.
func NewRateLog(log *slog.Logger, every time.Duration) *RateLog {
	return &RateLog{log: log, every: every, kinds: map[string]*rateKind{}}
}

// Warn logs msg with args unless a warning of kind went out less than an
// interval ago.
func (r *RateLog) Warn(kind, msg string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	k := r.kinds[kind]
	if k == nil {
		k = &rateKind{}
		r.kinds[kind] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < r.every {
		k.held++
		r.mu.Unlock()
		return
	}
	held := k.held
	k.last, k.held = now, 0
	r.mu.Unlock()
	if held > 0 {
		args = append(args, "suppressed", held)
	}
	r.log.Warn(msg, args...)
}
