package shelld

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// States of a session, as status reports them.
const (
	Idle      = "idle"      // made, no process yet
	Running   = "running"   // the process runs
	Waiting   = "waiting"   // it runs, blocked reading its terminal: at the prompt, or a program wants input
	Completed = "completed" // it exited with status 0
	Failed    = "failed"    // it exited non-zero, or could not start
	Killed    = "killed"    // a signal ended it (kill, timeout, signal verb)
)

// Errors of session calls; callers map them to errno (EPIPE, EBUSY).
var (
	ErrExited  = errors.New("shelld: the session's process has exited")
	ErrStarted = errors.New("shelld: the session already runs a process")
	ErrNotRun  = errors.New("shelld: the session runs no process")
	// ErrNotAShell is the error of SetShell for a path /etc/shells does
	// not list (EINVAL at the edges).
	ErrNotAShell = errors.New("not a shell listed in /etc/shells")
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
	// Paths says which paths the session's commands see: PathsTree or
	// PathsHost (see Namespace).
	Paths string `json:"paths"`
}

// Ended reports whether the status is of a process that has come and
// gone: completed, failed or killed.
func (st Status) Ended() bool {
	switch st.Status {
	case Completed, Failed, Killed:
		return true
	}
	return false
}

// Session is one process the daemon runs under a pseudo-terminal: an
// interactive login shell, or one command. Its output is drained into a
// Log whether or not anybody reads it. It knows nothing of files.
//
// Lock order. A Session has three mutexes; the fields below are grouped
// under the one that guards them:
//
//   - wmu, one write to the terminal at a time, is taken first: a write
//     records the lines it completes (noteInput) under rd.
//   - rd, the reading of the terminal and what follows from it, comes
//     next. Under it the Logs' and the screen's own locks are taken
//     (emit), nothing of the Session's.
//   - mu, the session's state, is a leaf: it is never held while any
//     other lock of the Session is taken. Whoever needs both reads what
//     it needs under mu, lets go, and then takes rd (Screen, run).
//
// scr is an atomic pointer, set once under rd and read without a lock.
// reap is a sync.Once; ids is taken before mu, never under another lock.
// The Logs guard themselves.
type Session struct {
	id  string
	cfg *Config
	out *Log
	err *Log // an exec's standard error, apart from its terminal (empty for a shell)

	// Guarded by mu (a leaf).
	mu      sync.Mutex
	state   string
	command string   // the command line, as cmdline shows it
	title   string   // what status calls an interactive shell: its name
	sighted sighting // the reader last seen blocked on the terminal (tty.go)
	workdir string
	// noDir is why the directory last asked for could not be had; the
	// session starts nothing until one is (SetWorkdir), so a command
	// never runs in a directory it was not given.
	noDir    error
	paths    string   // PathsTree or PathsHost, once started
	binds    []Bind   // laid in the process's mount namespace (PathsTree)
	env      []string // additions from `env K=V`, applied at start
	shell    string   // the shell it runs (`shell PATH`); empty: the daemon's
	norc     bool     // `rc off`: the shell reads no login or rc files
	timeout  time.Duration
	size     [2]uint16 // rows, cols of the terminal
	cmd      *exec.Cmd
	tty      *os.File
	started  time.Time
	ended    time.Time
	exitCode *int
	signal   string
	timedOut bool
	lastErr  string
	done     chan struct{} // closed when the process has exited and its output is drained
	hungUp   chan struct{} // closed when no process holds the terminal any more
	pts      string        // the terminal's device, /dev/pts/N
	integ    *integration  // the shell integration of an interactive shell, if any

	// The expiry of a session that never started (idle.go), also
	// guarded by mu.
	holds     int           // open files of it (Hold)
	touched   time.Time     // made, or last changed while idle
	idleLimit time.Duration // how long it may stay idle and unheld; 0: the idle time
	forgotten bool          // its Manager let it go: it never starts

	// Guarded by rd, which serializes the reading of the terminal with
	// what follows from it: the stripping of markers, the Log, the
	// command records. rbuf, strip and trk are set under mu as the
	// process starts, before its reader runs, and used under rd after
	// (records reads trk under mu).
	rd    sync.Mutex
	rbuf  []byte
	strip *stripper // nil without an integration
	trk   *tracker  // nil unless an interactive shell
	flush *time.Timer

	wmu  sync.Mutex             // one write to the terminal at a time, with its records; before rd
	scr  atomic.Pointer[screen] // made on the first look (screen.go), under rd
	reap sync.Once              // the exited process is reaped once (release)
	// ids guards idsFree: the process was reaped as it exited, its
	// process group and terminal session empty (reapIfAlone), so its
	// pid, group and session ids may name a stranger now and nothing
	// signals them. Taken before mu.
	ids     sync.Mutex
	idsFree bool
}

