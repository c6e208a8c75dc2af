package shelld

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hangBound bounds waits for things that happen at once; it is generous
// so a loaded machine does not fail the tests.
const hangBound = 10 * time.Second

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if cfg.Workdir == "" {
		cfg.Workdir = t.TempDir()
	}
	m := NewManager(cfg)
	t.Cleanup(m.Close)
	return m
}

func create(t *testing.T, m *Manager) *Session {
	t.Helper()
	s, err := m.Create("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wait(t *testing.T, s *Session) Status {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(hangBound):
		t.Fatalf("session %s still running after %v: %+v\noutput: %q", s.ID(), hangBound, s.Status(), output(s))
	}
	return s.Status()
}

func output(s *Session) string {
	start, end, _, _ := s.Output().Stat()
	buf := make([]byte, end-start)
	n, _ := s.Output().ReadAt(buf, start)
	return string(buf[:n])
}

// waitOutput waits until the session's output contains want.
func waitOutput(t *testing.T, s *Session, want string) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !strings.Contains(output(s), want) {
		_, end, _, _ := s.Output().Stat()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_, err := s.Output().Follow(ctx, end)
		cancel()
		if err != nil {
			t.Fatalf("output never contained %q; it is:\n%s", want, output(s))
		}
	}
}

func TestExecExitCodes(t *testing.T) {
	m := newManager(t, Config{})
	for _, tc := range []struct {
		cmd    string
		state  string
		code   int
		signal string
		out    string
		errs   string
	}{
		{"echo hi", Completed, 0, "", "hi", ""},
		{"echo oops >&2; exit 3", Failed, 3, "", "", "oops\n"},
		{"kill -TERM $$", Killed, -1, "SIGTERM", "", ""},
		{"kill -KILL $$", Killed, -1, "SIGKILL", "", ""},
	} {
		s := create(t, m)
		if err := s.Exec(tc.cmd); err != nil {
			t.Fatal(err)
		}
		st := wait(t, s)
		if st.Status != tc.state || st.Signal != tc.signal {
			t.Errorf("%q: status %s signal %q, want %s %q", tc.cmd, st.Status, st.Signal, tc.state, tc.signal)
		}
		if tc.code >= 0 && (st.ExitCode == nil || *st.ExitCode != tc.code) {
			t.Errorf("%q: exit code %v, want %d", tc.cmd, st.ExitCode, tc.code)
		}
		if tc.code < 0 && st.ExitCode != nil {
			t.Errorf("%q: exit code %d for a killed process, want none", tc.cmd, *st.ExitCode)
		}
		if !strings.Contains(output(s), tc.out) {
			t.Errorf("%q: output %q, want it to contain %q", tc.cmd, output(s), tc.out)
		}
		if errs := string(s.Stderr().Tail(100)); errs != tc.errs {
			t.Errorf("%q: stderr %q, want %q", tc.cmd, errs, tc.errs)
		}
		if st.Command != tc.cmd || st.EndedAt.IsZero() || st.Pid == 0 {
			t.Errorf("%q: status %+v", tc.cmd, st)
		}
	}
}

// A timeout sends SIGTERM to the process group, and SIGKILL after the
// grace time to what ignores it.
func TestExecTimeout(t *testing.T) {
	m := newManager(t, Config{KillGrace: 100 * time.Millisecond})
	for _, tc := range []struct {
		cmd, signal string
		timeout     time.Duration
	}{
		{"sleep 30", "SIGTERM", 200 * time.Millisecond},
		// Long enough for the shell to have set its trap before the
		// SIGTERM comes, even on a loaded machine.
		{"trap '' TERM; sleep 30", "SIGKILL", 2 * time.Second},
	} {
		s := create(t, m)
		s.SetTimeout(tc.timeout)
		if err := s.Exec(tc.cmd); err != nil {
			t.Fatal(err)
		}
		st := wait(t, s)
		if !st.TimedOut || st.Status != Killed || st.Signal != tc.signal {
			t.Errorf("%q: timedOut %v status %s signal %s, want true killed %s", tc.cmd, st.TimedOut, st.Status, st.Signal, tc.signal)
		}
	}
}

