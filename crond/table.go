package crond

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Control runs one line written to /sys/cron/ctl: `run JOB` starts a run
// of JOB now, whatever its schedule, which it leaves as it was. A line
// that names no verb or job fails with EINVAL; why is kept for
// /sys/cron/jobs until the next write.
func (d *Daemon) Control(line string) error {
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	var err error
	switch {
	case verb != "run":
		err = fmt.Errorf("unknown verb %q (want run JOB): %w", verb, syscall.EINVAL)
	case arg == "":
		err = fmt.Errorf("run: which job? (want run JOB, JOB a name from /sys/cron/jobs): %w", syscall.EINVAL)
	default:
		err = d.runNow(arg)
	}
	d.mu.Lock()
	d.ctlErr = ""
	if err != nil {
		d.ctlErr = d.o.Clock().UTC().Format(time.RFC3339) + " " + err.Error()
	}
	d.mu.Unlock()
	if err != nil {
		// Not the line: the log is everyone's.
		d.o.Log.Warn("cron: a write to /sys/cron/ctl was refused; /sys/cron/jobs says why")
		return &fs.PathError{Op: "write", Path: "/sys/cron/ctl", Err: err}
	}
	return nil
}

func (d *Daemon) runNow(id string) error {
	d.mu.Lock()
	i := slices.IndexFunc(d.jobs, func(j *job) bool { return j.id == id })
	var j *job
	if i >= 0 {
		j = d.jobs[i]
	}
	s := d.ctl
	d.mu.Unlock()
	if s == nil {
		return fmt.Errorf("run: this daemon runs no jobs (it serves no sessions): %w", syscall.ENOTSUP)
	}
	if j == nil {
		return fmt.Errorf("run: no job %q in /sys/cron/jobs: %w", id, syscall.EINVAL)
	}
	if err := s.ask(j); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	return nil
}

// Table is /sys/cron/jobs: a line per job (its name, schedule, next run,
// how its last run ended and the runs going on, and its command), then
// the refused lines and the last refused ctl write.
func (d *Daemon) Table() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, j := range d.jobs {
		last, running := "none", ""
		for _, r := range j.rec.history {
			if r.end.IsZero() {
				running += ", running " + r.session
			} else {
				last = r.session + " " + r.outcome() + " ended " + stamp(r.end)
			}
		}
		fmt.Fprintf(&b, "%s\t%s\tnext %s\tlast %s%s\t%s\n", j.id, j.spec, j.nextText(), last, running, j.command)
	}
	for _, bad := range d.bad {
		fmt.Fprintf(&b, "refused\tline %s\n", bad)
	}
	if d.ctlErr != "" {
		fmt.Fprintf(&b, "refused\tctl %s\n", d.ctlErr)
	}
	return []byte(b.String())
}

// History is /sys/cron/history: each job's last runs, oldest first, a
// line each: the job, the run's session, why it ran, when it started and
// ended, its exit code and state.
func (d *Daemon) History() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, j := range d.jobs {
		for _, r := range j.rec.history {
			end, exit, state := "-", "-", "running"
			if !r.end.IsZero() {
				end, state = stamp(r.end), r.state
			}
			if r.exit != nil {
				exit = fmt.Sprint(*r.exit)
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\tstart %s\tend %s\texit %s\t%s\n", j.id, r.session, r.trigger, stamp(r.start), end, exit, state)
		}
	}
	return []byte(b.String())
}

// nextText is when j runs next: a time in the job's zone (UTC without
// CRON_TZ), "at start", or, for a one-shot that will not, its fate.
func (j *job) nextText() string {
	switch {
	case j.kind == atStart:
		return "at start"
	case j.rec.fate != "":
		return j.rec.fate
	case j.zone != nil:
		return j.next.In(j.zone).Format(time.RFC3339)
	}
	return stamp(j.next)
}

// location is where j's times without a zone are read.
func (j *job) location() *time.Location {
	if j.zone != nil {
		return j.zone
	}
	return time.Local
}

func (r *run) outcome() string {
	if r.exit == nil {
		return r.state
	}
	return fmt.Sprintf("%s exit %d", r.state, *r.exit)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
