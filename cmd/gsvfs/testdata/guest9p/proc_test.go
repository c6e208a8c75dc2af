package guest9p

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gsvfs's /proc (gsvfs-proc(7)) through the kernel's
// 9P client: shell sessions that run on the host, driven through their
// files. TestKernel9P serves the tree with small session limits and tells
// the guest about them in these variables; a server without /proc (diod)
// sets none, and TestProc skips.
const (
	// procEnv is the path of the server's /proc in the guest.
	procEnv = "GSVFS_GUEST_PROC"
	// procOutputEnv is the server's --session-output, in bytes.
	procOutputEnv = "GSVFS_GUEST_PROC_OUTPUT"
	// procRetentionEnv is the server's --session-retention.
	procRetentionEnv = "GSVFS_GUEST_PROC_RETENTION"
	// procSecretEnv is the value of a variable in the daemon's
	// environment, which no session may see.
	procSecretEnv = "GSVFS_GUEST_PROC_SECRET"
	// procPidsEnv names the file on the mount where TestProc/Rmdir
	// leaves the host pids of the sessions it removes, one "NAME PID"
	// line each: the host then checks that nothing of their process
	// groups and sessions is left.
	procPidsEnv = "GSVFS_GUEST_PROC_PIDS"
)

// sessionFiles are the names in a session's directory, sorted.
var sessionFiles = []string{"cmdline", "cmds", "ctl", "cwd", "env", "screen", "status", "stderr", "stdin", "stdout", "stream", "tail", "wait"}

// procStatus is a session's status (and wait) JSON.
type procStatus struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Pid         int    `json:"pid"`
	Command     string `json:"command"`
	ExitCode    *int   `json:"exitCode"`
	Signal      string `json:"signal"`
	TimedOut    bool   `json:"timedOut"`
	OutputBytes int64  `json:"outputBytes"`
	Truncated   bool   `json:"truncated"`
	LastError   string `json:"lastError"`
}

// cmdRecord is what cmds/N/wait returns.
type cmdRecord struct {
	N        int    `json:"n"`
	Input    string `json:"input"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode"`
	Output   string `json:"output"`
}

// code shows an exit code, "null" for none.
func code(c *int) string {
	if c == nil {
		return "null"
	}
	return strconv.Itoa(*c)
}

// procDir returns the path of /proc on the mount, skipping the test when
// the server has none.
func procDir(t *testing.T) string {
	t.Helper()
	mountDir(t)
	p := os.Getenv(procEnv)
	if p == "" {
		t.Skip("SKIPPED: " + procEnv + " is not set: the server has no /proc (diod)")
	}
	return p
}

// procSetting returns a variable the /proc tests need, failing without it.
func procSetting(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set; TestKernel9P sets it along with %s", name, procEnv)
	}
	return v
}

// session is a /proc session a test made. Its directory stays open, which
// pins its dentry: its files are walked to from there, not through /proc,
// so they still reach the session after the retention time made /proc
// forget it (a test may read a finished session later than that).
type session struct {
	t    *testing.T
	name string
	path string // its directory, through /proc
	dir  *os.File
}

// newSession makes the session name (mkdir /proc/name); it is removed
// when the test ends.
func newSession(t *testing.T, name string) *session {
	t.Helper()
	s, err := openSession(procDir(t), name)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(func() {
		s.dir.Close()
		// Finished sessions may be gone already: the retention time.
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("rmdir %s: %v", s.path, err)
		}
	})
	return s
}

// openSession makes the session name in proc and opens its directory.
func openSession(proc, name string) (*session, error) {
	p := filepath.Join(proc, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, err
	}
	d, err := os.Open(p)
	if err != nil {
		os.Remove(p)
		return nil, err
	}
	return &session{name: name, path: p, dir: d}, nil
}

// open opens one of the session's files, relative to its directory.
func (s *session) open(name string, flags int) (*os.File, error) {
	fd, err := unix.Openat(int(s.dir.Fd()), name, flags|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: s.path + "/" + name, Err: err}
	}
	return os.NewFile(uintptr(fd), s.path+"/"+name), nil
}

