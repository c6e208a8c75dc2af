package crond

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// fakeRunner records runs and ends each with exit code 0.
type fakeRunner struct {
	mu   sync.Mutex
	runs []string
}

func (f *fakeRunner) Run(name, command string) (func(context.Context) Result, error) {
	f.mu.Lock()
	f.runs = append(f.runs, name+": "+command)
	f.mu.Unlock()
	zero := 0
	return func(context.Context) Result { return Result{Exit: &zero, State: "completed"} }, nil
}

func (f *fakeRunner) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...)
}

// runFor runs d until clock reads until; d's sleeps advance clock, so
// schedules run without waiting.
func runFor(t *testing.T, d *Daemon, clock *testenv.Clock, until time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.o.Sleep = func(ctx context.Context, step time.Duration) {
		clock.Advance(step)
		if !clock.Now().Before(until) {
			cancel()
		}
	}
	d.Run(ctx)
}

func TestSchedules(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "crontab")
	if err := os.WriteFile(tab, []byte(`# a comment
*/5 * * * * make -C /workspaces/app check
@every 2s   echo   tick
@reboot echo booted
not a line
* * * *
`), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := testenv.NewClock(time.Date(2026, 11, 24, 10, 0, 30, 0, time.UTC))
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runFor(t, d, clock, clock.Now().Add(11*time.Minute))

	var make, tick, boot int
	for _, r := range run.names() {
		switch {
		case strings.Contains(r, ": make -C /workspaces/app check"):
			make++
		case strings.Contains(r, ": echo   tick"):
			tick++
		case strings.Contains(r, ": echo booted"):
			boot++
		default:
			t.Errorf("unexpected run %q", r)
		}
	}
	// 10:05 and 10:10 in eleven minutes from 10:00:30; every 2 s; once.
	if make != 2 || boot != 1 || tick < 325 || tick > 335 {
		t.Errorf("runs: make %d (want 2), tick %d (want about 330), boot %d (want 1)", make, tick, boot)
	}
	if !strings.HasPrefix(run.names()[0], "cron-echo-") {
		t.Errorf("first run %q: want a session named cron-echo-…", run.names()[0])
	}
	// Runs end in goroutines of their own: wait for the last ones.
	table := string(d.Table())
	testenv.Poll(5*time.Second, func() bool { table = string(d.Table()); return !strings.Contains(table, "running") })
	for _, want := range []string{"*/5 * * * *", "next 2026-11-24T10:15:00Z", "exit 0", "refused\tline 5: not a line", "refused\tline 6: * * * *"} {
		if !strings.Contains(table, want) {
			t.Errorf("/sys/cron lacks %q:\n%s", want, table)
		}
	}
}