func newSession(id string, cfg *Config) *Session {
	return &Session{id: id, cfg: cfg, out: NewLineLog(cfg.OutputCap, cfg.Clock),
		err:   NewLineLog(cfg.OutputCap, cfg.Clock),
		state: Idle, workdir: cfg.Workdir, size: [2]uint16{24, 80}, touched: cfg.Clock(),
		done: make(chan struct{}), hungUp: make(chan struct{})}
}

// ID is the session's name.
func (s *Session) ID() string { return s.id }

// Output is the session's output log.
func (s *Session) Output() *Log { return s.out }

// Stderr is the standard error of an exec, which goes to a pipe of its
// own; an interactive shell's is merged in its terminal, and this stays
// empty.
func (s *Session) Stderr() *Log { return s.err }

// OneShot reports whether the session runs (or ran) one command, an
// exec, rather than an interactive shell.
func (s *Session) OneShot() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && s.trk == nil
}

// Done is closed once the process has exited and its output is drained.
func (s *Session) Done() <-chan struct{} { return s.done }

// StartShell runs the interactive login shell, with the shell
// integration that lets the session follow its command lines (commands.go)
// when it is bash, zsh or a POSIX sh; another shell runs as it is, and its
// records only end when the next line is written.
func (s *Session) StartShell() error {
	s.mu.Lock()
	su := s.startupLocked()
	s.mu.Unlock()
	in, err := newIntegration(su)
	if err != nil {
		in = nil // run it plain rather than not at all
	}
	args := su.plainArgs()
	if in != nil {
		args = in.args
	}
	err = s.startWith(su, args, su.shell+" -l", 0, in, true)
	if err == nil {
		s.mu.Lock()
		s.title = filepath.Base(su.shell)
		s.mu.Unlock()
	}
	return err
}

// Exec runs one command with `$SHELL -lc` (`-c` with rc off), under the
// exec timeout unless SetTimeout chose another; its standard error goes
// to Stderr.
func (s *Session) Exec(command string) error {
	s.mu.Lock()
	timeout := s.timeout
	su := s.startupLocked()
	s.mu.Unlock()
	if timeout == 0 {
		timeout = s.cfg.ExecTimeout
	}
	return s.startWith(su, su.execArgs(command), command, timeout, nil, false)
}

// startupLocked is how the session's shell is to start.
func (s *Session) startupLocked() startup {
	sh := cmp.Or(s.shell, s.cfg.Shell)
	daemon := s.cfg.environ(sh)
	path, _ := envLookup(daemon, "PATH")
	return startup{shell: sh, env: append(daemon, s.env...),
		set: slices.Clone(s.env), rc: !s.norc, path: path}
}

// startWith starts the process: an interactive shell, or an exec whose
// standard error goes to a pipe of its own.
func (s *Session) startWith(su startup, args []string, command string, timeout time.Duration, in *integration, interactive bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forgotten {
		in.remove()
		return s.failLocked(ErrNoName) // expired or removed meanwhile
	}
	if s.state != Idle {
		in.remove()
		return s.failLocked(ErrStarted)
	}
	if s.noDir != nil {
		in.remove()
		return s.failLocked(fmt.Errorf("no working directory: the last cwd failed (%w); give one that exists", s.noDir))
	}
	env := su.env
	if in != nil {
		env = append(env, in.env...)
	}
	var ns Namespace
	if s.cfg.Namespace != nil {
		ns = s.cfg.Namespace()
	}
	if ns.Tree != "" {
		env = append(env, TreeEnv+"="+ns.Tree)
	}
	o := ptyOptions{rows: s.size[0], cols: s.size[1], umask: *s.cfg.Umask, plain: !interactive}
	var errs *os.File
	if !interactive {
		r, w, err := os.Pipe()
		if err != nil {
			in.remove()
			return s.failStartLocked(su.shell, command, err)
		}
		errs, o.stderr = r, w
		defer w.Close() // the child has its own
	}
	cmd, tty, pts, err := s.startCmd(su.shell, args, env, ns, o)
	if err != nil {
		in.remove()
		if errs != nil {
			errs.Close()
		}
		return s.failStartLocked(su.shell, command, err)
	}
	s.cmd, s.tty, s.pts, s.command, s.state = cmd, tty, pts, command, Running
	s.started = s.cfg.Clock()
	s.rbuf = make([]byte, 16<<10)
	if in != nil {
		s.integ, s.strip = in, newStripper(in.nonce)
	}
	if interactive {
		s.trk = newTracker(cmd.Process.Pid, in != nil && in.hasC, in != nil && in.editor, s.cfg.Clock)
	}
	go s.run(errs)
	if timeout > 0 {
		time.AfterFunc(timeout, s.expire)
	}
	return nil
}