// An interactive shell keeps its working directory and variables from one
// command line to the next.
func TestShellKeepsState(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Config{})
	s := create(t, m)
	if err := s.StartShell(); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"cd " + dir, "X=forty-two", `echo "at:$PWD:$X"`} {
		if _, err := s.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	waitOutput(t, s, "at:"+dir+":forty-two")
	if _, err := s.Write([]byte("exit 7\n")); err != nil {
		t.Fatal(err)
	}
	st := wait(t, s)
	if st.Status != Failed || st.ExitCode == nil || *st.ExitCode != 7 {
		t.Errorf("after exit 7: %+v", st)
	}
	if _, err := s.Write([]byte("echo late\n")); !errors.Is(err, ErrExited) {
		t.Errorf("write after exit: %v, want ErrExited", err)
	}
}

// Only the allow-listed part of the daemon's environment reaches a
// session, plus what the session was given.
func TestEnvironmentAllowList(t *testing.T) {
	t.Setenv("GSVFS_TEST_SECRET", "hunter2")
	m := newManager(t, Config{})
	s := create(t, m)
	if err := s.SetEnv("GIVEN=yes"); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec("env"); err != nil {
		t.Fatal(err)
	}
	wait(t, s)
	out := output(s)
	if strings.Contains(out, "hunter2") {
		t.Errorf("the daemon's secret reached the session:\n%s", out)
	}
	for _, want := range []string{"PATH=", "GIVEN=yes", "TERM=xterm-256color"} {
		if !strings.Contains(out, want) {
			t.Errorf("environment lacks %s:\n%s", want, out)
		}
	}
}

// Output past the cap keeps the tail intact and says it was truncated; a
// process nobody reads runs to its end.
func TestOutputCap(t *testing.T) {
	m := newManager(t, Config{OutputCap: 1000})
	s := create(t, m)
	if err := s.Exec("seq 1 50000"); err != nil {
		t.Fatal(err)
	}
	st := wait(t, s)
	if st.Status != Completed || !st.Truncated || st.Output < 200_000 {
		t.Fatalf("status %+v, want completed, truncated, all output counted", st)
	}
	tail := strings.Fields(string(s.Output().Tail(30)))
	if got := tail[len(tail)-1]; got != "50000" {
		t.Errorf("last line %q, want 50000", got)
	}
}

// Removing a session kills its whole process group and waits for it: no
// process it started is left on the host.
func TestRemoveLeavesNoProcess(t *testing.T) {
	m := newManager(t, Config{})
	s := create(t, m)
	if err := s.Exec("sleep 100 & sleep 100 & echo started; wait"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, s, "started")
	pgid := s.Status().Pid
	if got := len(sessionPids(pgid)); got < 3 {
		t.Fatalf("process group %d: %d processes, want the shell and two sleeps", pgid, got)
	}
	if err := m.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if got := len(sessionPids(pgid)); got != 0 {
		t.Errorf("process group %d after remove: %d processes still running", pgid, got)
	}
	if _, ok := m.Get(s.ID()); ok {
		t.Error("the removed session is still listed")
	}
}

// An exec that ended leaving a job that ignores hangups and holds no
// descriptor of the terminal (nohup with its output elsewhere) in its
// process group: removal kills it without a scan of /proc (Kill), and
// waits until it is gone.
func TestRemoveEndsJobsOfAnEndedExec(t *testing.T) {
	m := newManager(t, Config{})
	s := create(t, m)
	// The short sleep lets the job get to nohup before the shell's exit
	// hangs the terminal up.
	if err := s.Exec("nohup sleep 100 >/dev/null 2>&1 </dev/null & echo job=$!; sleep 0.2"); err != nil {
		t.Fatal(err)
	}
	st := wait(t, s)
	var job int
	out := string(s.Output().Tail(40))
	if _, err := fmt.Sscanf(out[max(strings.Index(out, "job="), 0):], "job=%d", &job); err != nil {
		t.Fatalf("no job pid in the output %q: %v", out, err)
	}
	if got := sessionPids(st.Pid); !slices.Contains(got, job) {
		t.Fatalf("the job %d is not running in the session's group after the exec ended: %v", job, got)
	}
	select {
	case <-s.hungUp:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal was never hung up: the scan-free path is not taken")
	}
	if err := m.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if got := sessionPids(st.Pid); len(got) != 0 {
		t.Errorf("processes of the session after remove: %v, want none", got)
	}
}

