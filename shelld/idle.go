package shelld

import "time"

// A session that never started holds nothing but memory and a place
// under the cap, and one made by a reader that never meant to use it (a
// recursive grep opening /proc/clone) would stay for ever. So an idle
// session expires: the idle time (Config.Idle, or the shorter limit its
// maker set, ExpireIdleAfter) after it was made or last changed, as soon
// as no file of it is open. Reading it does not count as a change: a
// recursive search that reads the files of every session now and then
// must not keep the idle ones alive.
//
// The idle time is not the retention time of finished sessions: a short
// retention (finished output soon forgotten) must not take a session
// away between its mkdir and its maker's first open, which on a loaded
// machine may take seconds (TestIdleOutlivesRetention).

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
// from now before it expires, if that is shorter than the idle time; 0
// gives it the idle time again.
func (s *Session) ExpireIdleAfter(d time.Duration) {
	s.mu.Lock()
	s.idleLimit, s.touched = d, s.cfg.Clock()
	s.mu.Unlock()
}

// expiredAt reports whether, at now, the session finished retention or
// more ago, or has stayed idle and unheld for its limit: idle, or the
// shorter one ExpireIdleAfter set.
func (s *Session) expiredAt(now time.Time, retention, idle time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.IsZero() {
		return now.Sub(s.ended) >= retention
	}
	if s.state != Idle || s.holds > 0 {
		return false
	}
	limit := idle
	if s.idleLimit > 0 && s.idleLimit < limit {
		limit = s.idleLimit
	}
	return now.Sub(s.touched) >= limit
}
