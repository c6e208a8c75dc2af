// Package crond runs the jobs of a crontab as /proc sessions: each run
// is a session named cron-JOB-N, kept for the retention time like any
// other, so its output, exit code and timing are files. Standard
// five-field lines, the @ descriptors (@hourly, @every 2s) and @reboot;
// the file is read again whenever it changes.
package crond

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
)

// Runner starts a job's run: a session called name running command.
// The returned wait reports how it ended.
type Runner interface {
	Run(name, command string) (wait func(context.Context) Result, err error)
}

// Result is how a run ended.
type Result struct {
	Exit  *int   // nil if killed or not started
	State string // completed, failed, killed, or why it did not start
}

// Options configure a Daemon.
type Options struct {
	File   string // the crontab on the host
	Runner Runner
	Clock  func() time.Time // time.Now if nil
	// Sleep waits d or until ctx ends; time-based if nil. Tests pass
	// one that advances their clock.
	Sleep func(ctx context.Context, d time.Duration)
	Log   *slog.Logger
}

// Daemon runs a crontab's jobs.
type Daemon struct {
	o Options

	mu    sync.Mutex
	jobs  []*job
	bad   []string // lines refused, with why
	stamp time.Time
	size  int64
}

// job is one line of the crontab.
type job struct {
	id, spec, command string
	sched             cron.Schedule // nil for @reboot
	next              time.Time
	runs              int
	last              string // how the last run that ended did, for /sys/cron
	running           string // the run going on, if any
}

// New returns a daemon for o; Run starts it.
func New(o Options) *Daemon {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
	}
	return &Daemon{o: o}
}

// tick is how often the crontab is checked for changes and jobs for
// being due: a second, the finest a schedule can say.
const tick = time.Second

// Run runs the jobs until ctx ends: @reboot ones once at start, the
// others whenever due.
func (d *Daemon) Run(ctx context.Context) {
	d.reload(true)
	for ctx.Err() == nil {
		d.o.Sleep(ctx, tick)
		d.reload(false)
		d.runDue(ctx)
	}
}

// reload reads the crontab if it changed (or at start).
func (d *Daemon) reload(start bool) {
	fi, err := os.Stat(d.o.File)
	d.mu.Lock()
	unchanged := err == nil && fi.ModTime().Equal(d.stamp) && fi.Size() == d.size
	missing := err != nil && d.stamp.IsZero() && len(d.jobs) == 0
	d.mu.Unlock()
	if !start && (unchanged || missing) {
		return
	}
	var text []byte
	if err == nil {
		text, err = os.ReadFile(d.o.File)
	}
	if err != nil && !os.IsNotExist(err) {
		d.o.Log.Warn("cron: cannot read the crontab", "file", d.o.File, "err", err)
		return
	}
	jobs, bad := parse(string(text), d.o.Clock())
	if len(bad) > 0 {
		// Not the lines themselves: the log (/sys/log) is everyone's,
		// the crontab may be private and its lines hold secrets.
		d.o.Log.Warn("cron: lines refused; /sys/cron says which and why", "file", d.o.File, "refused", len(bad))
	}
	d.mu.Lock()
	d.jobs, d.bad = keepHistory(d.jobs, jobs), bad
	if fi != nil {
		d.stamp, d.size = fi.ModTime(), fi.Size()
	}
	d.mu.Unlock()
	if start {
		for _, j := range jobs {
			if j.sched == nil {
				d.start(context.Background(), j)
			}
		}
	}
}

// keepHistory carries the runs and results of jobs that stay.
func keepHistory(old, fresh []*job) []*job {
	for _, j := range fresh {
		for _, o := range old {
			if o.id == j.id {
				j.runs, j.last, j.running = o.runs, o.last, o.running
			}
		}
	}
	return fresh
}

// parse reads a crontab: each line a schedule and a command.
func parse(text string, now time.Time) (jobs []*job, bad []string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		j, err := parseLine(line, now)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%d: %s: %v", n, line, err))
			continue
		}
		if seen[j.id]++; seen[j.id] > 1 {
			j.id = fmt.Sprintf("%s-%d", j.id, seen[j.id])
		}
		jobs = append(jobs, j)
	}
	return jobs, bad
}