// tryWrite writes data to one of the session's files as a shell's
// `echo data > file` does: one write after an O_TRUNC open.
func (s *session) tryWrite(name, data string) error {
	f, err := s.open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tryRead reads one of the session's files to its end.
func (s *session) tryRead(name string) (string, error) {
	f, err := s.open(name, os.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

func (s *session) write(name, data string) {
	s.t.Helper()
	must(s.t, fmt.Sprintf("write %q to %s/%s", data, s.name, name), s.tryWrite(name, data))
}

func (s *session) read(name string) string {
	s.t.Helper()
	out, err := s.tryRead(name)
	must(s.t, "read "+s.name+"/"+name, err)
	return out
}

// ctl writes verbs to ctl, one line each, in one write.
func (s *session) ctl(verbs ...string) {
	s.t.Helper()
	s.write("ctl", strings.Join(verbs, "\n")+"\n")
}

// status reads the session's status file.
func (s *session) status() procStatus {
	s.t.Helper()
	return s.decodeStatus("status", s.read("status"))
}

// wait reads the session's wait file once: it returns when the process has
// exited or waits for input, or at the yield time.
func (s *session) wait() procStatus {
	s.t.Helper()
	return s.decodeStatus("wait", s.read("wait"))
}

func (s *session) decodeStatus(name, data string) procStatus {
	s.t.Helper()
	var st procStatus
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		s.t.Fatalf("%s/%s: %v in %q", s.name, name, err, data)
	}
	return st
}

// waitEnd reads wait until the process has exited, for at most limit.
func (s *session) waitEnd(limit time.Duration) procStatus {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st := s.wait()
		if st.Status != "running" && st.Status != "waiting" && st.Status != "idle" {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not end within %v: %+v\noutput: %q", s.name, limit, st, s.read("tail"))
		}
	}
}

// run writes a command line to the interactive shell's stdin and returns
// its record from cmds/last/wait: once it ended or waits for input.
func (s *session) run(line string) cmdRecord {
	s.t.Helper()
	s.write("stdin", line+"\n")
	return s.waitRecord("last")
}

// waitRecord reads cmds/N/wait until record N ended or waits for input.
func (s *session) waitRecord(n string) cmdRecord {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data := s.read("cmds/" + n + "/wait")
		var r cmdRecord
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			s.t.Fatalf("%s/cmds/%s/wait: %v in %q", s.name, n, err, data)
		}
		if r.Status != "running" {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s/cmds/%s still running after 30s: %+v", s.name, n, r)
		}
	}
}

// names lists the session's directory.
func (s *session) names() []string {
	s.t.Helper()
	d, err := s.open(".", os.O_RDONLY|unix.O_DIRECTORY)
	must(s.t, "open "+s.path, err)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	must(s.t, "list "+s.path, err)
	slices.Sort(names)
	return names
}

// TestProc drives shell sessions through /proc. The sessions run on the
// host; their subtests run in parallel and mostly wait for them.
func TestProc(t *testing.T) {
	procDir(t)
	t.Parallel()
	t.Run("Interactive", testProcInteractive)
	t.Run("Exec", testProcExec)
	t.Run("OutputCap", testProcOutputCap)
	t.Run("Secret", testProcSecret)
	t.Run("Errors", testProcErrors)
	t.Run("AtomicSave", testProcAtomicSave)
	t.Run("Concurrent", testProcConcurrent)
	t.Run("Rmdir", testProcRmdir)
	t.Run("Retention", testProcRetention)
	t.Run("Stream", testProcStream)
	t.Run("Yield", testProcYield)
}

