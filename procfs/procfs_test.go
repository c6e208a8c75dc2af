package procfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// These tests drive the /proc tree directly over vfs.Node, as an edge
// does, with sessions running /bin/sh and a clock of their own for
// retention. Waits for processes are bounded by hangBound, never sleeps.

const hangBound = 10 * time.Second

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newFS returns a /proc tree over a fresh Manager, both on one fake
// clock, with sessions running /bin/sh in a temp directory.
func newFS(t *testing.T, cfg shelld.Config, opts Options) (*FS, *testenv.Clock) {
	t.Helper()
	clock := testenv.NewClock(epoch)
	cfg.Clock = clock.Now
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if cfg.Workdir == "" {
		cfg.Workdir = t.TempDir()
	}
	mgr := shelld.NewManager(cfg)
	t.Cleanup(mgr.Close)
	return New(mgr, opts), clock
}

var bg = context.Background()

// walk looks up a path of names from n.
func walk(t *testing.T, n vfs.Node, names ...string) vfs.Node {
	t.Helper()
	for _, name := range names {
		next, err := n.Lookup(bg, name)
		if err != nil {
			t.Fatalf("lookup %s: %v", strings.Join(names, "/"), err)
		}
		n = next
	}
	return n
}

// read reads a file to its end (or to an empty read).
func read(t *testing.T, n vfs.Node) string {
	t.Helper()
	h, err := n.Open(bg, os.O_RDONLY)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer h.Close()
	var b []byte
	buf := make([]byte, 4096)
	for {
		k, err := h.ReadAt(bg, buf, int64(len(b)))
		b = append(b, buf[:k]...)
		if errors.Is(err, io.EOF) || (err == nil && k == 0) {
			return string(b)
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

// write opens n for writing, writes p as one write and closes it as an
// edge does (a flush, whose error is close's, then the release).
func write(n vfs.Node, p string) error {
	return writes(n, p)
}

// writes is write with one write for each part.
func writes(n vfs.Node, parts ...string) error {
	h, err := n.Open(bg, os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, p := range parts {
		k, err := h.WriteAt(bg, []byte(p), 0)
		if err == nil && k != len(p) {
			err = errors.New("short write")
		}
		if err != nil {
			return err
		}
	}
	if fl, ok := h.(vfs.Flusher); ok {
		return fl.Flush(bg)
	}
	return nil
}

func list(t *testing.T, n vfs.Node) []string {
	t.Helper()
	h, err := n.Open(bg, os.O_RDONLY)
	if err != nil {
		t.Fatalf("open dir: %v", err)
	}
	defer h.Close()
	ents, err := h.(vfs.DirReader).ReadDir(bg, 0)
	if err != nil {
		t.Fatalf("readdir: %v", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	return names
}

func mkdir(t *testing.T, f *FS, name string) vfs.Node {
	t.Helper()
	n, err := f.Root().Mkdir(bg, name, 0o755)
	if err != nil {
		t.Fatalf("mkdir %s: %v", name, err)
	}
	return n
}

func status(t *testing.T, dir vfs.Node) shelld.Status {
	t.Helper()
	var st shelld.Status
	data := read(t, walk(t, dir, "status"))
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		t.Fatalf("status %q: %v", data, err)
	}
	return st
}

type summaryJSON struct {
	Sessions, Live, MaxLive int
	LastError               string
}

func summary(t *testing.T, f *FS) summaryJSON {
	t.Helper()
	var s summaryJSON
	data := read(t, walk(t, f.Root(), "status"))
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		t.Fatalf("/proc/status %q: %v", data, err)
	}
	return s
}

// wantLastError fails the test unless the lastError of the session in
// dir, when (a phrase such as "after a bad save") says, mentions want.
func wantLastError(t *testing.T, dir vfs.Node, when, want string) {
	t.Helper()
	if last := session(dir).Status().LastError; !strings.Contains(last, want) {
		t.Errorf("lastError %s: %q, want it to mention %q", when, last, want)
	}
}

// session is the shelld session behind a session directory.
func session(dir vfs.Node) *shelld.Session { return dir.(*sessionDir).s }

// done waits until the session's process has exited.
func done(t *testing.T, dir vfs.Node) shelld.Status {
	t.Helper()
	s := session(dir)
	select {
	case <-s.Done():
	case <-time.After(hangBound):
		t.Fatalf("session %s still running after %v: %+v", s.ID(), hangBound, s.Status())
	}
	return s.Status()
}

func ended(st shelld.Status) bool {
	return st.Status == shelld.Completed || st.Status == shelld.Failed || st.Status == shelld.Killed
}

func errName(err error) string {
	if e := vfs.Errno(err); e != 0 {
		return e.Error()
	}
	return "ok"
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := vfs.Errno(err); got != want {
		t.Errorf("%s: got %s (%v), want %s", what, errName(err), err, errName(want))
	}
}

// eventually polls cond until it holds or hangBound passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, hangBound, what, cond)
}

// A finished session is forgotten once the retention time has passed on
// the clock, and not a nanosecond before; unfinished ones stay.
func TestReapAfterRetention(t *testing.T) {
	const retention = 10 * time.Minute
	f, clock := newFS(t, shelld.Config{Retention: retention}, Options{})
	idle := mkdir(t, f, "idle")
	fin := mkdir(t, f, "finished")
	if err := write(walk(t, fin, "ctl"), "exec true\n"); err != nil {
		t.Fatal(err)
	}
	st := done(t, fin)
	if !st.EndedAt.Equal(epoch) {
		t.Fatalf("ended at %v, want the fake clock's %v", st.EndedAt, epoch)
	}
	// An open file holds the idle session, its directory too: it does
	// not expire.
	h, err := idle.Open(bg, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if ents, err := h.(vfs.DirReader).ReadDir(bg, 0); err != nil || len(ents) == 0 {
		t.Fatalf("listing the held directory: %v, %v", ents, err)
	}
	clock.Set(epoch.Add(retention - time.Nanosecond))
	if _, err := f.Root().Lookup(bg, "finished"); err != nil {
		t.Errorf("lookup just before the retention time: %v", err)
	}
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "finished", "idle"}) {
		t.Errorf("/proc just before the retention time lists %q", names)
	}
	clock.Set(epoch.Add(retention))
	_, err = f.Root().Lookup(bg, "finished")
	wantErrno(t, "lookup at the retention time", err, syscall.ENOENT)
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "idle"}) {
		t.Errorf("/proc at the retention time lists %q", names)
	}
	if s := summary(t, f); s.Sessions != 1 || s.Live != 1 {
		t.Errorf("/proc/status after the reap: %+v", s)
	}
	f.mu.Lock()
	_, kept := f.views[session(fin)]
	f.mu.Unlock()
	if kept {
		t.Errorf("the reaped session's directory is still held")
	}
	// Held for a long time, the idle session stays; let go, it expires
	// at once, its idle time long past (Reap alone, the daemon's
	// ticker, forgets it too). Reads of it meanwhile changed nothing.
	clock.Set(epoch.Add(100 * retention))
	f.Reap()
	if _, err := f.Root().Lookup(bg, "idle"); err != nil || status(t, idle).Status != shelld.Idle {
		t.Errorf("held idle session after a long time: %v", err)
	}
	read(t, walk(t, idle, "status"))
	h.Close()
	f.Reap()
	_, err = f.Root().Lookup(bg, "idle")
	wantErrno(t, "idle session let go after the idle time", err, syscall.ENOENT)
	// A session forgotten while a ctl of it was open never starts.
	err = write(walk(t, idle, "ctl"), "exec true\n")
	wantErrno(t, "exec in a forgotten session", err, syscall.ENOENT)
}