func parseLine(line string, now time.Time) (*job, error) {
	fields := strings.Fields(line)
	n := 5 // minute hour day month weekday
	switch {
	case fields[0] == "@every":
		n = 2
	case strings.HasPrefix(fields[0], "@"):
		n = 1
	}
	if len(fields) <= n {
		return nil, fmt.Errorf("no command after the schedule")
	}
	spec, command := strings.Join(fields[:n], " "), afterFields(line, n)
	j := &job{id: jobID(spec, command), spec: spec, command: command}
	if spec == "@reboot" {
		return j, nil
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, err
	}
	j.sched, j.next = sched, sched.Next(now)
	return j, nil
}

// afterFields is what follows the first n fields of line, its spacing
// kept: a command is given to the shell as written.
func afterFields(line string, n int) string {
	rest := line
	for range n {
		rest = strings.TrimLeft(rest, " \t")
		rest = rest[strings.IndexAny(rest+" ", " \t"):]
	}
	return strings.TrimSpace(rest)
}

// jobID names a job after its command's first word and the line's hash,
// so the name stays while other lines change.
func jobID(spec, command string) string {
	word := filepath.Base(strings.Fields(command)[0])
	var b strings.Builder
	for _, c := range strings.ToLower(word) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	name := b.String()
	if name == "" {
		name = "job"
	}
	sum := sha256.Sum256([]byte(spec + "\x00" + command))
	return name[:min(len(name), 16)] + "-" + hex.EncodeToString(sum[:2])
}

// runDue starts the jobs whose time has come.
func (d *Daemon) runDue(ctx context.Context) {
	now := d.o.Clock()
	d.mu.Lock()
	var due []*job
	for _, j := range d.jobs {
		if j.sched != nil && !now.Before(j.next) {
			due = append(due, j)
			j.next = j.sched.Next(now)
		}
	}
	d.mu.Unlock()
	for _, j := range due {
		d.start(ctx, j)
	}
}

// start runs j once, as session cron-ID-N, and records how it ended.
func (d *Daemon) start(ctx context.Context, j *job) {
	d.mu.Lock()
	j.runs++
	name := fmt.Sprintf("cron-%s-%d", j.id, j.runs)
	j.running = name
	d.mu.Unlock()
	wait, err := d.o.Runner.Run(name, j.command)
	if err != nil {
		d.o.Log.Warn("cron: job not started", "job", j.id, "err", err)
		d.finish(j, name, Result{State: "not started: " + err.Error()})
		return
	}
	go func() { d.finish(j, name, wait(ctx)) }()
}

func (d *Daemon) finish(j *job, name string, r Result) {
	last := fmt.Sprintf("%s %s", name, r.State)
	if r.Exit != nil {
		last += fmt.Sprintf(" exit %d", *r.Exit)
	}
	d.mu.Lock()
	j.last = last
	if j.running == name {
		j.running = ""
	}
	d.mu.Unlock()
}

// Access is who may read the crontab: its owner, group and read bits.
// /sys/cron, which shows the crontab's commands, is given them, so that
// whoever may not read the crontab may not read its table either, a rule
// every edge enforces with the reader's own credentials (the kernel's
// check on a FUSE mount counts every group the reader is in). With no
// crontab there is nothing private: anyone may read. A crontab that
// cannot be looked at is the daemon's alone.
func (d *Daemon) Access() (uid, gid, perm uint32) {
	fi, err := os.Stat(d.o.File)
	self, group := uint32(os.Geteuid()), uint32(os.Getegid())
	switch {
	case os.IsNotExist(err):
		return self, group, 0o444
	case err != nil:
		return self, group, 0o400
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return self, group, 0o400
	}
	return st.Uid, st.Gid, uint32(fi.Mode().Perm()) & 0o444
}

// Table is /sys/cron: a line per job (its name, schedule, next run, how
// its last run ended and the run going on, and its command), then the
// refused lines.
func (d *Daemon) Table() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, j := range d.jobs {
		next := "at start"
		if j.sched != nil {
			next = j.next.UTC().Format(time.RFC3339)
		}
		last := j.last
		if last == "" {
			last = "none"
		}
		if j.running != "" {
			last += ", running " + j.running
		}
		fmt.Fprintf(&b, "%s\t%s\tnext %s\tlast %s\t%s\n", j.id, j.spec, next, last, j.command)
	}
	for _, bad := range d.bad {
		fmt.Fprintf(&b, "refused\tline %s\n", bad)
	}
	return []byte(b.String())
}