// An interactive shell keeps its directory and variables from one command
// line to the next; each line gets a record with its own output and exit
// code; the session waits between commands and while a command reads its
// terminal.
func testProcInteractive(t *testing.T) {
	t.Parallel()
	s := newSession(t, "interactive")
	lines := []struct {
		line, output string
		status       string
		exit         int
	}{
		{"cd /tmp", "", "completed", 0},
		{"X=42", "", "completed", 0},
		{"echo $X $PWD", "42 /tmp\n", "completed", 0},
		{"false", "", "failed", 1},
		{"true", "", "completed", 0},
	}
	var ns []int
	for _, l := range lines {
		r := s.run(l.line)
		ns = append(ns, r.N)
		if r.Input != l.line || r.Status != l.status || code(r.ExitCode) != strconv.Itoa(l.exit) || r.Output != l.output {
			t.Errorf("%q: cmds/last/wait got input %q, status %s, exit %s, output %q; want %q, %s, exit %d, output %q",
				l.line, r.Input, r.Status, code(r.ExitCode), r.Output, l.line, l.status, l.exit, l.output)
		}
	}
	// Each record keeps its own output and exit code.
	for i, l := range lines {
		dir := "cmds/" + strconv.Itoa(ns[i]) + "/"
		if got := s.read(dir + "input"); got != l.line+"\n" {
			t.Errorf("%sinput: got %q, want %q", dir, got, l.line+"\n")
		}
		if got := s.read(dir + "output"); got != l.output {
			t.Errorf("%soutput: got %q, want %q", dir, got, l.output)
		}
		if got := s.read(dir + "exit"); got != strconv.Itoa(l.exit)+"\n" {
			t.Errorf("%sexit: got %q, want %q", dir, got, strconv.Itoa(l.exit)+"\n")
		}
	}
	if got := s.wait(); got.Status != "waiting" {
		t.Errorf("wait at the prompt: got status %q, want waiting", got.Status)
	}
	if got := s.status(); got.Status != "waiting" || got.Pid <= 0 || got.ExitCode != nil {
		t.Errorf("status at the prompt: got %+v, want waiting with a pid and no exit code", got)
	}

	// A command that reads the terminal waits for input, and so does its
	// session; a line written then is its input, not a command.
	r := s.run("read x")
	if r.Status != "waiting" || r.ExitCode != nil {
		t.Errorf("read x: cmds/last/wait got status %s, exit %s; want waiting, null", r.Status, code(r.ExitCode))
	}
	if got := s.status(); got.Status != "waiting" {
		t.Errorf("status while read x waits: got %q, want waiting", got.Status)
	}
	s.write("stdin", "hello\n")
	if r = s.waitRecord(strconv.Itoa(r.N)); r.Status != "completed" || code(r.ExitCode) != "0" {
		t.Errorf("read x after its input: got status %s, exit %s; want completed, 0", r.Status, code(r.ExitCode))
	}
	if r := s.run("echo got=$x"); r.Output != "got=hello\n" {
		t.Errorf("echo got=$x: output %q, want %q", r.Output, "got=hello\n")
	}
}

// exec runs one command; wait reports how it ended: its exit code, the
// signal that killed it, or the timeout.
func testProcExec(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		verbs    []string
		status   string
		exit     string
		signal   string
		timedOut bool
	}{
		{"ok", []string{"exec echo hi"}, "completed", "0", "", false},
		{"exit7", []string{"exec exit 7"}, "failed", "7", "", false},
		{"term", []string{"exec kill -TERM $$"}, "killed", "null", "SIGTERM", false},
		{"timeout", []string{"timeout 1s", "exec sleep 30"}, "killed", "null", "SIGTERM", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, "exec-"+c.name)
			start := time.Now()
			s.ctl(append([]string{"yield 20s"}, c.verbs...)...)
			got := s.waitEnd(20 * time.Second)
			if got.Status != c.status || code(got.ExitCode) != c.exit || got.Signal != c.signal || got.TimedOut != c.timedOut {
				t.Errorf("wait: got status %s, exitCode %s, signal %q, timedOut %v; want %s, %s, %q, %v",
					got.Status, code(got.ExitCode), got.Signal, got.TimedOut, c.status, c.exit, c.signal, c.timedOut)
			}
			if c.timedOut {
				if took := time.Since(start); took > 15*time.Second {
					t.Errorf("the 1s timeout ended sleep 30 after %v", took)
				}
			}
			if got := s.status(); got.Status != c.status {
				t.Errorf("status after wait: got %q, want %q", got.Status, c.status)
			}
		})
	}
}

