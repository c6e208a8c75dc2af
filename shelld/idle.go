package shelld

import "time"

// A session that never started holds nothing but memory and a place
// under the cap, and one made by a reader that never meant to use it (a
// recursive grep opening /proc/clone) would stay for ever. So an idle
// session expires like a finished one: the retention time (or the shorter
// limit its maker set, ExpireIdleAfter) after it was made or last changed,
// as soon as no file of it is open. Reading it does not count as a
// change: a recursive search that reads the files of every session now
// and then must not keep the idle ones alive.

// Hold marks the session as in use (a file of it is open) until the
// returned release is called: while held, an idle session does not
// expire.
func (s *Session) Hold() (release func()) {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.holds--
		s.mu.Unlock()
	}
}

// ExpireIdleAfter sets how long the session may stay idle and unheld
// from now before it expires, if that is shorter than the retention
// time; 0 gives it the retention time again.
func (s *Session) ExpireIdleAfter(d time.Duration) {
	s.mu.Lock()
	s.idleLimit, s.touched = d, s.cfg.Clock()
	s.mu.Unlock()
}

// expiredAt reports whether, at now, the session finished retention or
// more ago, or has stayed idle and unheld for its limit.
func (s *Session) expiredAt(now time.Time, retention time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.IsZero() {
		return now.Sub(s.ended) >= retention
	}
	if s.state != Idle || s.holds > 0 {
		return false
	}
	limit := retention
	if s.idleLimit > 0 && s.idleLimit < limit {
		limit = s.idleLimit
	}
	return now.Sub(s.touched) >= limit
}
