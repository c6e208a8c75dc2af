package shelld

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is what a Manager's sessions run with. Zero fields take the
// defaults of DefaultConfig.
type Config struct {
	Shell       string        // login shell ($SHELL, else /bin/sh)
	Workdir     string        // where processes start (the daemon's home)
	OutputCap   int           // output kept per session, in bytes (200,000)
	ExecTimeout time.Duration // limit of an exec (5 minutes)
	KillGrace   time.Duration // SIGTERM to SIGKILL (250 ms)
	Retention   time.Duration // how long finished sessions stay (30 minutes)
	// Idle is how long a session that never started stays unheld after
	// it was made or last changed (30 minutes, idle.go). It is not the
	// Retention: that one says how long a finished session's output is
	// worth keeping, and set short it would take fresh sessions away
	// before their makers, slow under load, first open them.
	Idle    time.Duration
	MaxLive int // sessions running at once (256)
	// Umask is the file creation mask sessions start with; nil means
	// 022. The daemon itself runs with umask 0 (it applies its clients'
	// modes as they come), so a session must never simply inherit it.
	Umask *int
	// Env is the allow-list: the names of the daemon's environment
	// variables a session inherits. Nothing else of the daemon's
	// environment reaches a session.
	Env []string
	// Shells is the list of the shells a session may choose (`shell
	// PATH`), /etc/shells by default.
	Shells string
	// Namespace is asked at each start how the session's process sees
	// the tree's paths (nil: the host's only).
	Namespace func() Namespace
	Clock     func() time.Time
}

// DefaultUmask is the sessions' umask when Config.Umask is nil.
const DefaultUmask = 0o022

// DefaultEnv is the default allow-list.
var DefaultEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE",
	"LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM", "TMPDIR"}

// DefaultConfig returns the defaults a zero Config takes.
func DefaultConfig() Config {
	var c Config
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.Shell == "" {
		c.Shell = os.Getenv("SHELL")
	}
	if c.Shell == "" {
		c.Shell = "/bin/sh"
	}
	if c.Workdir == "" {
		c.Workdir, _ = os.UserHomeDir()
	}
	if c.OutputCap <= 0 {
		c.OutputCap = 200_000
	}
	if c.ExecTimeout == 0 {
		c.ExecTimeout = 5 * time.Minute
	}
	if c.KillGrace == 0 {
		c.KillGrace = 250 * time.Millisecond
	}
	if c.Retention == 0 {
		c.Retention = 30 * time.Minute
	}
	if c.Idle == 0 {
		c.Idle = 30 * time.Minute
	}
	if c.MaxLive <= 0 {
		c.MaxLive = 256
	}
	if c.Umask == nil {
		u := DefaultUmask
		c.Umask = &u
	}
	if c.Env == nil {
		c.Env = DefaultEnv
	}
	if c.Shells == "" {
		c.Shells = "/etc/shells"
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// environ is the allowed part of the daemon's environment, with TERM set
// for the terminal the session gets and SHELL to the shell it runs.
func (c *Config) environ(shell string) []string {
	env := []string{"TERM=xterm-256color", "SHELL=" + shell}
	for _, name := range c.Env {
		if v, ok := os.LookupEnv(name); ok && name != "TERM" && name != "SHELL" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Errors of Manager calls.
var (
	ErrExists  = errors.New("shelld: a session of that name exists")
	ErrTooMany = errors.New("shelld: too many live sessions")
	ErrNoName  = errors.New("shelld: no such session")
)

// Manager owns the sessions: names, the cap on live ones, and forgetting
// finished ones after the retention time and unused ones after the idle
// time.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*Session
	next     int
	created  int // sessions ever made
}

// NewManager returns a manager running sessions with cfg.
func NewManager(cfg Config) *Manager {
	cfg.fill()
	return &Manager{cfg: cfg, sessions: map[string]*Session{}}
}

// Create makes an idle session called name, or with a fresh numeric name
// when name is empty. It fails with ErrTooMany when MaxLive sessions are
// not yet finished.
func (m *Manager) Create(name string) (*Session, error) {
	m.Reap() // an expired session neither counts nor holds its name
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.liveLocked() >= m.cfg.MaxLive {
		return nil, fmt.Errorf("%w: %d of %d", ErrTooMany, m.liveLocked(), m.cfg.MaxLive)
	}
	if name == "" {
		for name == "" || m.sessions[name] != nil {
			m.next++
			name = fmt.Sprint(m.next)
		}
	}
	if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("shelld: bad session name %q", name)
	}
	if m.sessions[name] != nil {
		return nil, ErrExists
	}
	cfg := m.cfg // the session's own: a later Configure changes new ones
	s := newSession(name, &cfg)
	m.sessions[name] = s
	m.created++
	return s, nil
}

// Config returns the configuration new sessions get.
func (m *Manager) Config() Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// Configure changes the configuration: sessions made from now on get
// the new one, running ones keep theirs; the retention and idle times
// and the cap on live sessions apply to all at once.
func (m *Manager) Configure(change func(*Config)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	change(&m.cfg)
	m.cfg.fill()
}

// Counts reports how many sessions are not yet finished and how many
// were ever made.
func (m *Manager) Counts() (live, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveLocked(), m.created
}

func (m *Manager) liveLocked() int {
	n := 0
	for _, s := range m.sessions {
		if done, _ := s.finished(); !done {
			n++
		}
	}
	return n
}

// Live reports how many sessions are not yet finished (idle or running)
// and how many may be.
func (m *Manager) Live() (live, limit int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveLocked(), m.cfg.MaxLive
}

// Get returns the session called name.
// A session past its retention time is not found, and is forgotten.
func (m *Manager) Get(name string) (*Session, bool) {
	m.mu.Lock()
	s, ok := m.sessions[name]
	if ok && m.expired(s, m.cfg.Clock()) {
		delete(m.sessions, name)
		m.mu.Unlock()
		s.end()
		return nil, false
	}
	m.mu.Unlock()
	return s, ok
}

// expired reports whether s finished the retention time or more before
// now, or has stayed idle and unheld for the idle time (idle.go).
func (m *Manager) expired(s *Session, now time.Time) bool {
	return s.expiredAt(now, m.cfg.Retention, m.cfg.Idle)
}

// Names lists the sessions in name order, forgetting those past their
// retention time first.
func (m *Manager) Names() []string {
	m.Reap()
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.sessions))
	for name := range m.sessions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Remove kills the session's whole process group, waits until it is
// gone, and forgets the session.
func (m *Manager) Remove(name string) error {
	m.mu.Lock()
	s, ok := m.sessions[name]
	delete(m.sessions, name)
	m.mu.Unlock()
	if !ok {
		return ErrNoName
	}
	s.end()
	return nil
}

// Reap forgets the sessions that finished the retention time or more
// ago, on the configured clock, and returns their names. Get, Names and
// Create reap as they go, so an expired session is never seen; calling
// Reap now and then lets the memory of those nobody asks for go.
func (m *Manager) Reap() []string {
	m.mu.Lock()
	now := m.cfg.Clock()
	var gone []*Session
	for name, s := range m.sessions {
		if m.expired(s, now) {
			delete(m.sessions, name)
			gone = append(gone, s)
		}
	}
	m.mu.Unlock()
	names := make([]string, len(gone))
	for i, s := range gone {
		s.end() // what it left in its terminal session goes with it
		names[i] = s.id
	}
	slices.Sort(names)
	return names
}

// Close kills every session.
func (m *Manager) Close() {
	for _, name := range m.Names() {
		m.Remove(name)
	}
}
