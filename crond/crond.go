// Package crond runs the jobs of a crontab as /proc sessions: each run
// is a session named cron-JOB-N, kept for the retention time like any
// other, so its output, exit code and timing are files. Standard
// five-field lines, the @ descriptors (@hourly, @every 2s, @every 1d),
// @reboot, the one-shots @at TIME and @in DURATION, and a CRON_TZ=
// prefix; the file is read again whenever it changes. A job's recent
// runs are kept with it, across edits that keep its line, and a run can
// be started at once through /sys/cron/ctl (Control).
package crond

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/gsvfs/gsvfs/internal/filestamp"
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

	mu sync.Mutex
	// ctl takes the runs /sys/cron/ctl asks for to the daemon's
	// goroutine; nil before Load, set once.
	ctl     *ctlServer
	loaded  sync.Once // Load's work, done once
	jobs    []*job
	bad     []string        // lines refused, with why
	ctlErr  string          // why the last write to /sys/cron/ctl was refused
	crontab *filestamp.File // the version of the crontab last read
}

// job is one line of the crontab.
type job struct {
	id, spec, command string
	kind              kind
	zone              *time.Location // CRON_TZ=, nil for the daemon's local time
	sched             cron.Schedule  // periodic jobs'
	next              time.Time      // when due, for periodic and one-shot jobs
	rec               *record
}

// kind is how a job is scheduled.
type kind int

const (
	periodic kind = iota // five fields, @daily, @every
	atStart              // @reboot
	onceAt               // @at TIME
	onceIn               // @in DURATION
)

// record is what a job has done. A job whose line an edit keeps (same
// schedule, same command: same id) takes over its predecessor's record,
// runs going on included, and its due time.
type record struct {
	runs    int    // runs started, numbering the sessions
	history []*run // the last maxHistory runs, oldest first
	fate    string // a one-shot's: "" while pending, then done or why not
}

// maxHistory is how many runs /sys/cron/history keeps per job.
const maxHistory = 10

// run is one run of a job: its session, why it started, and how it ended.
type run struct {
	session, trigger string
	start, end       time.Time // end is zero while it runs
	exit             *int
	state            string
}

func (r *record) add(x *run) {
	r.history = append(r.history, x)
	if len(r.history) > maxHistory {
		r.history = slices.Delete(r.history, 0, len(r.history)-maxHistory)
	}
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
	return &Daemon{o: o, crontab: filestamp.New(o.File)}
}

// tick is how often the crontab is checked for changes and jobs for
// being due: a second, the finest a schedule can say.
const tick = time.Second

// Load reads the crontab, starts its @reboot jobs and serves the runs
// ctl asks for until ctx ends; Run runs the other jobs. The lines Load
// reads are those found at the daemon's start: a daemon calls it before
// it serves its tree, so that every line written through the tree is
// read later, and runs Run in a goroutine it waits for. Calls after the
// first wait for it, then do nothing.
func (d *Daemon) Load(ctx context.Context) {
	d.loaded.Do(func() {
		s := &ctlServer{asks: make(chan ctlAsk), ended: make(chan struct{})}
		go d.serveCtl(ctx, s)
		d.mu.Lock()
		d.ctl = s
		d.mu.Unlock()
		d.reload(ctx, true)
	})
}

// Run loads the crontab unless Load did, and runs its jobs whenever due
// until ctx ends. It returns once ctl starts nothing more: the runs it
// started end with ctx, as the sessions they run in do.
func (d *Daemon) Run(ctx context.Context) {
	d.Load(ctx)
	d.loop(ctx)
	d.mu.Lock()
	s := d.ctl
	d.mu.Unlock()
	<-s.ended
}

// ctlServer is how a write to /sys/cron/ctl, which comes with no
// context that outlives it, starts a run that ends with the daemon: it
// asks the goroutine that holds the daemon's context (serveCtl), so the
// Daemon keeps no context of its own.
type ctlServer struct {
	asks  chan ctlAsk
	ended chan struct{} // closed once serveCtl returned
}

// ctlAsk is one run asked for, and where its start's error goes.
type ctlAsk struct {
	j     *job
	reply chan error
}

// serveCtl starts the runs asked of s, with ctx, until ctx ends.
func (d *Daemon) serveCtl(ctx context.Context, s *ctlServer) {
	defer close(s.ended)
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-s.asks:
			if ctx.Err() != nil { // both were ready: the end wins
				a.reply <- errStopped
				return
			}
			a.reply <- d.start(ctx, a.j, "by ctl")
		}
	}
}

// ask has the run of j started by s's goroutine.
func (s *ctlServer) ask(j *job) error {
	a := ctlAsk{j: j, reply: make(chan error, 1)}
	select {
	case s.asks <- a:
		return <-a.reply
	case <-s.ended:
		return errStopped
	}
}