// Finished sessions are forgotten after the retention time, measured on
// the injected clock; running ones never.
func TestRetention(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m := newManager(t, Config{Retention: 30 * time.Minute, Clock: clock})
	done, seen, running := create(t, m), create(t, m), create(t, m)
	done.Exec("true")
	seen.Exec("true")
	running.Exec("sleep 30")
	wait(t, done)
	wait(t, seen)
	start := now
	setNow := func(d time.Duration) { mu.Lock(); now = start.Add(d); mu.Unlock() }
	setNow(29 * time.Minute)
	if gone := m.Reap(); len(gone) != 0 {
		t.Errorf("reaped before the retention time: %v", gone)
	}
	if _, ok := m.Get(seen.ID()); !ok {
		t.Error("Get does not find a session before its retention time")
	}
	setNow(30 * time.Minute)
	if _, ok := m.Get(seen.ID()); ok {
		t.Error("Get finds a session at its retention time")
	}
	if gone := m.Reap(); len(gone) != 1 || gone[0] != done.ID() {
		t.Errorf("reaped at the retention time: %v, want [%s]", gone, done.ID())
	}
	if _, ok := m.Get(running.ID()); !ok {
		t.Error("a running session was reaped")
	}
}

// A session that never started lasts the idle time, not the retention
// time: a short retention forgets finished sessions soon, but must not
// take a fresh one away before its maker, slow under load, first opens it.
func TestIdleOutlivesRetention(t *testing.T) {
	var mu sync.Mutex
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	const retention = 2 * time.Second
	m := newManager(t, Config{Retention: retention, Clock: clock})
	idle, done := create(t, m), create(t, m)
	done.Exec("true")
	wait(t, done)
	idleTime := m.Config().Idle
	for _, c := range []struct {
		after              time.Duration
		wantIdle, wantDone bool
	}{
		{retention - time.Nanosecond, true, true},
		{retention, true, false},
		{10 * retention, true, false},
		{idleTime - time.Nanosecond, true, false},
		{idleTime, false, false},
	} {
		mu.Lock()
		now = start.Add(c.after)
		mu.Unlock()
		_, gotIdle := m.Get(idle.ID())
		_, gotDone := m.Get(done.ID())
		if gotIdle != c.wantIdle || gotDone != c.wantDone {
			t.Errorf("after %v: got idle %v, finished %v; want idle %v, finished %v",
				c.after, gotIdle, gotDone, c.wantIdle, c.wantDone)
		}
	}
}

// The cap on live sessions refuses more with ErrTooMany; finished ones do
// not count.
func TestMaxLive(t *testing.T) {
	m := newManager(t, Config{MaxLive: 2})
	a, b := create(t, m), create(t, m)
	if _, err := m.Create(""); !errors.Is(err, ErrTooMany) {
		t.Fatalf("third session: %v, want ErrTooMany", err)
	}
	a.Exec("true")
	wait(t, a)
	if _, err := m.Create(""); err != nil {
		t.Errorf("after one finished: %v", err)
	}
	_ = b
	if _, err := m.Create("x/y"); err == nil {
		t.Error("a name with a slash was accepted")
	}
}

// Signals by name reach the process group.
func TestSignal(t *testing.T) {
	m := newManager(t, Config{})
	s := create(t, m)
	s.Exec("trap 'echo got-usr1; exit 0' USR1; echo ready; while :; do sleep 0.05; done")
	waitOutput(t, s, "ready")
	sig, err := ParseSignal("USR1")
	if err != nil || sig != syscall.SIGUSR1 {
		t.Fatalf("ParseSignal(USR1): %v, %v", sig, err)
	}
	if err := s.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, s, "got-usr1")
	if _, err := ParseSignal("NOPE"); err == nil {
		t.Error("ParseSignal(NOPE) succeeded")
	}
}