// failStartLocked records a process that could not start: the session
// is finished (and forgotten after the retention time).
func (s *Session) failStartLocked(path, command string, err error) error {
	s.state, s.command = Failed, command
	s.started = s.cfg.Clock()
	s.ended = s.started
	s.out.Close()
	s.err.Close()
	close(s.done)
	return s.failLocked(fmt.Errorf("start %s: %w", path, err))
}

// startCmd starts the program on a new terminal: in a mount namespace of
// its own with binds laid where the system allows it (Namespace), else as
// it is; a refusal (EPERM: no CAP_SYS_ADMIN after all) is remembered and
// the program started plainly.
func (s *Session) startCmd(path string, args, env []string, ns Namespace, o ptyOptions) (*exec.Cmd, *os.File, string, error) {
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = s.workdir, env
	var done func()
	o.unshare, done = namespaced(cmd, ns)
	tty, pts, err := startPty(cmd, o)
	done()
	if err != nil && o.unshare && errors.Is(err, syscall.EPERM) {
		nsRefused.Store(true)
		cmd = exec.Command(path, args...)
		cmd.Dir, cmd.Env = s.workdir, env
		o.unshare = false
		tty, pts, err = startPty(cmd, o)
	}
	s.paths = PathsHost
	if o.unshare {
		s.paths, s.binds = PathsTree, ns.Binds
	}
	return cmd, tty, pts, err
}

// drainGrace is how long the end of a process waits for its last output
// to come through the terminal. A background job that keeps the terminal
// open keeps writing to the log after that, but does not keep the session
// running.
const drainGrace = 100 * time.Millisecond

// ptyOptions say how a session's terminal and process start.
type ptyOptions struct {
	rows, cols uint16
	umask      int
	plain      bool     // no output processing: one-shots print plain \n lines
	stderr     *os.File // the process's standard error when not the terminal
	unshare    bool     // in a mount namespace of its own (namespaced)
}

// startPty starts cmd as a session leader on a new terminal of the given
// size, and returns the terminal's master side (non-blocking, read through
// the runtime's poller) and the device name of its slave side.
func startPty(cmd *exec.Cmd, o ptyOptions) (*os.File, string, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, "", err
	}
	defer slave.Close()
	if master, err = pollable(master); err != nil {
		return nil, "", err
	}
	// Sized on the slave side: creack/pty's ioctls would put the
	// master into blocking mode.
	if err := pty.Setsize(slave, &pty.Winsize{Rows: o.rows, Cols: o.cols}); err != nil {
		master.Close()
		return nil, "", err
	}
	if o.plain {
		if err := plainOutput(slave); err != nil {
			master.Close()
			return nil, "", err
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if o.stderr != nil {
		cmd.Stderr = o.stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if o.unshare {
		unshareMounts(cmd)
	}
	if err := startWithUmask(cmd, o.umask); err != nil {
		master.Close()
		return nil, "", err
	}
	return master, slave.Name(), nil
}

// run drains the terminal into the log (always, so a process nobody reads
// never stalls on a full terminal), and errs, an exec's standard error,
// into its own, and records how the process ended.
func (s *Session) run(errs *os.File) {
	drained := s.hungUp
	go func() {
		s.pump() // ends with EIO once the last writer closes
		close(drained)
	}()
	errDrained := make(chan struct{})
	go func() {
		if errs != nil {
			io.Copy(s.err, errs) // ends once the last writer closes
		}
		close(errDrained)
	}()
	ws, err := waitExit(s.cmd.Process.Pid) // not reaped: see exit_linux.go
	grace := time.After(drainGrace)
	for _, ch := range []chan struct{}{drained, errDrained} {
		select {
		case <-ch:
		case <-grace:
		}
	}
	s.mu.Lock()
	s.ended = s.cfg.Clock()
	s.recordExitLocked(ws, err)
	code := s.exitCode
	s.mu.Unlock()
	s.rd.Lock()
	if s.strip != nil {
		s.strip.flush(s.emit)
	}
	if s.trk != nil {
		s.trk.finish(code)
	}
	s.rd.Unlock()
	s.integ.remove()
	s.out.Close()
	s.err.Close()
	close(s.done)
	s.reapIfAlone()
	<-drained
	s.tty.Close()
	<-errDrained
	if errs != nil {
		errs.Close()
	}
}

// pump reads the terminal until it ends: whatever is there, as soon as it
// is there.
func (s *Session) pump() {
	rc, err := s.tty.SyscallConn()
	if err != nil {
		return
	}
	for {
		var end bool
		err := rc.Read(func(fd uintptr) bool {
			more, ended := s.readTerminal(fd)
			end = ended
			if !more && !ended {
				s.armFlush()
			}
			return more || ended
		})
		if err != nil || end {
			return
		}
	}
}

// drain reads what the terminal holds now, without waiting; what a
// process wrote before it is then in the Log and the records.
func (s *Session) drain() {
	rc, err := s.tty.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for {
			if more, _ := s.readTerminal(fd); !more {
				return
			}
		}
	})
}

