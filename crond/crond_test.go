package crond

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// fakeTime is a clock that Sleep advances, so schedules run without
// waiting.
type fakeTime struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeTime) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeTime) Sleep(ctx context.Context, d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func runFor(t *testing.T, d *Daemon, clock *fakeTime, until time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.o.Sleep = func(ctx context.Context, step time.Duration) {
		clock.Sleep(ctx, step)
		if !clock.Now().Before(until) {
			cancel()
		}
	}
	d.Run(ctx)
}

func TestSchedules(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "crontab")
	os.WriteFile(tab, []byte(`# a comment
*/5 * * * * make -C /workspaces/app check
@every 2s   echo   tick
@reboot echo booted
not a line
* * * *
`), 0o644)
	clock := &fakeTime{now: time.Date(2026, 11, 24, 10, 0, 30, 0, time.UTC)}
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
	for end := time.Now().Add(5 * time.Second); strings.Contains(table, "running") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		table = string(d.Table())
	}
	for _, want := range []string{"*/5 * * * *", "next 2026-11-24T10:15:00Z", "exit 0", "refused\tline 5: not a line", "refused\tline 6: * * * *"} {
		if !strings.Contains(table, want) {
			t.Errorf("/sys/cron lacks %q:\n%s", want, table)
		}
	}
}

func TestReloadLive(t *testing.T) {
	dir := t.TempDir()
	tab := filepath.Join(dir, "crontab")
	clock := &fakeTime{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	run := &fakeRunner{}
	d := New(Options{File: tab, Runner: run, Clock: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	runFor(t, d, clock, clock.Now().Add(5*time.Second)) // no crontab yet: nothing runs
	if n := len(run.names()); n != 0 {
		t.Fatalf("runs without a crontab: %d", n)
	}
	os.WriteFile(tab, []byte("@every 1s date\n"), 0o644)
	runFor(t, d, clock, clock.Now().Add(5*time.Second))
	if n := len(run.names()); n < 3 {
		t.Errorf("runs after the crontab appeared: %d, want about 4", n)
	}
	// A job that stays keeps its count; its sessions are numbered on.
	os.WriteFile(tab, []byte("@every 1s date\n@every 1h later\n"), 0o644)
	future := time.Now().Add(time.Hour)
	os.Chtimes(tab, future, future) // a new stamp even within the same second
	before := len(run.names())
	runFor(t, d, clock, clock.Now().Add(3*time.Second))
	names := run.names()
	if len(names) <= before || !strings.Contains(names[len(names)-1], "-"+strconv.Itoa(len(names))+": date") {
		t.Errorf("runs after an edit: %q", names)
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
			os.Chmod(tab, c.mode)
		}
		gotUid, gotGid, perm := d.Access()
		if gotUid != uid || gotGid != gid || perm != c.want {
			t.Errorf("crontab mode %o: got %d:%d %o, want %d:%d %o", c.mode, gotUid, gotGid, perm, uid, gid, c.want)
		}
	}
}