// Output past the cap drops the head: stdout's size counts every byte,
// reading it gives the kept tail, and status says it is truncated.
func testProcOutputCap(t *testing.T) {
	t.Parallel()
	limit, err := strconv.Atoi(procSetting(t, procOutputEnv))
	must(t, procOutputEnv, err)
	s := newSession(t, "cap")
	// 5,000 numbered fields of 10 bytes, no newline for the terminal to
	// turn into \r\n.
	var want strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&want, "%09d,", i)
	}
	s.ctl("yield 20s", `exec awk 'BEGIN { for (i = 1; i <= 5000; i++) printf "%09d,", i }'`)
	st := s.waitEnd(20 * time.Second)
	total := int64(want.Len())
	if st.Status != "completed" || st.OutputBytes != total || !st.Truncated {
		t.Errorf("wait: got status %s, outputBytes %d, truncated %v; want completed, %d, true", st.Status, st.OutputBytes, st.Truncated, total)
	}
	var fi unix.Stat_t
	must(t, "stat stdout", unix.Fstatat(int(s.dir.Fd()), "stdout", &fi, 0))
	if fi.Size != total {
		t.Errorf("stdout's size: got %d, want %d", fi.Size, total)
	}
	// One line longer than the cap: its head is cut inside it, and a
	// marker line counting the bytes dropped comes first.
	got := s.read("stdout")
	var dropped int
	first, rest, _ := strings.Cut(got, "\n")
	if _, err := fmt.Sscanf(first, "[gsvfs: %d bytes truncated]", &dropped); err != nil ||
		dropped+len(rest) != want.Len() || rest != want.String()[dropped:] || len(rest) > limit {
		t.Errorf("stdout: got %d bytes %.40q...%q; want a marker line, then at most the last %d bytes",
			len(got), got, got[max(0, len(got)-20):], limit)
	}
	tail := want.String()[want.Len()-4000:]
	if got, want := s.read("tail"), tail; got != want {
		t.Errorf("tail: got %d bytes ending %q; want %d ending %q", len(got), got[max(0, len(got)-20):], len(want), want[len(want)-20:])
	}
}

// No session sees the daemon's environment beyond the allow-list.
func testProcSecret(t *testing.T) {
	t.Parallel()
	secret := procSetting(t, procSecretEnv)
	s := newSession(t, "secret")
	s.ctl("yield 20s", "exec env")
	if st := s.waitEnd(20 * time.Second); st.Status != "completed" {
		t.Errorf("exec env: got status %s, want completed", st.Status)
	}
	for _, name := range []string{"env", "stdout"} {
		got := s.read(name)
		if !strings.Contains(got, "PATH=") {
			t.Errorf("%s has no PATH=: %q", name, got)
		}
		if strings.Contains(got, secret) {
			t.Errorf("%s shows the daemon's secret %q:\n%s", name, secret, got)
		}
	}
}

// A failing ctl verb fails its write with an errno, and status says why;
// so do stdin and ctl once the process has ended.
func testProcErrors(t *testing.T) {
	t.Parallel()
	s := newSession(t, "errors")
	writes := []struct {
		file, data string
		ended      bool // written once the process has ended
		want       syscall.Errno
		reason     string // in lastError after a failed write
	}{
		{"ctl", "frobnicate now\n", false, syscall.EINVAL, "frobnicate"},
		{"ctl", "timeout soon\n", false, syscall.EINVAL, "soon"},
		{"ctl", "resize 0 80\n", false, syscall.EINVAL, "resize"},
		{"ctl", "yield 20s\nexec exit 3\n", false, 0, ""},
		{"stdin", "echo too late\n", true, syscall.EPIPE, ""},
		{"ctl", "exec true\n", true, syscall.EBUSY, "exec"},
		{"ctl", "signal TERM\n", true, syscall.ESRCH, "signal"},
	}
	ended := false
	for _, w := range writes {
		if w.ended && !ended {
			if st := s.waitEnd(20 * time.Second); code(st.ExitCode) != "3" {
				t.Fatalf("exec exit 3: got %+v, want exit code 3", st)
			}
			ended = true
		}
		wantErrno(t, fmt.Sprintf("write %q to %s", w.data, w.file), s.tryWrite(w.file, w.data), w.want)
		if w.want == 0 {
			continue
		}
		if st := s.status(); st.LastError == "" || !strings.Contains(st.LastError, w.reason) {
			t.Errorf("write %q to %s: lastError %q, want one about %q", w.data, w.file, st.LastError, w.reason)
		}
	}
}