// readTerminal makes one non-blocking read of the terminal and takes in
// what it got. more: there may be more to read at once; ended: the
// terminal has no writer left (or failed).
func (s *Session) readTerminal(fd uintptr) (more, ended bool) {
	s.rd.Lock()
	defer s.rd.Unlock()
	for {
		n, err := syscall.Read(int(fd), s.rbuf)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false, false
		case err != nil || n <= 0:
			return false, true
		}
		s.takeLocked(s.rbuf[:n])
		return true, false
	}
}

// takeLocked passes output on to the Log, taking prompt markers out.
func (s *Session) takeLocked(p []byte) {
	if s.strip == nil {
		s.emit(p)
		return
	}
	s.strip.feed(p, s.emit, func(body []byte) {
		m, ok := parseMarker(body)
		if ok && s.trk != nil && s.trk.mark(m) && m.kind == 'D' && s.trk.prompts == 1 {
			// The shell has read its start-up files.
			go s.integ.remove()
		}
	})
}

func (s *Session) emit(p []byte) {
	s.out.Write(p)
	s.feedScreen(p)
	if s.trk != nil {
		s.trk.text(p)
	}
}

// flushDelay is how long the beginning of what may be a prompt marker is
// held back from the Log at the end of what the terminal had, waiting for
// the rest. Shells write a marker at once, so the rest is there when it is
// one; otherwise the bytes were output and go to the Log after the delay.
const flushDelay = 50 * time.Millisecond

// armFlush is called with the terminal read empty.
func (s *Session) armFlush() {
	s.rd.Lock()
	defer s.rd.Unlock()
	if s.strip == nil || len(s.strip.held) == 0 || s.flush != nil {
		return
	}
	s.flush = time.AfterFunc(flushDelay, func() {
		s.drain()
		s.rd.Lock()
		defer s.rd.Unlock()
		s.flush = nil
		s.strip.flush(s.emit)
	})
}

func (s *Session) recordExitLocked(st syscall.WaitStatus, err error) {
	switch {
	case err != nil:
		s.state = Failed
		s.lastErr = fmt.Sprintf("waiting for the process: %v", err)
	case st.Signaled():
		s.state, s.signal = Killed, signalName(st.Signal())
	default:
		code := st.ExitStatus()
		s.exitCode = &code
		s.state = Completed
		if code != 0 {
			s.state = Failed
		}
	}
}

// pid is the session's process id, 0 before the start.
func (s *Session) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// release reaps the session's process once it has exited, letting its
// pid go. Until then the zombie keeps the pid, so the session's process
// group and session ids can only ever name what the session started.
func (s *Session) release() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-s.done:
		s.reap.Do(func() { cmd.Wait() })
	default: // still running: Kill first
	}
}