func TestReloadLive(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "crontab")
	clock := testenv.NewClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runFor(t, d, clock, clock.Now().Add(5*time.Second)) // no crontab yet: nothing runs
	if n := len(run.names()); n != 0 {
		t.Fatalf("runs without a crontab: %d", n)
	}
	if err := os.WriteFile(tab, []byte("@every 1s date\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runFor(t, d, clock, clock.Now().Add(5*time.Second))
	if n := len(run.names()); n < 3 {
		t.Errorf("runs after the crontab appeared: %d, want about 4", n)
	}
	// A job that stays keeps its count; its sessions are numbered on.
	if err := os.WriteFile(tab, []byte("@every 1s date\n@every 1h later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(tab, future, future); err != nil { // a new stamp even within the same second
		t.Fatal(err)
	}
	before := len(run.names())
	runFor(t, d, clock, clock.Now().Add(3*time.Second))
	names := run.names()
	if len(names) <= before || !strings.Contains(names[len(names)-1], "-"+strconv.Itoa(len(names))+": date") {
		t.Errorf("runs after an edit: %q", names)
	}
}

// A line taken out of the crontab runs no more, while the lines left go
// on: ten seconds of the injected clock, against which the absence of
// runs means something, at no cost in real time.
func TestRemovedLineStops(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(tab, []byte("@every 1s date\n@every 1s true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := testenv.NewClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: quiet()})
	count := func(command string) (n int) {
		for _, r := range run.names() {
			if strings.HasSuffix(r, ": "+command) {
				n++
			}
		}
		return n
	}
	runFor(t, d, clock, clock.Now().Add(3*time.Second))
	if count("date") == 0 {
		t.Fatalf("no run of a job due every second in 3s: %q", run.names())
	}
	if err := os.WriteFile(tab, []byte("@every 1s true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(tab, future, future); err != nil { // a new stamp even within the same second
		t.Fatal(err)
	}
	dates, trues := count("date"), count("true")
	runFor(t, d, clock, clock.Now().Add(10*time.Second))
	if n := count("date"); n != dates {
		t.Errorf("the removed line ran %d times more in 10s", n-dates)
	}
	if n := count("true"); n < trues+5 {
		t.Errorf("the line left ran %d times in 10s, want about 10", n-trues)
	}
}

// /sys/cron is as readable and writable as the crontab: its owner, group
// and read and write bits; anyone's to read with no crontab.
func TestAccess(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	d := New(Options{File: tab, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	for _, c := range []struct {
		mode os.FileMode // 0: no crontab
		want uint32
	}{{0, 0o644}, {0o600, 0o600}, {0o640, 0o640}, {0o755, 0o644}, {0o200, 0o200}} {
		if c.mode != 0 {
			if err := os.WriteFile(tab, []byte("@hourly true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(tab, c.mode); err != nil {
				t.Fatal(err)
			}
		}
		gotUid, gotGid, perm := d.Access()
		if gotUid != uid || gotGid != gid || perm != c.want {
			t.Errorf("crontab mode %o: got %d:%d %o, want %d:%d %o", c.mode, gotUid, gotGid, perm, uid, gid, c.want)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// count is how many runs of command run made.
func count(run *fakeRunner, command string) int {
	n := 0
	for _, r := range run.names() {
		if strings.HasSuffix(r, ": "+command) {
			n++
		}
	}
	return n
}

// tableLine is the line of /sys/cron/jobs whose command is command.
func tableLine(d *Daemon, command string) string {
	for line := range strings.SplitSeq(string(d.Table()), "\n") {
		if strings.HasSuffix(line, "\t"+command) {
			return line
		}
	}
	return ""
}

// @at runs once at its time: in the daemon's local time without a zone,
// in the line's CRON_TZ, or in the zone it names; one whose time passed
// before the line was read never runs. @in runs once, its duration after
// the line was read.
func TestOneShots(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.FixedZone("UTC+1", 3600)
	tab := filepath.Join(t.TempDir(), "crontab")
	clock := testenv.NewClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: quiet()})
	runFor(t, d, clock, clock.Now().Add(2*time.Second)) // the crontab appears after start
	if err := os.WriteFile(tab, []byte(`@at 2026-11-24T10:00:05Z echo utc
CRON_TZ=Europe/Paris @at 2026-11-24T11:00:07 echo paris
@at 2026-11-24T12:00:09+02:00 echo offset
@at 2026-11-24T11:00:11 echo local
@at 2026-11-24T09:00 echo past
@in 3s echo in
`), 0o644); err != nil {
		t.Fatal(err)
	}
	read := clock.Now().Add(time.Second) // read at the next tick
	runFor(t, d, clock, clock.Now().Add(20*time.Second))
	want := map[string]time.Time{
		"echo utc": time.Date(2026, 11, 24, 10, 0, 5, 0, time.UTC), "echo paris": time.Date(2026, 11, 24, 10, 0, 7, 0, time.UTC),
		"echo offset": time.Date(2026, 11, 24, 10, 0, 9, 0, time.UTC), "echo local": time.Date(2026, 11, 24, 10, 0, 11, 0, time.UTC),
		"echo in": read.Add(3 * time.Second),
	}
	history := string(d.History())
	for command, at := range want {
		if n := count(run, command); n != 1 {
			t.Errorf("%s ran %d times, want once", command, n)
		}
		if line := tableLine(d, command); !strings.Contains(line, "\tnext done\t") {
			t.Errorf("/sys/cron/jobs for %s: %q, want next done", command, line)
		}
		if !strings.Contains(history, "by schedule\tstart "+at.Format(time.RFC3339)) {
			t.Errorf("%s: want a run started at %s in /sys/cron/history:\n%s", command, at.Format(time.RFC3339), history)
		}
	}
	if n := count(run, "echo past"); n != 0 || !strings.Contains(tableLine(d, "echo past"), "next expired") {
		t.Errorf("a past @at ran %d times; its line %q, want next expired", n, tableLine(d, "echo past"))
	}
}

// An @in job is timed from the first read of its line: an edit that
// keeps the line keeps its time, as it keeps an @every job's; a daemon
// that finds the line at start does not run it, as it may have run
// before the restart.
func TestInAcrossEditsAndRestart(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	clock := testenv.NewClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: quiet()})
	runFor(t, d, clock, clock.Now().Add(2*time.Second))
	if err := os.WriteFile(tab, []byte("@in 10s echo later\n@every 10s echo every\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	due := clock.Now().Add(11 * time.Second) // read at the next tick
	runFor(t, d, clock, clock.Now().Add(5*time.Second))
	if err := os.WriteFile(tab, []byte("# an edit\n@every 1h echo other\n@in   10s echo later\n@every 10s echo every\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(tab, future, future); err != nil {
		t.Fatal(err)
	}
	runFor(t, d, clock, clock.Now().Add(20*time.Second))
	history := string(d.History())
	if n := count(run, "echo later"); n != 1 || !strings.Contains(history, "-1\tby schedule\tstart "+due.Format(time.RFC3339)) {
		t.Errorf("@in across an edit: %d runs, want one at %s:\n%s", n, due.Format(time.RFC3339), history)
	}
	if every := jobID("@every 10s", "echo every"); !strings.Contains(history, every+"-1\tby schedule\tstart "+due.Format(time.RFC3339)) {
		t.Errorf("@every across an edit: want its first run at %s:\n%s", due.Format(time.RFC3339), history)
	}
	restarted := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: quiet()})
	runFor(t, restarted, clock, clock.Now().Add(20*time.Second))
	if n := count(run, "echo later"); n != 1 || !strings.Contains(tableLine(restarted, "echo later"), "expired") {
		t.Errorf("@in after a restart: %d runs, line %q; want no new run, expired", n, tableLine(restarted, "echo later"))
	}
}

// CRON_TZ= reads a line's schedule in a named zone, and an unknown zone
// is refused with why; @every takes days.
func TestZonesAndDays(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(tab, []byte(`CRON_TZ=Europe/Paris 0 9 * * * echo paris
CRON_TZ=Mars/Olympus 0 9 * * * echo mars
CRON_TZ=Europe/Paris
FOO=bar
@every 1d12h echo long
@every 2d echo days
@every 1x echo bad
`), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	d := New(Options{File: tab, Runner: &fakeRunner{}, Clock: func() time.Time { return now }, Log: quiet()})
	d.Load(t.Context())
	table := string(d.Table())
	for _, want := range []string{
		"CRON_TZ=Europe/Paris 0 9 * * *\tnext 2026-11-25T09:00:00+01:00\t",
		"@every 1d12h\tnext 2026-11-25T22:00:00Z\t", "@every 2d\tnext 2026-11-26T10:00:00Z\t",
		`refused	line 2: CRON_TZ=Mars/Olympus 0 9 * * * echo mars: CRON_TZ=Mars/Olympus: unknown time zone "Mars/Olympus"`,
		"refused\tline 3: CRON_TZ=Europe/Paris: no schedule after CRON_TZ=Europe/Paris",
		"refused\tline 4: FOO=bar: variable lines are not supported",
		`refused	line 7: @every 1x echo bad: duration "1x"`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("/sys/cron/jobs lacks %q:\n%s", want, table)
		}
	}
}

// gatedRunner's runs end when the test says.
type gatedRunner struct {
	fakeRunner
	gate chan struct{}
}

func (g *gatedRunner) Run(name, command string) (func(context.Context) Result, error) {
	g.fakeRunner.Run(name, command)
	return func(context.Context) Result {
		<-g.gate
		zero := 0
		return Result{Exit: &zero, State: "completed"}
	}, nil
}

// A job's runs are kept, with start, end, exit code and session, across
// an edit that keeps its line, a run that was going on during the edit
// included; ctl runs a job now, and refuses what names no verb or job.
func TestHistoryAndControl(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(tab, []byte("@hourly make check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	run := &gatedRunner{gate: make(chan struct{})}
	d := New(Options{File: tab, Runner: run, Clock: clock, Log: quiet()})
	d.Load(t.Context())
	id := jobID("@hourly", "make check")
	if err := d.Control("run " + id); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if !strings.Contains(tableLine(d, "make check"), "running cron-"+id+"-1") {
		t.Errorf("/sys/cron/jobs during the run: %q", tableLine(d, "make check"))
	}
	if err := os.WriteFile(tab, []byte("# an edit\n@every 1h echo other\n@hourly   make check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.reload(t.Context(), false)
	mu.Lock()
	now = now.Add(90 * time.Second)
	mu.Unlock()
	close(run.gate)
	want := id + "\tcron-" + id + "-1\tby ctl\tstart 2026-11-24T10:00:00Z\tend 2026-11-24T10:01:30Z\texit 0\tcompleted\n"
	testenv.Poll(5*time.Second, func() bool { return strings.Contains(string(d.History()), want) })
	if h := string(d.History()); !strings.Contains(h, want) {
		t.Errorf("/sys/cron/history after an edit: %q, want %q", h, want)
	}
	if err := d.Control("run " + id); err != nil || !strings.HasSuffix(run.names()[1], "cron-"+id+"-2: make check") {
		t.Errorf("a second run: %v, %q", err, run.names())
	}
	idle := New(Options{File: tab, Runner: run, Clock: clock, Log: quiet()}) // as with --no-sessions
	if err := idle.Control("run " + id); !errors.Is(err, syscall.ENOTSUP) {
		t.Errorf("run on a daemon that runs no jobs: %v, want ENOTSUP", err)
	}
	for _, line := range []string{"frob " + id, "run", "run nope-0000"} {
		err := d.Control(line)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("ctl %q: %v, want EINVAL", line, err)
		}
		if !strings.Contains(string(d.Table()), "refused\tctl ") {
			t.Errorf("ctl %q refused: /sys/cron/jobs does not say why:\n%s", line, d.Table())
		}
	}
}

// ctxRunner's runs end when the context they are waited with ends.
type ctxRunner struct{ fakeRunner }

func (r *ctxRunner) Run(name, command string) (func(context.Context) Result, error) {
	r.fakeRunner.Run(name, command)
	return func(ctx context.Context) Result {
		<-ctx.Done()
		return Result{State: "ended with the daemon"}
	}, nil
}

// A run ctl starts is waited for with the context the daemon was started
// with: it ends as the daemon does. Once the daemon has ended, ctl starts
// nothing.
func TestControlRunsEndWithTheDaemon(t *testing.T) {
	tab := filepath.Join(t.TempDir(), "crontab")
	if err := os.WriteFile(tab, []byte("@hourly make check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := &ctxRunner{}
	d := New(Options{File: tab, Runner: run, Log: quiet()})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { d.Run(ctx); close(ran) }()
	d.Load(ctx) // the crontab is read before Control asks for its job
	id := jobID("@hourly", "make check")
	if err := d.Control("run " + id); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if line := tableLine(d, "make check"); !strings.Contains(line, "running cron-"+id+"-1") {
		t.Fatalf("/sys/cron/jobs during the run: %q", line)
	}
	cancel()
	<-ran // Run returns once ctl starts nothing more
	testenv.WaitFor(t, 10*time.Second, "the run ended with the daemon", func() bool {
		return strings.Contains(string(d.History()), "ended with the daemon")
	})
	err := d.Control("run " + id)
	if !errors.Is(err, syscall.ENOTSUP) {
		t.Errorf("run after the daemon ended: %v, want ENOTSUP", err)
	}
	if n := len(run.names()); n != 1 {
		t.Errorf("%d runs started, want 1: %q", n, run.names())
	}
}