// Signal names go both ways: what status reports, the signal verb takes.
func TestSignalNamesRoundTrip(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGWINCH, 40, 64} {
		got, err := ParseSignal(signalName(sig))
		if err != nil || got != sig {
			t.Errorf("ParseSignal(%q) = %v, %v, want %v", signalName(sig), got, err, sig)
		}
	}
	for _, bad := range []string{"", "SIG", "NOPE", "0", "65", "SIG-1", "9x"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) succeeded, want an error", bad)
		}
	}
}

// An end-of-file sent at once after the start ends the shell: it waits
// for the first prompt rather than be lost when the line editor starts.
func TestEOFRightAfterStart(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := os.Stat(shell); err != nil {
			continue
		}
		t.Run(shell, func(t *testing.T) {
			m := newManager(t, Config{Shell: shell})
			s := create(t, m)
			if err := s.StartShell(); err != nil {
				t.Fatal(err)
			}
			if err := s.EOF(); err != nil {
				t.Fatal(err)
			}
			if st := wait(t, s); st.Status != Completed {
				t.Errorf("after eof: %+v, want completed", st)
			}
		})
	}
}

// Sessions start with the configured umask (022 when none is), never the
// daemon's own 0, for one-shots and interactive shells alike.
func TestSessionUmask(t *testing.T) {
	old := syscall.Umask(0) // what a daemon sets for itself
	defer syscall.Umask(old)
	for _, tc := range []struct {
		umask *int
		want  string
	}{
		{nil, "0022"},
		{ptr(0o077), "0077"},
		{ptr(0o002), "0002"},
	} {
		m := newManager(t, Config{Umask: tc.umask})
		s := create(t, m)
		if err := s.Exec("umask"); err != nil {
			t.Fatal(err)
		}
		wait(t, s)
		if got := strings.TrimSpace(output(s)); got != tc.want {
			t.Errorf("exec umask with Config.Umask %v: got %q, want %q", tc.umask, got, tc.want)
		}
		sh := create(t, m)
		if err := sh.StartShell(); err != nil {
			t.Fatal(err)
		}
		// status names the shell; cmdline keeps the whole command line.
		if got, line := sh.Status().Command, sh.CommandLine(); got != "sh" || line != "/bin/sh -l" {
			t.Errorf("interactive /bin/sh: status command %q, command line %q; want sh and /bin/sh -l", got, line)
		}
		if _, err := sh.Send(context.Background(), []byte("umask; exit\n")); err != nil {
			t.Fatal(err)
		}
		wait(t, sh)
		if got := output(sh); !strings.Contains(got, tc.want+"\r\n") {
			t.Errorf("interactive umask with Config.Umask %v: output %q, want a line %q", tc.umask, got, tc.want)
		}
	}
	if now := syscall.Umask(old); now != 0 {
		t.Errorf("the process's own umask changed to %04o", now)
	}
	syscall.Umask(0)
}

func ptr[T any](v T) *T { return &v }

// The screen is made on the first look from the kept output, then
// follows what comes, at the terminal's size.
func TestScreen(t *testing.T) {
	m := newManager(t, Config{})
	s := create(t, m)
	if err := s.Resize(5, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(`printf 'hello\033[3;4Hx'`); err != nil {
		t.Fatal(err)
	}
	wait(t, s)
	sc := s.Screen()
	want := Screen{Rows: 5, Cols: 20, CursorRow: 3, CursorCol: 5, Lines: []string{"hello", "", "   x", "", ""}}
	if fmt.Sprint(sc) != fmt.Sprint(want) {
		t.Errorf("screen after the replay: %+v, want %+v", sc, want)
	}
	s.emit([]byte("\033[1;1Hbye  ")) // as the terminal's next output would come
	if got := s.Screen().Lines[0]; got != "bye" {
		t.Errorf("first row after more output: %q, want it overwritten", got)
	}
}