// reapIfAlone reaps the exited process at once if nothing is left in its
// process group or terminal session: then no id of it can name anything
// the session started, and keeping the zombie until the session is
// forgotten (a cron job's every minute, for the retention time) would only
// pile zombies up. A session that left processes behind keeps its zombie,
// and so its ids, as exit_linux.go says.
func (s *Session) reapIfAlone() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	s.ids.Lock()
	defer s.ids.Unlock()
	if len(sessionPids(cmd.Process.Pid)) > 0 {
		return
	}
	s.reap.Do(func() { cmd.Wait() })
	s.idsFree = true
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

// Kill ends everything the session runs at once (SIGKILL) and waits
// until it is gone: its process, and every process still in its terminal
// session, whatever process group job control put it in (background jobs
// of an interactive shell), so nothing it started outlives it. A process
// that made a session of its own (setsid, a daemon) has left it and is not
// found. An idle session is left as it is.
//
// Finding the members of a terminal session takes a scan of /proc (a
// millisecond or more), which an exec that left nothing behind is spared:
// its processes stay in its process group (job control is off in
// `sh -c`), which SIGKILL reaches without a scan, and one that moved to
// a group of its own would still hold the terminal unless it also closed
// every descriptor of it, as daemons do. So when nothing holds the
// terminal, an exec's group is killed, and end (at removal) waits for it
// to be empty.
func (s *Session) Kill() {
	leader := s.pid()
	if leader == 0 {
		return
	}
	if s.signalGroup(syscall.SIGKILL) == nil {
		<-s.done
	}
	s.ids.Lock()
	defer s.ids.Unlock()
	if s.idsFree {
		return // nothing was left of it
	}
	if s.scanNeeded() {
		killSession(leader)
		return
	}
	syscall.Kill(-leader, syscall.SIGKILL) // the unreaped leader keeps the id ours
}

// scanNeeded reports whether the exited session may have processes
// outside its process group (see Kill).
func (s *Session) scanNeeded() bool {
	s.mu.Lock()
	interactive := s.trk != nil
	s.mu.Unlock()
	select {
	case <-s.hungUp:
		return interactive
	default:
		return true
	}
}

// end kills the session (Kill), reaps its process and waits, at most a
// second, until its process group is empty, so no process of it is left
// when it is forgotten. Its ids are not used again after that: once the
// group is empty they may name a stranger.
func (s *Session) end() {
	s.mu.Lock()
	s.forgotten = true
	s.mu.Unlock()
	s.closeScreen()
	s.Kill()
	leader := s.pid()
	s.release()
	s.ids.Lock()
	defer s.ids.Unlock()
	if leader == 0 || s.idsFree {
		return
	}
	// Killed members are gone in a moment; but a member whose new parent
	// is slow to reap it lingers as a zombie, which kill(2) still finds
	// and a scan does not count.
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if syscall.Kill(-leader, 0) == syscall.ESRCH {
			return
		}
	}
	killSession(leader)
}