// A session made by clone goes the clone grace after clone is closed,
// unless its ctl or stdin was opened; then it goes after the idle time,
// and a change by ctl restarts that.
func TestCloneGrace(t *testing.T) {
	const idle, grace = 10 * time.Minute, time.Minute
	f, clock := newFS(t, shelld.Config{Idle: idle}, Options{CloneGrace: grace})
	clone := walk(t, f.Root(), "clone")
	if got := read(t, clone); got != "1\n" { // closed at once: the grace
		t.Fatalf("clone gave %q", got)
	}
	held, err := clone.Open(bg, os.O_RDONLY) // 2, open
	if err != nil {
		t.Fatal(err)
	}
	read(t, clone) // 3: claimed by ctl after its close
	if err := write(walk(t, f.Root(), "3", "ctl"), "env A=1\n"); err != nil {
		t.Fatal(err)
	}
	claimed, err := clone.Open(bg, os.O_RDONLY) // 4: claimed while open
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := walk(t, f.Root(), "4", "stdin").Open(bg, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	claimed.Close()
	mkdir(t, f, "named")
	clock.Set(epoch.Add(grace / 2))
	read(t, walk(t, f.Root(), "1", "status")) // a read does not claim it
	clock.Set(epoch.Add(grace))
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "2", "3", "4", "named"}) {
		t.Errorf("/proc at the clone grace lists %q, want 1 gone", names)
	}
	held.Close()
	clock.Set(epoch.Add(2*grace - time.Nanosecond))
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "2", "3", "4", "named"}) {
		t.Errorf("/proc just before the grace after the close of 2 lists %q", names)
	}
	clock.Set(epoch.Add(2 * grace))
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "3", "4", "named"}) {
		t.Errorf("/proc at the grace after the close of 2 lists %q", names)
	}
	if err := write(walk(t, f.Root(), "named", "ctl"), "env B=2\n"); err != nil {
		t.Fatal(err)
	}
	clock.Set(epoch.Add(idle))
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "named"}) {
		t.Errorf("/proc at the idle time lists %q, want the claimed clones gone", names)
	}
	clock.Set(epoch.Add(2*grace + idle))
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status"}) {
		t.Errorf("/proc at the idle time after the last ctl write lists %q", names)
	}
}

// Opened with O_NONBLOCK (as grep -r opens files), wait and stream of a
// running session answer at once whatever the yield time.
func TestNonblockingReads(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	dir := mkdir(t, f, "s")
	if err := write(walk(t, dir, "ctl"), "yield 1h\nexec sleep 60\n"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wait", "stream"} {
		h, err := walk(t, dir, name).Open(bg, os.O_RDONLY|syscall.O_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, hangBound)
		buf := make([]byte, 4096)
		n, err := h.ReadAt(ctx, buf, 0)
		late := ctx.Err()
		cancel()
		h.Close()
		if late != nil || (err != nil && !errors.Is(err, io.EOF)) {
			t.Fatalf("nonblocking read of %s: %v, %v", name, err, late)
		}
		if name == "wait" && !strings.Contains(string(buf[:n]), `"status":"running"`) {
			t.Errorf("nonblocking wait read %q", buf[:n])
		}
	}
}