// An agent's atomic save of stdin or ctl (a temp file in the session's
// directory renamed over it) acts as a write of its bytes and leaves no
// temp file behind.
func testProcAtomicSave(t *testing.T) {
	t.Parallel()
	cases := []struct {
		target, data, want string
	}{
		{"stdin", "echo saved-$((1+1))\n", "saved-2\n"},
		{"ctl", "yield 20s\nexec echo via-ctl\n", "via-ctl\n"},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, "save-"+c.target)
			tmp := "." + c.target + ".tmp-" + strconv.Itoa(os.Getpid())
			f, err := s.open(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
			must(t, "create "+tmp, err)
			_, err = f.Write([]byte(c.data))
			must(t, "write "+tmp, err)
			must(t, "close "+tmp, f.Close())
			if got := s.names(); !slices.Contains(got, tmp) {
				t.Errorf("listing before the rename: got %q, want %s in it", got, tmp)
			}
			fd := int(s.dir.Fd())
			must(t, "rename "+tmp+" over "+c.target, unix.Renameat(fd, tmp, fd, c.target))
			var got string
			if c.target == "stdin" {
				got = s.waitRecord("last").Output
			} else {
				s.waitEnd(20 * time.Second)
				got = s.read("stdout")
			}
			if got != c.want {
				t.Errorf("output after the save: got %q, want %q", got, c.want)
			}
			if got := s.names(); !slices.Equal(got, sessionFiles) {
				t.Errorf("listing after the rename: got %q, want %q", got, sessionFiles)
			}
		})
	}
}

// A hundred sessions at once, each with its own output; rmdir ends them.
func testProcConcurrent(t *testing.T) {
	t.Parallel()
	proc := procDir(t)
	const n = 100
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			if err := concurrentSession(proc, fmt.Sprintf("many-%03d", i), i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	t.Logf("%d sessions: %v", n, time.Since(start).Round(time.Millisecond))
	ents, err := os.ReadDir(proc)
	must(t, "list "+proc, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "many-") {
			t.Errorf("%s is still in %s after its rmdir", e.Name(), proc)
		}
	}
}