// killSession kills the processes of terminal session sid, and of the
// process group sid, and waits, at most a second, until none is alive.
// Members that died but are not yet reaped by their new parent (zombies)
// do not count on Linux; elsewhere (pids_other.go) the group's signal
// finds them too, and the wait may take its whole second.
func killSession(sid int) {
	if sid <= 0 {
		return // no process: pgrp and session 0 are the kernel's threads
	}
	deadline := time.Now().Add(time.Second)
	for {
		pids := sessionPids(sid)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Signal sends sig to the terminal's foreground process group, as a key
// such as Ctrl-C does: the command in front of an interactive shell (job
// control gives it a group of its own), or the whole of an exec.
func (s *Session) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	tty, state := s.tty, s.state
	s.mu.Unlock()
	if state == Running {
		if fg, err := tcgetpgrp(tty); err == nil && fg > 0 {
			if err := syscall.Kill(-fg, sig); err == nil {
				return nil
			}
		}
	}
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
// it fails with ErrExited (EPIPE at the edges). In an interactive shell
// each command line it completes gets a record (commands.go), unless the
// command running waits for input: then the lines are that input. A
// program that never reads its terminal blocks Write once the terminal's
// input buffer is full; Send bounds that wait.
func (s *Session) Write(p []byte) (int, error) {
	return s.Send(context.Background(), p)
}

// Send is Write that gives up when ctx ends, returning how much the
// terminal took and ctx's error.
func (s *Session) Send(ctx context.Context, p []byte) (int, error) {
	s.mu.Lock()
	tty, state := s.tty, s.state
	s.mu.Unlock()
	if state != Running {
		if state == Idle {
			return 0, ErrNotRun
		}
		return 0, ErrExited
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.trk != nil {
		s.noteInput(p)
	}
	if ctx.Done() == nil {
		return tty.Write(p)
	}
	defer tty.SetWriteDeadline(time.Time{})
	written := 0
	for written < len(p) {
		// Short deadlines, so ctx is looked at while the terminal is full.
		tty.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := tty.Write(p[written:])
		written += n
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if ctx.Err() != nil {
				return written, ctx.Err()
			}
		case err != nil:
			return written, err
		}
	}
	return written, nil
}

// EOF sends the terminal's end-of-file character, as Ctrl-D does. To an
// interactive shell that has not shown its first prompt it is sent once
// the prompt is out (within firstPromptWait): an end-of-file typed while
// the terminal is still in canonical mode holds no byte, and is lost when
// the shell's line editor switches the terminal to raw mode.
func (s *Session) EOF() error {
	s.awaitFirstPrompt(firstPromptWait)
	s.awaitLineEditor(firstPromptWait)
	_, err := s.Write([]byte{4})
	return err
}

// awaitLineEditor waits, at most limit, until a shell with a line editor
// has switched its terminal out of canonical mode. Its first prompt's
// marker comes before that (bash prints it from PROMPT_COMMAND), and a
// Control-D the terminal takes in canonical mode becomes an end-of-file
// mark that the switch turns into a NUL the editor ignores: the eof was
// lost, on a loaded machine often.
func (s *Session) awaitLineEditor(limit time.Duration) {
	s.mu.Lock()
	t, tty := s.trk, s.tty
	s.mu.Unlock()
	if t == nil || !t.editor || tty == nil {
		return
	}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if canon, err := canonical(tty); err != nil || !canon {
			return
		}
		select {
		case <-s.done:
			return
		default:
		}
	}
}

// firstPromptWait bounds how long EOF waits for a shell's first prompt.
const firstPromptWait = 2 * time.Second

// awaitFirstPrompt waits, at most limit, until an interactive shell with
// the integration has shown its first prompt (or has ended).
func (s *Session) awaitFirstPrompt(limit time.Duration) {
	s.mu.Lock()
	t, integrated := s.trk, s.integ != nil
	s.mu.Unlock()
	if t == nil || !integrated {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		s.rd.Lock()
		seen := t.prompts > 0
		s.rd.Unlock()
		_, end, _, closed := s.out.Stat()
		if seen || closed {
			return
		}
		s.out.Follow(ctx, end)
	}
}

// Resize sets the terminal's size; before the start, the size the
// process starts with (24 rows of 80 columns unless set).
func (s *Session) Resize(rows, cols uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rows == 0 || cols == 0 {
		return s.failLocked(fmt.Errorf("terminal size %dx%d: rows and columns must be positive", rows, cols))
	}
	switch s.state {
	case Idle:
		s.size = [2]uint16{rows, cols}
		s.resizeScreen(rows, cols)
		return nil
	case Running:
		s.size = [2]uint16{rows, cols}
		s.resizeScreen(rows, cols)
		return setWinsize(s.tty, rows, cols)
	}
	return s.failLocked(ErrExited)
}

// Environ returns the environment the process starts (or started) with:
// the allowed part of the daemon's, then what `env` added.
func (s *Session) Environ() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startupLocked().env
}

// CommandLine is what the session runs: the login shell or the exec's
// command; empty while idle.
func (s *Session) CommandLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.command
}

// Cwd returns the live working directory of the session's process, or
// the directory it starts in when none runs.
func (s *Session) Cwd() string {
	s.mu.Lock()
	dir, state, binds := s.workdir, s.state, s.binds
	s.mu.Unlock()
	if pid := s.pid(); state == Running && pid > 0 {
		if live, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
			return hostPath(live, binds)
		}
	}
	return dir
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
	err := CheckWorkdir(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Idle {
		return s.failLocked(ErrStarted)
	}
	if err != nil {
		return s.failLocked(err)
	}
	s.workdir, s.noDir, s.touched = dir, nil, s.cfg.Clock()
	return nil
}