// Every ctl verb, with good and bad arguments, in the states where it
// works and where it does not: the errno of the write, lastError, and
// what the verb did.
func TestCtlVerbs(t *testing.T) {
	work := t.TempDir()
	app := filepath.Join(work, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(work, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := newFS(t, shelld.Config{}, Options{Resolve: func(_ context.Context, p string) (string, error) {
		if rest, ok := strings.CutPrefix(p, "/workspaces"); ok {
			return work + rest, nil
		}
		return p, nil
	}})
	run := func(t *testing.T, dir vfs.Node, verbs string) {
		t.Helper()
		if err := write(walk(t, dir, "ctl"), verbs); err != nil {
			t.Fatalf("ctl %q: %v", verbs, err)
		}
	}
	before := map[string]func(t *testing.T, dir vfs.Node){
		"":      func(*testing.T, vfs.Node) {},
		"ended": func(t *testing.T, dir vfs.Node) { run(t, dir, "exec true"); done(t, dir) },
		"shell": func(t *testing.T, dir vfs.Node) { run(t, dir, "start") },
		"sleep": func(t *testing.T, dir vfs.Node) { run(t, dir, "exec sleep 30") },
	}
	tests := []struct {
		before, ctl string
		errno       syscall.Errno
		why         string                                // in lastError
		check       func(t *testing.T, dir vfs.Node) bool // what the verb did
	}{
		{"", "exec echo hi", 0, "", func(t *testing.T, dir vfs.Node) bool {
			st := done(t, dir)
			return st.Command == "echo hi" && st.Status == shelld.Completed && read(t, walk(t, dir, "stdout")) == "hi\n"
		}},
		{"", "exec", syscall.EINVAL, "needs an argument", nil},
		{"", "exec   ", syscall.EINVAL, "needs an argument", nil},
		{"ended", "exec true", syscall.EBUSY, "already runs", nil},
		{"shell", "exec true", syscall.EBUSY, "already runs", nil},
		{"", "start", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return status(t, dir).Command == "sh" && read(t, walk(t, dir, "cmdline")) == "/bin/sh -l\n"
		}},
		{"", "start now", syscall.EINVAL, `takes no argument, got "now"`, nil},
		{"shell", "start", syscall.EBUSY, "already runs", nil},
		{"", "cwd " + app, 0, "", func(t *testing.T, dir vfs.Node) bool { return cwdOf(t, dir) == app }},
		{"", "cwd /workspaces/app", 0, "", func(t *testing.T, dir vfs.Node) bool { return cwdOf(t, dir) == app }},
		{"", "cwd /workspaces/x/../app/", 0, "", func(t *testing.T, dir vfs.Node) bool { return cwdOf(t, dir) == app }},
		{"", "cwd relative", syscall.ENOENT, "relative", nil},
		{"", "cwd /workspaces\ncwd app", 0, "", func(t *testing.T, dir vfs.Node) bool { return cwdOf(t, dir) == app }},
		{"", "cwd /workspaces/app\ncwd ..\ncwd ./app/", 0, "", func(t *testing.T, dir vfs.Node) bool { return cwdOf(t, dir) == app }},
		{"", "cwd ~user", syscall.EINVAL, "only ~ and ~/", nil},
		{"", "cwd /workspaces/none\nexec echo ran", syscall.ENOENT, "none", func(t *testing.T, dir vfs.Node) bool {
			return status(t, dir).Status == shelld.Idle
		}},
		{"", "env A=1\ncwd /workspaces/none", syscall.ENOENT, "none", func(t *testing.T, dir vfs.Node) bool {
			// Nothing of a failed write takes effect, and the session
			// starts nothing until a cwd succeeds.
			err := write(walk(t, dir, "ctl"), "exec echo ran")
			return !strings.Contains(read(t, walk(t, dir, "env")), "A=1") && vfs.Errno(err) == syscall.ENOENT &&
				status(t, dir).Status == shelld.Idle && strings.Contains(status(t, dir).LastError, "the last cwd failed")
		}},
		{"", "exec true\ncwd /workspaces/app", syscall.EBUSY, "already runs", func(t *testing.T, dir vfs.Node) bool {
			return status(t, dir).Status == shelld.Idle
		}},
		{"", "cwd /workspaces/none", syscall.ENOENT, "none", nil},
		{"", "cwd " + file, syscall.ENOTDIR, "file", nil},
		{"shell", "cwd /", syscall.EBUSY, "already runs", nil},
		{"", "env A=1 2", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return strings.Contains(read(t, walk(t, dir, "env")), "\nA=1 2\n")
		}},
		{"", "env A=", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return strings.Contains(read(t, walk(t, dir, "env")), "\nA=\n")
		}},
		{"", "env NOVALUE", syscall.EINVAL, "want NAME=VALUE", nil},
		{"", "env =x", syscall.EINVAL, "want NAME=VALUE", nil},
		{"", "env 1A=x", syscall.EINVAL, "want NAME=VALUE", nil},
		{"shell", "env A=1", syscall.EBUSY, "already runs", nil},
		{"", "timeout 30s", 0, "", nil},
		{"", "timeout 1.5", 0, "", nil},
		{"", "timeout 0", 0, "", nil},
		{"", "timeout soon", syscall.EINVAL, `bad duration "soon"`, nil},
		{"", "timeout -1s", syscall.EINVAL, `bad duration "-1s"`, nil},
		{"", "timeout -1", syscall.EINVAL, `bad duration "-1"`, nil},
		{"", "timeout 1e10", syscall.EINVAL, `bad duration "1e10"`, nil},
		{"", "timeout inf", syscall.EINVAL, `bad duration "inf"`, nil},
		{"", "timeout 0.2\nexec sleep 30", 0, "", func(t *testing.T, dir vfs.Node) bool {
			st := done(t, dir)
			return st.TimedOut && st.Status == shelld.Killed && st.Signal == "SIGTERM"
		}},
		{"", "yield 250ms", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return dir.(*sessionDir).yieldTime() == 250*time.Millisecond
		}},
		{"", "yield 7\nyield 0", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return dir.(*sessionDir).yieldTime() == DefaultYield
		}},
		{"", "yield 1h", 0, "", nil},
		{"", "yield 2h", syscall.EINVAL, "longer than", nil},
		{"", "yield 1e10", syscall.EINVAL, `bad duration "1e10"`, nil},
		{"", "yield x", syscall.EINVAL, `bad duration "x"`, nil},
		{"sleep", "signal TERM", 0, "", func(t *testing.T, dir vfs.Node) bool {
			st := done(t, dir)
			return st.Status == shelld.Killed && st.Signal == "SIGTERM"
		}},
		{"sleep", "signal SIGUSR1", 0, "", func(t *testing.T, dir vfs.Node) bool { return done(t, dir).Signal == "SIGUSR1" }},
		{"sleep", "signal 9", 0, "", func(t *testing.T, dir vfs.Node) bool { return done(t, dir).Signal == "SIGKILL" }},
		{"", "signal TERM", syscall.ESRCH, "runs no process", nil},
		{"ended", "signal TERM", syscall.ESRCH, "runs no process", nil},
		{"sleep", "signal NOPE", syscall.EINVAL, `unknown signal "NOPE"`, nil},
		{"sleep", "signal", syscall.EINVAL, `unknown signal ""`, nil},
		{"sleep", "kill", 0, "", func(t *testing.T, dir vfs.Node) bool {
			// kill waits: the process is gone when the write returns.
			st := session(dir).Status()
			return st.Status == shelld.Killed && st.Signal == "SIGKILL"
		}},
		{"", "kill", 0, "", func(t *testing.T, dir vfs.Node) bool { return status(t, dir).Status == shelld.Idle }},
		{"ended", "kill", 0, "", nil},
		{"sleep", "kill -9", syscall.EINVAL, "takes no argument", nil},
		{"shell", "eof", 0, "", func(t *testing.T, dir vfs.Node) bool { return done(t, dir).Status == shelld.Completed }},
		{"", "eof", syscall.ESRCH, "runs no process", nil},
		{"ended", "eof", syscall.EPIPE, "has exited", nil},
		{"shell", "eof x", syscall.EINVAL, "takes no argument", nil},
		{"", "resize 30 100", 0, "", func(t *testing.T, dir vfs.Node) bool {
			run(t, dir, "exec stty size")
			done(t, dir)
			return read(t, walk(t, dir, "stdout")) == "30 100\n"
		}},
		{"shell", "resize 50 132", 0, "", nil},
		{"", "resize 0 80", syscall.EINVAL, "want ROWS COLS", nil},
		{"", "resize 30", syscall.EINVAL, "want ROWS COLS", nil},
		{"", "resize a b", syscall.EINVAL, "want ROWS COLS", nil},
		{"", "resize 70000 80", syscall.EINVAL, "want ROWS COLS", nil},
		{"ended", "resize 30 100", syscall.EPIPE, "has exited", nil},
		{"", "bogus", syscall.EINVAL, `unknown verb "bogus"`, nil},
		{"", "EXEC true", syscall.EINVAL, `unknown verb "EXEC"`, nil},
		{"", "\n\n# comment\n   \n", 0, "", nil},
		{"", "  env SPACED=1  \n", 0, "", func(t *testing.T, dir vfs.Node) bool {
			return strings.Contains(read(t, walk(t, dir, "env")), "\nSPACED=1\n")
		}},
		{"", "env A=1\r\nenv B=2", 0, "", func(t *testing.T, dir vfs.Node) bool {
			env := read(t, walk(t, dir, "env"))
			return strings.Contains(env, "\nA=1\n") && strings.Contains(env, "\nB=2\n")
		}},
		// The first failing verb fails the write; those before it ran,
		// those after it did not.
		{"", "env GOOD=1\nnope\nenv LATER=1\n", syscall.EINVAL, `unknown verb "nope"`, func(t *testing.T, dir vfs.Node) bool {
			env := read(t, walk(t, dir, "env"))
			return !strings.Contains(env, "GOOD=1") && !strings.Contains(env, "LATER=1")
		}},
	}
	for i, tc := range tests {
		dir := mkdir(t, f, fmt.Sprintf("v%03d", i))
		before[tc.before](t, dir)
		err := write(walk(t, dir, "ctl"), tc.ctl)
		if got := vfs.Errno(err); got != tc.errno {
			t.Errorf("%s: ctl %q: got %s (%v), want %s", tc.before, tc.ctl, errName(err), err, errName(tc.errno))
			continue
		}
		last := session(dir).Status().LastError
		if tc.errno != 0 && !strings.Contains(last, tc.why) {
			t.Errorf("%s: ctl %q: lastError %q, want it to say %q", tc.before, tc.ctl, last, tc.why)
		}
		if tc.errno != 0 && !strings.HasPrefix(last, "ctl") {
			t.Errorf("%s: ctl %q: lastError %q, want it to name the verb", tc.before, tc.ctl, last)
		}
		if tc.check != nil && !tc.check(t, dir) {
			t.Errorf("%s: ctl %q did not do its work: status %+v", tc.before, tc.ctl, session(dir).Status())
		}
	}
}