// concurrentSession makes a session that echoes i, checks its output and
// removes it.
func concurrentSession(proc, name string, i int) error {
	s, err := openSession(proc, name)
	if err != nil {
		return err
	}
	defer s.dir.Close()
	if err := s.tryWrite("ctl", fmt.Sprintf("yield 60s\nexec echo %d\n", i)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	data, err := s.tryRead("wait")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var st procStatus
	if err := json.Unmarshal([]byte(data), &st); err != nil || st.Status != "completed" {
		return fmt.Errorf("%s/wait: got %q (%v), want status completed", name, data, err)
	}
	out, err := s.tryRead("stdout")
	if want := fmt.Sprintf("%d\n", i); err != nil || out != want {
		return fmt.Errorf("%s/stdout: got %q, %v; want %q", name, out, err, want)
	}
	// The session may be forgotten already: the retention time passed.
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// rmdir of a session kills everything it runs, background jobs too. Here
// the guest checks that the sessions are gone; TestKernel9P checks on the
// host that none of their processes is left.
func testProcRmdir(t *testing.T) {
	t.Parallel()
	pidsFile := procSetting(t, procPidsEnv)
	bg := regexp.MustCompile(`bg=([0-9]+)`)
	// A one-shot command with a background job, and an interactive
	// shell with one (in its own process group: job control).
	oneShot := newSession(t, "rmdir-exec")
	oneShot.ctl("yield 2s", "exec sleep 1000 & echo bg=$!; sleep 1000")
	shell := newSession(t, "rmdir-shell")
	shell.ctl("yield 2s")
	shell.write("stdin", "sleep 1000 &\n")
	if r := shell.run("echo bg=$!"); !bg.MatchString(r.Output) {
		t.Errorf("echo bg=$!: output %q, want bg=PID", r.Output)
	}
	shell.write("stdin", "sleep 1000\n")

	pids, err := os.OpenFile(pidsFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	must(t, "open "+pidsFile, err)
	defer pids.Close()
	for _, s := range []*session{oneShot, shell} {
		deadline := time.Now().Add(20 * time.Second)
		out := s.read("stdout")
		for !bg.MatchString(out) && time.Now().Before(deadline) {
			s.wait() // returns on output, at the latest after the yield time
			out = s.read("stdout")
		}
		st := s.status()
		if st.Status != "running" || st.Pid <= 0 || !bg.MatchString(out) {
			t.Errorf("%s before rmdir: got %+v, output %q; want it running, with a pid and bg=PID", s.name, st, out)
		}
		// Written before the rmdir, so that the host kills what a
		// failed one leaves.
		_, err := fmt.Fprintf(pids, "%s %d\n", s.name, st.Pid)
		must(t, "write "+pidsFile, err)
		start := time.Now()
		must(t, "rmdir "+s.path, os.Remove(s.path))
		t.Logf("rmdir %s (pid %d, %s): %v", s.name, st.Pid, bg.FindString(out), time.Since(start).Round(time.Millisecond))
		if _, err := os.Lstat(s.path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("lstat %s after rmdir: got %v, want ENOENT", s.path, err)
		}
	}
}

// A finished session is forgotten after the retention time.
func testProcRetention(t *testing.T) {
	t.Parallel()
	retention, err := time.ParseDuration(procSetting(t, procRetentionEnv))
	must(t, procRetentionEnv, err)
	proc := procDir(t)
	s := newSession(t, "retention")
	start := time.Now()
	s.ctl("yield 20s", "exec true")
	if st := s.waitEnd(20 * time.Second); st.Status != "completed" {
		t.Fatalf("exec true: got %+v, want completed", st)
	}
	// The open directory would keep its name resolving.
	s.dir.Close()
	deadline := time.Now().Add(retention + 15*time.Second)
	for {
		ents, err := os.ReadDir(proc)
		must(t, "list "+proc, err)
		if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == s.name }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still listed %v after it ended; retention is %v", s.name, time.Since(start).Round(time.Millisecond), retention)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// It ended after the exec was written: it cannot be gone sooner
	// than the retention time after that (10% for the two clocks).
	if gone := time.Since(start); gone < retention*9/10 {
		t.Errorf("%s was gone %v after its exec; retention is %v", s.name, gone, retention)
	}
	if _, err := os.Lstat(s.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lstat %s once unlisted: got %v, want ENOENT", s.path, err)
	}
}

// A read of stream waits for output: it gets all of it, then EOF when the
// process has exited.
func testProcStream(t *testing.T) {
	t.Parallel()
	s := newSession(t, "stream")
	s.ctl("yield 20s", "exec for i in 1 2 3; do echo s$i; sleep 0.2; done")
	got := s.read("stream")
	if want := "s1\ns2\ns3\n"; got != want {
		t.Errorf("stream: got %q, want %q", got, want)
	}
	if st := s.status(); st.Status != "completed" {
		t.Errorf("status at the stream's EOF: got %q, want completed", st.Status)
	}
}

// Blocking reads end at the yield time: wait returns the status of a
// command still running, and a stream read with no output returns empty.
func testProcYield(t *testing.T) {
	t.Parallel()
	s := newSession(t, "yield")
	s.ctl("yield 1s", "exec sleep 30")
	for _, name := range []string{"wait", "stream"} {
		start := time.Now()
		got := s.read(name)
		took := time.Since(start)
		t.Logf("read %s: %v", name, took.Round(time.Millisecond))
		if took < 900*time.Millisecond || took > 10*time.Second {
			t.Errorf("read %s with yield 1s took %v, want about 1s", name, took.Round(time.Millisecond))
		}
		if name == "stream" {
			if got != "" {
				t.Errorf("stream of a quiet command: got %q, want nothing", got)
			}
			continue
		}
		if st := s.decodeStatus(name, got); st.Status != "running" || st.ExitCode != nil {
			t.Errorf("wait at the yield time: got status %s, exit %s; want running, null", st.Status, code(st.ExitCode))
		}
	}
}
