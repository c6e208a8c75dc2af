package shelld

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// States of a session, as status reports them.
const (
	Idle      = "idle"      // made, no process yet
	Running   = "running"   // the process runs
	Completed = "completed" // it exited with status 0
	Failed    = "failed"    // it exited non-zero, or could not start
	Killed    = "killed"    // a signal ended it (kill, timeout, signal verb)
)

// Errors of session calls; callers map them to errno (EPIPE, EBUSY).
var (
	ErrExited  = errors.New("shelld: the session's process has exited")
	ErrStarted = errors.New("shelld: the session already runs a process")
	ErrNotRun  = errors.New("shelld: the session runs no process")
)

// Status is a snapshot of a session, the fields /proc/<id>/status shows.
type Status struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	Pid        int       `json:"pid,omitempty"`
	Command    string    `json:"command"`
	Workdir    string    `json:"workdir"`
	ExitCode   *int      `json:"exitCode"`
	Signal     string    `json:"signal,omitempty"`
	TimedOut   bool      `json:"timedOut"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	EndedAt    time.Time `json:"endedAt,omitzero"`
	DurationMs int64     `json:"durationMs"`
	Output     int64     `json:"outputBytes"`
	Truncated  bool      `json:"truncated"`
	LastError  string    `json:"lastError,omitempty"`
}

// Session is one process the daemon runs under a pseudo-terminal: an
// interactive login shell, or one command. Its output is drained into a
// Log whether or not anybody reads it. It knows nothing of files.
type Session struct {
	id  string
	cfg *Config
	out *Log

	mu       sync.Mutex
	state    string
	command  string
	workdir  string
	env      []string // additions from `env K=V`, applied at start
	timeout  time.Duration
	cmd      *exec.Cmd
	tty      *os.File
	started  time.Time
	ended    time.Time
	exitCode *int
	signal   string
	timedOut bool
	lastErr  string
	done     chan struct{} // closed when the process has exited and its output is drained
}

func newSession(id string, cfg *Config) *Session {
	return &Session{id: id, cfg: cfg, out: NewLog(cfg.OutputCap, cfg.Clock),
		state: Idle, workdir: cfg.Workdir, done: make(chan struct{})}
}

// ID is the session's name.
func (s *Session) ID() string { return s.id }

// Output is the session's output log.
func (s *Session) Output() *Log { return s.out }

// Done is closed once the process has exited and its output is drained.
func (s *Session) Done() <-chan struct{} { return s.done }

// StartShell runs the interactive login shell.
func (s *Session) StartShell() error {
	return s.start(s.cfg.Shell, []string{"-l"}, s.cfg.Shell+" -l", 0)
}

// Exec runs one command with `$SHELL -lc`, under the exec timeout unless
// SetTimeout chose another.
func (s *Session) Exec(command string) error {
	s.mu.Lock()
	timeout := s.timeout
	s.mu.Unlock()
	if timeout == 0 {
		timeout = s.cfg.ExecTimeout
	}
	return s.start(s.cfg.Shell, []string{"-lc", command}, command, timeout)
}

func (s *Session) start(path string, args []string, command string, timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Idle {
		return s.failLocked(ErrStarted)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = s.workdir
	cmd.Env = append(s.cfg.environ(), s.env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		s.state = Failed
		s.out.Close()
		close(s.done)
		return s.failLocked(fmt.Errorf("start %s: %w", path, err))
	}
	s.cmd, s.tty, s.command, s.state = cmd, tty, command, Running
	s.started = s.cfg.Clock()
	go s.run()
	if timeout > 0 {
		time.AfterFunc(timeout, s.expire)
	}
	return nil
}

// drainGrace is how long the end of a process waits for its last output
// to come through the terminal. A background job that keeps the terminal
// open keeps writing to the log after that, but does not keep the session
// running.
const drainGrace = 100 * time.Millisecond

// run drains the terminal into the log (always, so a process nobody reads
// never stalls on a full terminal) and records how the process ended.
func (s *Session) run() {
	drained := make(chan struct{})
	go func() {
		io.Copy(s.out, s.tty) // ends with EIO once the last writer closes
		close(drained)
	}()
	err := s.cmd.Wait()
	select {
	case <-drained:
	case <-time.After(drainGrace):
	}
	s.mu.Lock()
	s.ended = s.cfg.Clock()
	s.recordExitLocked(err)
	s.mu.Unlock()
	s.out.Close()
	close(s.done)
	<-drained
	s.tty.Close()
}

func (s *Session) recordExitLocked(err error) {
	st, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && st.Signaled():
		s.state, s.signal = Killed, signalName(st.Signal())
	case ok && st.Exited():
		code := st.ExitStatus()
		s.exitCode = &code
		s.state = Completed
		if code != 0 {
			s.state = Failed
		}
	default:
		s.state = Failed
		s.lastErr = fmt.Sprint(err)
	}
}

// expire ends a command past its timeout: SIGTERM to its process group,
// then SIGKILL after the grace time.
func (s *Session) expire() {
	s.mu.Lock()
	if s.state != Running {
		s.mu.Unlock()
		return
	}
	s.timedOut = true
	s.mu.Unlock()
	s.terminate()
}

// terminate sends SIGTERM to the process group and SIGKILL after the
// grace time if it is still there.
func (s *Session) terminate() {
	s.signalGroup(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(s.cfg.KillGrace):
		s.signalGroup(syscall.SIGKILL)
	}
}

// Kill ends the session's whole process group at once (SIGKILL) and waits
// until it is gone: the session's process, and every process still in its
// group (background jobs), so nothing it started outlives it. An idle
// session is left as it is.
func (s *Session) Kill() {
	s.mu.Lock()
	pgid := 0
	if s.cmd != nil && s.cmd.Process != nil {
		pgid = s.cmd.Process.Pid
	}
	s.mu.Unlock()
	if s.signalGroup(syscall.SIGKILL) == nil {
		<-s.done
	}
	if pgid != 0 {
		reapGroup(pgid)
	}
}

// reapGroup kills what is left of process group pgid and waits, at most a
// second, until no member is alive. Members that died but are not yet
// reaped by their new parent (zombies) do not count.
func reapGroup(pgid int) {
	deadline := time.Now().Add(time.Second)
	for syscall.Kill(-pgid, syscall.SIGKILL) == nil && liveMembers(pgid) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// liveMembers counts the processes of group pgid that are not zombies,
// from /proc.
func liveMembers(pgid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// Signal sends sig to the session's process group.
func (s *Session) Signal(sig syscall.Signal) error {
	if err := s.signalGroup(sig); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.failLocked(err)
	}
	return nil
}

func (s *Session) signalGroup(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Running {
		return ErrNotRun
	}
	// The session leader's pid is its process group (pty.Start makes it
	// a session leader), so this reaches everything it started.
	return syscall.Kill(-s.cmd.Process.Pid, sig)
}

// Write sends p to the process's terminal. After the process has exited
// it fails with ErrExited (EPIPE at the edges).
func (s *Session) Write(p []byte) (int, error) {
	s.mu.Lock()
	tty, state := s.tty, s.state
	s.mu.Unlock()
	if state != Running {
		if state == Idle {
			return 0, ErrNotRun
		}
		return 0, ErrExited
	}
	return tty.Write(p)
}

// EOF sends the terminal's end-of-file character, as Ctrl-D does.
func (s *Session) EOF() error {
	_, err := s.Write([]byte{4})
	return err
}

// Resize sets the terminal's size.
func (s *Session) Resize(rows, cols uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Running {
		return s.failLocked(ErrNotRun)
	}
	return pty.Setsize(s.tty, &pty.Winsize{Rows: rows, Cols: cols})
}

// SetTimeout sets the time limit of the next Exec (0: the default).
func (s *Session) SetTimeout(d time.Duration) {
	s.mu.Lock()
	s.timeout = d
	s.mu.Unlock()
}

// SetWorkdir sets the directory the process starts in; it must be set
// before the start.
func (s *Session) SetWorkdir(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Idle {
		return s.failLocked(ErrStarted)
	}
	s.workdir = dir
	return nil
}

// SetEnv adds K=V to the environment the process starts with.
func (s *Session) SetEnv(kv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Idle {
		return s.failLocked(ErrStarted)
	}
	s.env = append(s.env, kv)
	return nil
}

// Fail records why a request about the session failed (lastError) and
// returns err, for the edges' errors that only carry an errno.
func (s *Session) Fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failLocked(err)
}

func (s *Session) failLocked(err error) error {
	s.lastErr = err.Error()
	return err
}

// Status returns a snapshot.
func (s *Session) Status() Status {
	start, end, _, _ := s.out.Stat()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		ID: s.id, Status: s.state, Command: s.command, Workdir: s.workdir,
		ExitCode: s.exitCode, Signal: s.signal, TimedOut: s.timedOut,
		StartedAt: s.started, EndedAt: s.ended, Output: end,
		Truncated: start > 0, LastError: s.lastErr,
	}
	if s.cmd != nil && s.cmd.Process != nil {
		st.Pid = s.cmd.Process.Pid
	}
	if !s.started.IsZero() {
		until := s.ended
		if until.IsZero() {
			until = s.cfg.Clock()
		}
		st.DurationMs = until.Sub(s.started).Milliseconds()
	}
	return st
}

// finished reports whether the session's process has come and gone, and
// when.
func (s *Session) finished() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended.IsZero(), s.ended
}

func signalName(sig syscall.Signal) string {
	for name, s := range signals {
		if s == sig {
			return name
		}
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

// signals are the names the signal verb takes.
var signals = map[string]syscall.Signal{
	"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT,
	"SIGKILL": syscall.SIGKILL, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2,
	"SIGPIPE": syscall.SIGPIPE, "SIGALRM": syscall.SIGALRM, "SIGTERM": syscall.SIGTERM,
	"SIGCONT": syscall.SIGCONT, "SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP,
	"SIGWINCH": syscall.SIGWINCH,
}

// ParseSignal takes "TERM", "SIGTERM" or a number.
func ParseSignal(name string) (syscall.Signal, error) {
	if sig, ok := signals[name]; ok {
		return sig, nil
	}
	if sig, ok := signals["SIG"+name]; ok {
		return sig, nil
	}
	var n int
	if _, err := fmt.Sscanf(name, "%d", &n); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}