// errStopped is why ctl starts no run once the daemon has ended.
var errStopped = fmt.Errorf("the daemon stopped running jobs: %w", syscall.ENOTSUP)

func (d *Daemon) loop(ctx context.Context) {
	for ctx.Err() == nil {
		d.o.Sleep(ctx, tick)
		d.reload(ctx, false)
		d.runDue(ctx)
	}
}

// reload reads the crontab if it changed (or at start).
func (d *Daemon) reload(ctx context.Context, start bool) {
	d.mu.Lock()
	changed, _ := d.crontab.Changed()
	d.mu.Unlock()
	if !start && !changed {
		return
	}
	text, err := os.ReadFile(d.o.File)
	if err != nil && !os.IsNotExist(err) {
		d.o.Log.Warn("cron: cannot read the crontab", "file", d.o.File, "err", err)
		d.mu.Lock()
		d.crontab.Forget() // read it again at the next tick
		d.mu.Unlock()
		return
	}
	now := d.o.Clock()
	jobs, bad := parse(string(text), now)
	if len(bad) > 0 {
		// Not the lines themselves: the log (/sys/log) is everyone's,
		// the crontab may be private and its lines hold secrets.
		d.o.Log.Warn("cron: lines refused; /sys/cron/jobs says which and why", "file", d.o.File, "refused", len(bad))
	}
	d.mu.Lock()
	d.jobs, d.bad = carryOver(d.jobs, jobs, start, now), bad
	d.mu.Unlock()
	if start {
		for _, j := range jobs {
			if j.kind == atStart {
				d.start(ctx, j, "at daemon start")
			}
		}
	}
}

// carryOver gives the jobs that stay their record and due time, so an
// edit neither loses their history nor postpones them, and settles the
// one-shots that are new: one whose time has passed never runs, nor
// does an @in line found at start, which may have run before the
// restart (the daemon keeps no record across restarts, and a one-shot
// runs at most once).
func carryOver(old, fresh []*job, start bool, now time.Time) []*job {
	for _, j := range fresh {
		if i := slices.IndexFunc(old, func(o *job) bool { return o.id == j.id }); i >= 0 {
			j.rec, j.next = old[i].rec, old[i].next
			continue
		}
		switch {
		case j.kind == onceIn && start:
			j.rec.fate = "expired (an @in line found at daemon start)"
		case j.kind == onceAt && j.next.Before(now):
			j.rec.fate = "expired (its time had passed when the line was read)"
		}
	}
	return fresh
}

// runDue starts the jobs whose time has come.
func (d *Daemon) runDue(ctx context.Context) {
	now := d.o.Clock()
	d.mu.Lock()
	var due []*job
	for _, j := range d.jobs {
		switch {
		case now.Before(j.next):
		case j.kind == periodic:
			due = append(due, j)
			j.next = j.sched.Next(now)
		case (j.kind == onceAt || j.kind == onceIn) && j.rec.fate == "":
			due = append(due, j)
			j.rec.fate = "done"
		}
	}
	d.mu.Unlock()
	for _, j := range due {
		d.start(ctx, j, "by schedule")
	}
}

// start runs j once, as session cron-ID-N, and records how it ended.
func (d *Daemon) start(ctx context.Context, j *job, trigger string) error {
	d.mu.Lock()
	j.rec.runs++
	r := &run{session: fmt.Sprintf("cron-%s-%d", j.id, j.rec.runs), trigger: trigger, start: d.o.Clock()}
	j.rec.add(r)
	d.mu.Unlock()
	wait, err := d.o.Runner.Run(r.session, j.command)
	if err != nil {
		d.o.Log.Warn("cron: job not started", "job", j.id, "err", err)
		d.finish(r, Result{State: "not started: " + err.Error()})
		return err
	}
	go func() { d.finish(r, wait(ctx)) }()
	return nil
}

func (d *Daemon) finish(r *run, res Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r.end, r.exit, r.state = d.o.Clock(), res.Exit, res.State
}

// Access is who may read the crontab and who may write it: its owner,
// group and read and write bits. /sys/cron's table and history, which
// show the crontab's commands, get its read bits, so that whoever may
// not read the crontab may not read them either, and /sys/cron/ctl, which
// runs its commands, its write bits: a rule every edge enforces with the
// caller's own credentials (the kernel's check on a FUSE mount counts
// every group the caller is in). With no crontab there is nothing
// private: anyone may read, and there is no job to run. A crontab that
// cannot be looked at is the daemon's alone.
func (d *Daemon) Access() (uid, gid, perm uint32) {
	fi, err := os.Stat(d.o.File)
	self, group := uint32(os.Geteuid()), uint32(os.Getegid())
	switch {
	case os.IsNotExist(err):
		return self, group, 0o644
	case err != nil:
		return self, group, 0o600
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return self, group, 0o600
	}
	return st.Uid, st.Gid, uint32(fi.Mode().Perm()) & 0o666
}