func cwdOf(t *testing.T, dir vfs.Node) string {
	t.Helper()
	target, err := walk(t, dir, "cwd").(vfs.Readlinker).Readlink(bg)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// Temp files beside stdin and ctl: renamed over them they act as one
// write and go away; over other files, or failing, they stay.
func TestTempFiles(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	other := mkdir(t, f, "other")
	dir := mkdir(t, f, "t")
	fixed := []string{"cmdline", "cmds", "ctl", "cwd", "env", "screen", "status", "stderr", "stdin", "stdout", "stream", "tail", "wait"}
	temp := func(name, data string) vfs.Node {
		t.Helper()
		n, h, err := dir.Create(bg, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := h.WriteAt(bg, []byte(data), 0); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if s, ok := h.(vfs.Syncer); ok {
			if err := s.Sync(bg); err != nil {
				t.Errorf("fsync %s: %v", name, err)
			}
		}
		h.Close()
		return n
	}
	listed := func(want ...string) {
		t.Helper()
		all := append(slices.Clone(fixed), want...)
		if got := list(t, dir); !slices.Equal(got, all) {
			t.Errorf("listing: %q, want %q", got, all)
		}
	}

	// Over ctl: the verbs run, the temp file is gone.
	temp(".ctl.1", "env SAVED=1\nresize 40 120\n")
	if err := dir.Rename(bg, ".ctl.1", dir, "ctl"); err != nil {
		t.Fatalf("rename over ctl: %v", err)
	}
	if env := read(t, walk(t, dir, "env")); !strings.Contains(env, "SAVED=1\n") {
		t.Errorf("env after a save over ctl:\n%s", env)
	}
	_, err := dir.Lookup(bg, ".ctl.1")
	wantErrno(t, "lookup of the temp file after its rename", err, syscall.ENOENT)
	listed()

	// A bad verb fails the rename as it fails a write; the temp stays.
	temp(".ctl.2", "bogus\n")
	wantErrno(t, "rename of a bad ctl save", dir.Rename(bg, ".ctl.2", dir, "ctl"), syscall.EINVAL)
	wantLastError(t, dir, "after a bad save", `unknown verb "bogus"`)
	listed(".ctl.2")
	if err := dir.Remove(bg, ".ctl.2", false); err != nil {
		t.Errorf("unlink of a temp file: %v", err)
	}
	listed()

	// Over other session files: EPERM, and the temp stays.
	temp("x.tmp", "data")
	for _, to := range []string{"stdout", "status", "wait", "cmds", "cwd"} {
		wantErrno(t, "rename over "+to, dir.Rename(bg, "x.tmp", dir, to), syscall.EPERM)
	}
	// Between temp names: a plain move, the bytes with it.
	if err := dir.Rename(bg, "x.tmp", dir, "y.tmp"); err != nil {
		t.Errorf("rename between temp names: %v", err)
	}
	if got := read(t, walk(t, dir, "y.tmp")); got != "data" {
		t.Errorf("moved temp file holds %q", got)
	}
	if err := dir.Rename(bg, "y.tmp", dir, "y.tmp"); err != nil {
		t.Errorf("rename onto itself: %v", err)
	}
	listed("y.tmp")
	wantErrno(t, "rename of a session file", dir.Rename(bg, "stdin", dir, "z"), syscall.EPERM)
	wantErrno(t, "rename of a missing name", dir.Rename(bg, "nope", dir, "stdin"), syscall.ENOENT)
	wantErrno(t, "rename to another session", dir.Rename(bg, "y.tmp", other, "stdin"), syscall.EXDEV)
	dir.Remove(bg, "y.tmp", false)

	// An empty save does nothing: the session stays idle.
	temp("empty", "")
	if err := dir.Rename(bg, "empty", dir, "stdin"); err != nil || status(t, dir).Status != shelld.Idle {
		t.Errorf("empty save over stdin: %v, status %s", err, status(t, dir).Status)
	}
	listed()

	// Over stdin: one write, which starts the shell.
	temp(".stdin.1", "echo saved-$((40+2))\n")
	if err := dir.Rename(bg, ".stdin.1", dir, "stdin"); err != nil {
		t.Fatalf("rename over stdin: %v", err)
	}
	listed()
	eventually(t, "the saved line ran", func() bool {
		return strings.Contains(read(t, walk(t, dir, "stdout")), "saved-42\r\n")
	})

	// Creating a session file's name opens it; O_EXCL refuses it.
	for _, name := range fixed {
		_, _, err := dir.Create(bg, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		wantErrno(t, "create O_EXCL of "+name, err, syscall.EEXIST)
	}
	n, h, err := dir.Create(bg, "stdin", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil || n != walk(t, dir, "stdin") {
		t.Fatalf("create of stdin: %v", err)
	}
	if _, err := h.WriteAt(bg, []byte("echo via-create\n"), 0); err != nil {
		t.Errorf("write through create of stdin: %v", err)
	}
	h.Close()
	_, _, err = dir.Create(bg, "status", os.O_WRONLY|os.O_CREATE, 0o644)
	wantErrno(t, "create of status for writing", err, syscall.EACCES)
	listed()

	// Temp files behave as files: truncate, append, modes; not owners.
	tf := temp("file", "hello")
	if a, err := tf.SetAttr(bg, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o644}); err != nil || a.Mode != syscall.S_IFREG|0o644 {
		t.Errorf("chmod of a temp file: %o, %v", a.Mode, err)
	}
	if a, _ := tf.Attr(bg); !a.Volatile || a.Size != 5 {
		// Volatile: see tempFile.Attr (a rename over stdin must not
		// leave the kernel's entry of "stdin" on the temp file).
		t.Errorf("temp file attr: %+v, want volatile, 5 bytes", a)
	}
	_, err = tf.SetAttr(bg, vfs.SetAttr{Valid: vfs.SetUid, Uid: uint32(os.Geteuid()) + 1})
	wantErrno(t, "chown of a temp file", err, syscall.EPERM)
	if h, err := tf.Open(bg, os.O_WRONLY|os.O_APPEND); err == nil {
		h.WriteAt(bg, []byte(" world"), 0)
		h.Close()
	}
	if got := read(t, tf); got != "hello world" {
		t.Errorf("after an append: %q", got)
	}
	if h, err := tf.Open(bg, os.O_WRONLY|os.O_TRUNC); err == nil {
		h.Close()
	}
	if got := read(t, tf); got != "" {
		t.Errorf("after O_TRUNC: %q", got)
	}
	_, err = tf.SetAttr(bg, vfs.SetAttr{Valid: vfs.SetSize, Size: maxTempSize + 1})
	wantErrno(t, "truncate past the bound", err, syscall.EFBIG)
	h, _ = tf.Open(bg, os.O_WRONLY)
	_, err = h.WriteAt(bg, []byte("x"), maxTempSize)
	wantErrno(t, "write past the bound", err, syscall.EFBIG)
	h.Close()
	wantErrno(t, "rmdir of a temp file", dir.Remove(bg, "file", true), syscall.ENOTDIR)

	// At most maxTemps of them.
	for i := 1; i < maxTemps; i++ {
		temp("many"+strconv.Itoa(i), "")
	}
	_, _, err = dir.Create(bg, "one-too-many", os.O_RDWR|os.O_CREATE, 0o600)
	wantErrno(t, "create past the temp file bound", err, syscall.ENOSPC)
	wantLastError(t, dir, "past the temp file bound", "too many temp files")
}

// rm -r of a session: unlinking its files (and rmdir of cmds/ and its
// records) succeeds and changes nothing; the rmdir at the end kills it.
func TestRemove(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	dir := mkdir(t, f, "r")
	if err := write(walk(t, dir, "stdin"), "echo one\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a command record", func() bool {
		_, err := walk(t, dir, "cmds").Lookup(bg, "1")
		return err == nil
	})
	before := list(t, dir)
	for _, name := range before {
		isDir := name == "cmds"
		if err := dir.Remove(bg, name, isDir); err != nil {
			t.Errorf("remove %s: %v, want success changing nothing", name, err)
		}
		wantErrno(t, "remove "+name+" as the wrong type", dir.Remove(bg, name, !isDir), map[bool]syscall.Errno{true: syscall.EISDIR, false: syscall.ENOTDIR}[isDir])
	}
	cmds := walk(t, dir, "cmds")
	rec := walk(t, cmds, "1")
	for _, name := range list(t, rec) {
		if err := rec.Remove(bg, name, false); err != nil {
			t.Errorf("remove cmds/1/%s: %v", name, err)
		}
	}
	for _, name := range []string{"1", "last"} {
		if err := cmds.Remove(bg, name, name == "1"); err != nil {
			t.Errorf("remove cmds/%s: %v", name, err)
		}
	}
	if got := list(t, dir); !slices.Equal(got, before) {
		t.Errorf("after the unlinks the session lists %q, want %q", got, before)
	}
	if got := list(t, cmds); !slices.Equal(got, []string{"1", "last"}) {
		t.Errorf("after the unlinks cmds lists %q", got)
	}
	wantErrno(t, "remove of a missing name", dir.Remove(bg, "nope", false), syscall.ENOENT)

	root := f.Root()
	wantErrno(t, "unlink /proc/r", root.Remove(bg, "r", false), syscall.EISDIR)
	wantErrno(t, "unlink /proc/clone", root.Remove(bg, "clone", false), syscall.EPERM)
	wantErrno(t, "unlink /proc/status", root.Remove(bg, "status", false), syscall.EPERM)
	s := session(dir)
	if err := root.Remove(bg, "r", true); err != nil {
		t.Fatalf("rmdir /proc/r: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Errorf("the shell is still running after rmdir returned")
	}
	_, err := root.Lookup(bg, "r")
	wantErrno(t, "lookup after rmdir", err, syscall.ENOENT)
	wantErrno(t, "rmdir again", root.Remove(bg, "r", true), syscall.ENOENT)
}

// A reader below the kept head (output past the cap dropped) is moved up
// to the head and reads on: offsets shifted, nothing repeated or skipped.
func TestReaderShift(t *testing.T) {
	clock := testenv.NewClock(epoch)
	log := shelld.NewLog(100, clock.Now)
	r := &vfs.StreamReader{S: log}
	buf := make([]byte, 1000)
	log.Write([]byte(strings.Repeat("a", 60)))
	if n, err := r.ReadAt(bg, buf[:50], 0); n != 50 || err != nil {
		t.Fatalf("first read: %d, %v", n, err)
	}
	log.Write([]byte(strings.Repeat("b", 100))) // start 60, end 160
	n, err := r.ReadAt(bg, buf, 50)
	if got := string(buf[:n]); got != strings.Repeat("b", 100) || err != nil {
		t.Errorf("read below the head: %q, %v; want the 100 kept bytes", got, err)
	}
	if n, err := r.ReadAt(bg, buf, 150); n != 0 || err != io.EOF {
		t.Errorf("read at the shifted end: %d, %v; want EOF", n, err)
	}
	log.Write([]byte("cc")) // start 62, end 162
	if n, _ := r.ReadAt(bg, buf, 150); string(buf[:n]) != "cc" {
		t.Errorf("read on after the shift: %q, want cc", buf[:n])
	}
	// A new reader at 0 of a truncated log starts at the head.
	r2 := &vfs.StreamReader{S: log}
	if n, _ := r2.ReadAt(bg, buf, 0); n != 100 || string(buf[n-2:n]) != "cc" {
		t.Errorf("new reader at 0: %q", buf[:n])
	}
	// Absolute offsets above the head read as they are.
	r3 := &vfs.StreamReader{S: log}
	if n, _ := r3.ReadAt(bg, buf, 160); string(buf[:n]) != "cc" {
		t.Errorf("reader at absolute 160: %q", buf[:n])
	}
	if _, err := r3.ReadAt(bg, buf, -1); vfs.Errno(err) != syscall.EINVAL {
		t.Errorf("read at -1: %v", err)
	}
	// A stream reader at the end of a closed log ends (EOF).
	log.Close()
	s := &vfs.StreamReader{S: log, Follow: func(ctx context.Context, off int64) (bool, error) {
		return log.Follow(ctx, off)
	}}
	if n, _ := s.ReadAt(bg, buf, 0); n != 100 {
		t.Errorf("stream at 0: %d bytes", n)
	}
	if n, err := s.ReadAt(bg, buf, 100); n != 0 || (err != nil && err != io.EOF) {
		t.Errorf("stream at the end of a closed log: %d, %v", n, err)
	}

	// The same through a session's stdout and stream, with a tiny cap.
	f, _ := newFS(t, shelld.Config{OutputCap: 64}, Options{})
	dir := mkdir(t, f, "cap")
	if err := write(walk(t, dir, "ctl"), "exec printf '%0200d' 7"); err != nil {
		t.Fatal(err)
	}
	st := done(t, dir)
	// One line longer than the cap: cut inside it, at least MarkerRoom
	// bytes at a time, and a marker line says so in stdout and stream.
	want := strings.Repeat("0", 63) + "7"
	if got := read(t, walk(t, dir, "tail")); got != want {
		t.Errorf("tail past the cap: %q, want the last 64 bytes %q", got, want)
	}
	marked := shelld.TruncationMarker(136) + want
	for _, file := range []string{"stdout", "stream"} {
		if got := read(t, walk(t, dir, file)); got != marked {
			t.Errorf("%s past the cap: %q, want %q", file, got, marked)
		}
	}
	if a, _ := walk(t, dir, "stdout").Attr(bg); a.Size != 200 || st.Output != 200 || !st.Truncated {
		t.Errorf("stdout size %d, outputBytes %d, truncated %v; want 200, 200, true", a.Size, st.Output, st.Truncated)
	}
}

// wait, stream and cmds/N/wait block at most the yield time; an idle
// session's wait returns at once; a caller giving up ends the read.
func TestYield(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{Yield: 200 * time.Millisecond})
	idle := mkdir(t, f, "idle")
	start := time.Now()
	if got := read(t, walk(t, idle, "wait")); !strings.Contains(got, `"status":"idle"`) || time.Since(start) > time.Second {
		t.Errorf("wait of an idle session: %q after %v", got, time.Since(start))
	}

	dir := mkdir(t, f, "y")
	if err := write(walk(t, dir, "ctl"), "exec sleep 30"); err != nil {
		t.Fatal(err)
	}
	sh := mkdir(t, f, "sh")
	if err := write(walk(t, sh, "stdin"), "sleep 30\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a record", func() bool { _, ok := session(sh).LastCommand(); return ok })
	for _, tc := range []struct {
		what  string
		node  vfs.Node
		yield time.Duration
		want  string
	}{
		{"wait", walk(t, dir, "wait"), 200 * time.Millisecond, `"status":"running"`},
		{"stream", walk(t, dir, "stream"), 200 * time.Millisecond, ""},
		{"cmds/1/wait", walk(t, sh, "cmds", "1", "wait"), 200 * time.Millisecond, `"status":"running"`},
	} {
		start := time.Now()
		got := read(t, tc.node)
		took := time.Since(start)
		if took < tc.yield-10*time.Millisecond || took > tc.yield+3*time.Second {
			t.Errorf("%s with yield %v returned after %v", tc.what, tc.yield, took)
		}
		if (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s at the yield time: %q, want %q in it", tc.what, got, tc.want)
		}
	}
	// The session's own yield verb wins over the default.
	if err := write(walk(t, dir, "ctl"), "yield 500ms"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	read(t, walk(t, dir, "wait"))
	if took := time.Since(start); took < 490*time.Millisecond || took > 4*time.Second {
		t.Errorf("wait with yield 500ms returned after %v", took)
	}
	// A caller that gives up (an interrupt) ends a wait long before the
	// yield time, without a snapshot: the next read waits again.
	if err := write(walk(t, dir, "ctl"), "yield 1h"); err != nil {
		t.Fatal(err)
	}
	h, err := walk(t, dir, "wait").Open(bg, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	start = time.Now()
	n, err := h.ReadAt(ctx, make([]byte, 4096), 0)
	cancel()
	if n != 0 || err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("an interrupted wait: %d bytes, %v after %v; want an error at once", n, err, time.Since(start))
	}
	// Ending the process ends the wait at once: the kill comes once the
	// read is seen waiting.
	got := make(chan string, 1)
	go func() { got <- readAcrossKill(h) }()
	testenv.WaitFor(t, 10*time.Second, "a read of wait blocked", func() bool {
		return testenv.Blocked(testenv.GoroutineState("procfs.readAcrossKill"))
	})
	if err := write(walk(t, dir, "ctl"), "kill"); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-got:
		if !strings.Contains(out, `"status":"killed"`) {
			t.Errorf("wait across a kill: %s", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait goes on 10s after its session was killed")
	}
	h.Close()
}

// readAcrossKill reads h, a session's wait, and says what it got; it is a
// function of its own so that its goroutine can be found blocked.
func readAcrossKill(h vfs.Handle) string {
	buf := make([]byte, 4096)
	n, err := h.ReadAt(bg, buf, 0)
	return fmt.Sprintf("%s (error %v)", buf[:n], err)
}

// clone makes sessions with fresh numbers, skipping names taken by mkdir.
func TestClone(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	clone := walk(t, f.Root(), "clone")
	got := []string{read(t, clone), read(t, clone)}
	mkdir(t, f, "3")
	got = append(got, read(t, clone))
	if want := []string{"1\n", "2\n", "4\n"}; !slices.Equal(got, want) {
		t.Errorf("clone gave %q, want %q", got, want)
	}
	if names := list(t, f.Root()); !slices.Equal(names, []string{"clone", "status", "1", "2", "3", "4"}) {
		t.Errorf("/proc lists %q", names)
	}
	// A session's directory is the same node (and inode) each time.
	a, b := walk(t, f.Root(), "1"), walk(t, f.Root(), "1")
	aa, _ := a.Attr(bg)
	ba, _ := b.Attr(bg)
	if a != b || aa.Ino != ba.Ino || !aa.IsDir() || !aa.Volatile {
		t.Errorf("two lookups of a session: %p %+v and %p %+v", a, aa, b, ba)
	}
	if st := status(t, a); st.Status != shelld.Idle || st.ID != "1" {
		t.Errorf("a cloned session: %+v", st)
	}
	_, err := clone.Open(bg, os.O_WRONLY)
	wantErrno(t, "open clone for writing", err, syscall.EACCES)
}

// mkdir takes 1 to 64 of [A-Za-z0-9._-], not starting with a dot.
func TestMkdirNames(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
	}{
		{"a", 0},
		{"A-b_c.d", 0},
		{"-dash", 0},
		{"_under", 0},
		{"0", 0},
		{"x.", 0},
		{strings.Repeat("x", 64), 0},
		{strings.Repeat("y", 65), syscall.EINVAL},
		{".hidden", syscall.EINVAL},
		{"a b", syscall.EINVAL},
		{"tab\t", syscall.EINVAL},
		{"é", syscall.EINVAL},
		{"a:b", syscall.EINVAL},
		{"a*", syscall.EINVAL},
		{"clone", syscall.EEXIST},
		{"status", syscall.EEXIST},
		{"a", syscall.EEXIST},
	} {
		_, err := f.Root().Mkdir(bg, tc.name, 0o755)
		wantErrno(t, "mkdir "+tc.name, err, tc.errno)
		if tc.errno == syscall.EINVAL {
			if s := summary(t, f); !strings.Contains(s.LastError, strconv.Quote(tc.name)) || !strings.Contains(s.LastError, "not starting with '.'") {
				t.Errorf("mkdir %q: /proc/status lastError %q, want why", tc.name, s.LastError)
			}
		}
	}
	if s := summary(t, f); s.Sessions != 7 {
		t.Errorf("/proc/status: %+v, want 7 sessions", s)
	}
	// A session's directory takes no new directories of its own.
	_, err := walk(t, f.Root(), "a").Mkdir(bg, "sub", 0o755)
	wantErrno(t, "mkdir in a session", err, syscall.EPERM)
}

// At the cap of live sessions, mkdir and clone fail with EAGAIN and
// /proc/status says why; a finished session frees its place.
func TestStatusAtCap(t *testing.T) {
	f, _ := newFS(t, shelld.Config{MaxLive: 2}, Options{})
	if s := summary(t, f); s != (summaryJSON{Sessions: 0, Live: 0, MaxLive: 2}) {
		t.Errorf("/proc/status of an empty tree: %+v", s)
	}
	a := mkdir(t, f, "a")
	mkdir(t, f, "b")
	_, err := f.Root().Mkdir(bg, "c", 0o755)
	wantErrno(t, "mkdir past the cap", err, syscall.EAGAIN)
	if s := summary(t, f); s.Live != 2 || s.MaxLive != 2 || !strings.Contains(s.LastError, "mkdir c") || !strings.Contains(s.LastError, "too many live sessions: 2 of 2") {
		t.Errorf("/proc/status at the cap: %+v", s)
	}
	_, err = walk(t, f.Root(), "clone").Open(bg, os.O_RDONLY)
	wantErrno(t, "clone past the cap", err, syscall.EAGAIN)
	if s := summary(t, f); !strings.HasPrefix(s.LastError, "clone: ") {
		t.Errorf("/proc/status after a clone past the cap: %+v", s)
	}
	if err := write(walk(t, a, "ctl"), "exec true"); err != nil {
		t.Fatal(err)
	}
	done(t, a)
	mkdir(t, f, "c")
	if s := summary(t, f); s.Sessions != 3 || s.Live != 2 {
		t.Errorf("/proc/status once a finished: %+v, want 3 sessions, 2 live", s)
	}
}

// The files of a session as an agent uses them: stdin starts the shell,
// the records, EPIPE after the exit; modes are enforced.
func TestSessionFiles(t *testing.T) {
	t.Setenv("GSVFS_UNIT_SECRET", "hunter2")
	f, _ := newFS(t, shelld.Config{Env: []string{"PATH", "GSVFS_NOT_SET"}}, Options{})
	dir := mkdir(t, f, "s")
	if got := read(t, walk(t, dir, "cmdline")); got != "" {
		t.Errorf("cmdline of an idle session: %q", got)
	}
	env := read(t, walk(t, dir, "env"))
	if strings.Contains(env, "hunter2") || !strings.Contains(env, "PATH=") || !strings.HasPrefix(env, "TERM=") {
		t.Errorf("env of a session, with only PATH allowed:\n%s", env)
	}
	// Modes: inputs are write-only, outputs read-only.
	for _, tc := range []struct {
		file  string
		flags int
		errno syscall.Errno
	}{
		{"stdin", os.O_RDONLY, syscall.EACCES},
		{"ctl", os.O_RDWR, syscall.EACCES},
		{"stdout", os.O_WRONLY, syscall.EACCES},
		{"stdout", os.O_RDONLY | os.O_TRUNC, syscall.EACCES},
		{"status", os.O_RDWR, syscall.EACCES},
		{"stdin", os.O_WRONLY | os.O_TRUNC, 0},
		{"ctl", os.O_WRONLY | os.O_APPEND, 0},
	} {
		h, err := walk(t, dir, tc.file).Open(bg, tc.flags)
		wantErrno(t, "open "+tc.file, err, tc.errno)
		if err == nil {
			h.Close()
		}
	}
	_, err := walk(t, dir, "stdin").SetAttr(bg, vfs.SetAttr{Valid: vfs.SetSize, Size: 0})
	wantErrno(t, "truncate stdin to 0", err, 0)
	_, err = walk(t, dir, "stdin").SetAttr(bg, vfs.SetAttr{Valid: vfs.SetSize, Size: 3})
	wantErrno(t, "truncate stdin to 3", err, syscall.EPERM)
	_, err = walk(t, dir, "stdout").SetAttr(bg, vfs.SetAttr{Valid: vfs.SetSize, Size: 0})
	wantErrno(t, "truncate stdout", err, syscall.EPERM)
	_, err = walk(t, dir, "stdin").SetAttr(bg, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o666})
	wantErrno(t, "chmod stdin", err, syscall.EPERM)

	// The first write starts the login shell; each line is a record.
	if err := write(walk(t, dir, "stdin"), "X=5; cd /\n"); err != nil {
		t.Fatal(err)
	}
	if err := write(walk(t, dir, "stdin"), "echo \"x=$X\"; (exit 4)\n"); err != nil {
		t.Fatal(err)
	}
	var c waited
	last, err := walk(t, dir, "cmds", "last").(vfs.Readlinker).Readlink(bg)
	if err != nil {
		t.Fatal(err)
	}
	data := read(t, walk(t, dir, "cmds", last, "wait"))
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("cmds/last/wait %q: %v", data, err)
	}
	if c.N != 2 || c.Output != "x=5\n" || c.ExitCode == nil || *c.ExitCode != 4 || c.Status != shelld.Failed {
		t.Errorf("cmds/last/wait: %+v", c)
	}
	if last != "2" {
		t.Errorf("cmds/last -> %q", last)
	}
	for file, want := range map[string]string{"input": "echo \"x=$X\"; (exit 4)\n", "output": "x=5\n", "exit": "4\n"} {
		if got := read(t, walk(t, dir, "cmds", "2", file)); got != want {
			t.Errorf("cmds/2/%s: %q, want %q", file, got, want)
		}
	}
	if got := cwdOf(t, dir); got != "/" {
		t.Errorf("cwd after cd /: %q", got)
	}
	for _, name := range []string{"0", "3", "01", "-1", "x"} {
		_, err := walk(t, dir, "cmds").Lookup(bg, name)
		wantErrno(t, "lookup cmds/"+name, err, syscall.ENOENT)
	}
	if got := read(t, walk(t, dir, "cmdline")); got != "/bin/sh -l\n" {
		t.Errorf("cmdline: %q", got)
	}
	// stdout's size and mtime are the log's.
	a, _ := walk(t, dir, "stdout").Attr(bg)
	if _, end, mtime, _ := session(dir).Output().Stat(); a.Size != end || !a.Mtime.Equal(mtime) || !a.Volatile {
		t.Errorf("stdout attr %+v, log end %d mtime %v", a, end, mtime)
	}
	if err := write(walk(t, dir, "stdin"), "exit 3\n"); err != nil {
		t.Fatal(err)
	}
	if st := done(t, dir); st.Status != shelld.Failed || *st.ExitCode != 3 {
		t.Errorf("after exit 3: %+v", st)
	}
	err = write(walk(t, dir, "stdin"), "echo late\n")
	wantErrno(t, "write to stdin after the exit", err, syscall.EPIPE)
	if last := status(t, dir).LastError; !strings.Contains(last, "has exited") {
		t.Errorf("lastError after a write past the exit: %q", last)
	}
	if !ended(status(t, dir)) {
		t.Errorf("status after the exit: %+v", status(t, dir))
	}
}

// A ctl verb runs only once its line is complete: a line split over two
// writes runs whole, never its first half; a last line without a newline
// runs at the close, whose error it is.
func TestCtlSplitLines(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	work := t.TempDir()
	victim := filepath.Join(work, "victim")
	dir := mkdir(t, f, "split")
	if err := writes(walk(t, dir, "ctl"), "exec touch "+victim, "_suffix\n"); err != nil {
		t.Fatal(err)
	}
	st := done(t, dir)
	if _, err := os.Stat(victim); err == nil {
		t.Errorf("ctl line split over two writes ran its first half: %s exists", victim)
	}
	if _, err := os.Stat(victim + "_suffix"); err != nil || st.Command != "touch "+victim+"_suffix" {
		t.Errorf("the whole line did not run: %v, command %q", err, st.Command)
	}

	// Several lines, the last finished by the close.
	env := mkdir(t, f, "env")
	if err := writes(walk(t, env, "ctl"), "env A=", "1\nenv B", "=2"); err != nil {
		t.Fatal(err)
	}
	got := read(t, walk(t, env, "env"))
	if !strings.Contains(got, "A=1\n") || !strings.Contains(got, "B=2\n") {
		t.Errorf("env after split lines:\n%s", got)
	}

	// Errors: of the write that completes a bad line, of the close that
	// completes one, and of a line that never ends.
	bad := mkdir(t, f, "bad")
	wantErrno(t, "write completing a bad line", writes(walk(t, bad, "ctl"), "bo", "gus\n"), syscall.EINVAL)
	wantErrno(t, "close completing a bad line", writes(walk(t, bad, "ctl"), "bo", "gus"), syscall.EINVAL)
	long := strings.Repeat("x", vfs.MaxLine+1)
	wantErrno(t, "endless line", writes(walk(t, bad, "ctl"), "env A=", long), syscall.EINVAL)
	wantLastError(t, bad, "after an endless line", "longer than")
}

// A stdin write the terminal takes only in part returns the short count,
// so a writer sends the rest again and only the rest; a write it takes
// nothing of fails with EAGAIN, and lastError says why.
func TestStdinShortWrite(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	dir := mkdir(t, f, "full")
	if err := write(walk(t, dir, "ctl"), "yield 200ms\nexec sleep 30\n"); err != nil {
		t.Fatal(err)
	}
	defer write(walk(t, dir, "ctl"), "kill\n")
	h, err := walk(t, dir, "stdin").Open(bg, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p := []byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 1024)) // 64 KiB, nobody reads it
	n, err := h.WriteAt(bg, p, 0)
	if err != nil || n <= 0 || n >= len(p) {
		t.Fatalf("64 KiB to a terminal nobody reads: wrote %d, %v; want a short count and no error", n, err)
	}
	n, err = h.WriteAt(bg, p[n:], 0)
	wantErrno(t, fmt.Sprintf("write of the rest to a full terminal (wrote %d)", n), err, syscall.EAGAIN)
	wantLastError(t, dir, "after a write the terminal took nothing of", "took none")
}

// The attributes a client may hold as long as it likes (vfs.Attr.Fixed)
// are those that never change: /proc's and a session directory's, the
// inputs', wait's and stream's (size 0, times of their making); not those of what
// grows or moves (the logs, the cwd link, a temp file).
func TestFixedAttributes(t *testing.T) {
	f, _ := newFS(t, shelld.Config{}, Options{})
	dir := mkdir(t, f, "s")
	_, h, err := dir.Create(bg, ".tmp", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	fixedOf := func(n vfs.Node) bool {
		t.Helper()
		a, err := n.Attr(bg)
		if err != nil {
			t.Fatal(err)
		}
		return a.Fixed
	}
	if !fixedOf(f.Root()) || !fixedOf(dir) {
		t.Errorf("fixed: /proc %v, the session's directory %v; want both", fixedOf(f.Root()), fixedOf(dir))
	}
	for _, name := range []string{"ctl", "stdin", "wait", "stream"} {
		if !fixedOf(walk(t, dir, name)) {
			t.Errorf("%s: attributes not fixed", name)
		}
	}
	for _, name := range []string{"stdout", "stderr", "cwd", ".tmp"} {
		if fixedOf(walk(t, dir, name)) {
			t.Errorf("%s: attributes said fixed, but its size moves", name)
		}
	}
}