// SetShell sets the shell the session runs, interactive or for an exec,
// instead of the daemon's: an absolute path that /etc/shells lists, as
// for chsh(1).
func (s *Session) SetShell(path string) error {
	if err := s.CheckShell(path); err != nil {
		return s.Fail(err)
	}
	return s.beforeStart(func() error { s.shell = path; return nil })
}

// CheckShell reports whether path may be the session's shell: absolute,
// listed in the shells file, and there.
func (s *Session) CheckShell(path string) error {
	if !filepath.IsAbs(path) || !listedShell(s.cfg.Shells, path) {
		return &os.PathError{Op: "shell", Path: path, Err: ErrNotAShell}
	}
	_, err := os.Stat(path)
	return err
}

// LoseWorkdir records that the directory asked for could not be had
// (err says why): the session starts nothing until SetWorkdir succeeds,
// as `cd DIR && CMD` runs nothing when DIR is missing.
func (s *Session) LoseWorkdir(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == Idle {
		s.noDir = err
	}
}

// CheckWorkdir reports whether a process could start in dir: it must be
// an existing directory.
func CheckWorkdir(dir string) error {
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return &os.PathError{Op: "chdir", Path: dir, Err: syscall.ENOTDIR}
	}
	return nil
}

// Idle reports whether the session has not started a process yet.
func (s *Session) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == Idle
}

// Workdir is the directory the process starts (or started) in.
func (s *Session) Workdir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workdir
}

// Home is the session user's home directory: HOME as the session's
// environment has it (`env HOME=…` included), else the daemon's.
func (s *Session) Home() string {
	s.mu.Lock()
	env := s.startupLocked().env
	s.mu.Unlock()
	if home, ok := envLookup(env, "HOME"); ok {
		return home
	}
	home, _ := os.UserHomeDir()
	return home
}

// beforeStart runs set, a change of how the process is to start, with
// the session locked, if it has not started (else ErrStarted); its error
// is the session's lastError.
func (s *Session) beforeStart(set func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Idle {
		return s.failLocked(ErrStarted)
	}
	if err := set(); err != nil {
		return s.failLocked(err)
	}
	s.touched = s.cfg.Clock()
	return nil
}

// listedShell reports whether the file list (/etc/shells: one path a
// line, # comments) holds path.
func listedShell(list, path string) bool {
	b, err := os.ReadFile(list)
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.TrimSpace(line) == path {
			return true
		}
	}
	return false
}

// SetRC says whether the shell reads its login and rc files (the
// default) or starts without them (`rc off`): a pristine environment,
// the allowed part of the daemon's and what `env` added.
func (s *Session) SetRC(on bool) error {
	return s.beforeStart(func() error { s.norc = !on; return nil })
}

// SetEnv adds K=V to the environment the process starts with.
func (s *Session) SetEnv(kv string) error {
	return s.beforeStart(func() error { s.env = append(s.env, kv); return nil })
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

// Status returns a snapshot. A running process blocked reading its
// terminal (an interactive shell at its prompt, or a program waiting for
// input) is reported as waiting; this looks at the terminal and the
// processes in front of it now.
func (s *Session) Status() Status {
	// A reader just seen blocked counts once it has stayed so (steady):
	// look again when that time is up rather than say running.
	if _, pending := s.settleSteady(true); pending > 0 {
		time.Sleep(pending)
	}
	return s.status(true)
}

// status is Status after a deep or shallow look at the terminal
// (settleWith).
func (s *Session) status(deep bool) Status {
	waiting := s.settleWith(deep)
	start, end, _, _ := s.out.Stat()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		ID: s.id, Status: s.state, Command: cmp.Or(s.title, s.command), Workdir: s.workdir,
		ExitCode: s.exitCode, Signal: s.signal, TimedOut: s.timedOut,
		StartedAt: s.started, EndedAt: s.ended, Output: end,
		Truncated: start > 0, LastError: s.lastErr, Paths: s.paths,
	}
	if st.Paths == "" { // not started: what a start would give
		st.Paths = PathsHost
		if s.cfg.Namespace != nil && mayUnshareMounts() && !nsRefused.Load() {
			st.Paths = PathsTree
		}
	}
	if waiting && st.Status == Running {
		st.Status = Waiting
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
	// A number, or SIG and a number as signalName writes one without a
	// name (real-time signals).
	if n, err := strconv.Atoi(strings.TrimPrefix(name, "SIG")); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}
