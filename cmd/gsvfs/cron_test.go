//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// A line added to /etc/crontab through the mount runs as /proc sessions
// named after its job, with their output and exit codes as files, and
// /sys/cron/jobs says when it runs next and how it last ended.
func TestCrontab(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("# every second\n@every 1s echo tick from cron\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var runs []string
	testenv.Eventually(t, 15*time.Second, "two cron sessions", func() (bool, string) {
		runs, _ = filepath.Glob(d.Path("proc/cron-echo-*"))
		return len(runs) >= 2, fmt.Sprint(runs)
	})
	first := runs[0]
	if !strings.HasSuffix(first, "-1") {
		t.Errorf("first run's session: %s, want a name ending in -1", first)
	}
	if b, err := os.ReadFile(filepath.Join(first, "wait")); err != nil || !strings.Contains(string(b), `"exitCode":0`) {
		t.Errorf("the run's wait: %s, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(first, "stdout")); !strings.Contains(string(b), "tick from cron") {
		t.Errorf("the run's output: %q", b)
	}
	table, err := os.ReadFile(d.Path("sys/cron/jobs"))
	if err != nil || !strings.Contains(string(table), "@every 1s") || !strings.Contains(string(table), "completed exit 0") {
		t.Errorf("/sys/cron/jobs: %q, %v", table, err)
	}
	// Taken away, the job stops. Its line is replaced by another job's,
	// whose runs show that the daemon went on running due jobs. Cron
	// starts a run's session before it reads the crontab again, so once
	// /sys/cron/jobs lacks the line every run of it has its session.
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("@every 1s true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !testenv.Poll(30*time.Second, func() bool {
		b, err := os.ReadFile(d.Path("sys/cron/jobs"))
		return err == nil && !strings.Contains(string(b), "echo") && strings.Contains(string(b), "true")
	}) {
		t.Fatalf("/sys/cron/jobs still shows the removed line after 30 s")
	}
	before, _ := filepath.Glob(d.Path("proc/cron-echo-*"))
	if !testenv.Poll(30*time.Second, func() bool {
		others, _ := filepath.Glob(d.Path("proc/cron-true-*"))
		return len(others) >= 3
	}) {
		t.Fatalf("the new job did not run three times in 30 s")
	}
	after, _ := filepath.Glob(d.Path("proc/cron-echo-*"))
	if len(after) != len(before) {
		t.Errorf("the job ran after its line was removed: %d sessions, then %d", len(before), len(after))
	}
}

// A private crontab (0600, root's, a bearer token in a command) stays
// private in /sys/cron: an ordinary user's cat of its jobs is refused, as
// for the crontab itself, and so is running a job through its ctl, and
// the daemon's log, which everyone reads in /sys/log, holds none of its
// lines, refused ones included. Made readable to all, the crontab's table
// is too.
func TestCronPrivateCrontab(t *testing.T) {
	d := smSharedMount(t)
	crontab := filepath.Join(d.Root, "etc", "crontab")
	const secret, refusedSecret = "Bearer tok-4f9a1c", "tok-77e0b2"
	text := "@every 1h curl -H 'Authorization: " + secret + "' https://example.invalid/\n" +
		refusedSecret + " * * * * echo refused\n"
	if err := os.WriteFile(crontab, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The table as root, once the daemon has read the crontab.
	var table []byte
	testenv.Poll(15*time.Second, func() bool {
		table, _ = os.ReadFile(d.Path("sys/cron/jobs"))
		return strings.Contains(string(table), "refused")
	})
	if !strings.Contains(string(table), secret) || !strings.Contains(string(table), refusedSecret) {
		t.Fatalf("/sys/cron/jobs read by root, who may read the crontab: %q; want all of it", table)
	}
	// A second mount of the state directory attaches to the daemon over
	// 9P as root, for all its users: the mount's kernel still checks.
	second := mountAt(t, d.Root, filepath.Join(filepath.Dir(d.Mnt), "second"))
	t.Cleanup(func() { second.stop(t) })
	sys := d.Path("sys")
	for _, dir := range []string{sys, second.Path("sys")} {
		out := smAsOther(t, dir, "cat cron/jobs; echo status $?")
		if strings.Contains(out, "tok-") || !strings.Contains(out, "Permission denied") {
			t.Errorf("cat %s/cron/jobs as uid %d, who may not read the 0600 crontab: %q; want it refused", dir, smOther, out)
		}
		id, _, _ := strings.Cut(string(table), "\t")
		if out := smAsOther(t, dir, "echo run "+id+" > cron/ctl; echo status $?"); !strings.Contains(out, "Permission denied") {
			t.Errorf("echo run %s > %s/cron/ctl as uid %d, who may not write the crontab: %q; want it refused", id, dir, smOther, out)
		}
	}
	if out := smAsOther(t, sys, "cat log"); strings.Contains(out, "tok-") || !strings.Contains(out, "lines refused") {
		t.Errorf("/sys/log as uid %d: %q; want the refusal noted without the crontab's text", smOther, out)
	}
	if err := os.Chmod(crontab, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := smAsOther(t, sys, "cat cron/jobs"); !strings.Contains(out, secret) {
		t.Errorf("cat /sys/cron/jobs as uid %d once the crontab is 0644: %q; want the whole table", smOther, out)
	}
}

// cronJob waits until /sys/cron/jobs has a line for command and returns
// it; its first field is the job's id.
func cronJob(t *testing.T, d *daemon, command string) string {
	t.Helper()
	var line string
	testenv.Eventually(t, 15*time.Second, "a line for "+command+" in /sys/cron/jobs", func() (bool, string) {
		line = cronLine(d, command)
		return line != "", line
	})
	return line
}

func cronLine(d *daemon, command string) string {
	b, _ := os.ReadFile(d.Path("sys/cron/jobs"))
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasSuffix(line, "\t"+command) {
			return line
		}
	}
	return ""
}

func cronID(line string) string {
	id, _, _ := strings.Cut(line, "\t")
	return id
}

// cronHistory waits until /sys/cron/history has a line containing want.
func cronHistory(t *testing.T, d *daemon, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "/sys/cron/history with "+want, func() (bool, string) {
		b, _ := os.ReadFile(d.Path("sys/cron/history"))
		return strings.Contains(string(b), want), string(b)
	})
}

// `echo run JOB > /sys/cron/ctl` runs a job now, whatever its schedule,
// as its next session, and /sys/cron/history records it; a line that
// names no verb or no job fails the write with EINVAL and /sys/cron/jobs
// says why.
func TestCronCtlRun(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("@yearly echo ran by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := cronID(cronJob(t, d, "echo ran by hand"))
	if err := os.WriteFile(d.Path("sys/cron/ctl"), []byte("run "+id+"\n"), 0o644); err != nil {
		t.Fatalf("echo run %s > /sys/cron/ctl: %v", id, err)
	}
	session := d.Path("proc/cron-" + id + "-1")
	testenv.Eventually(t, 15*time.Second, "the run's session", func() (bool, string) {
		_, err := os.Stat(session)
		return err == nil, fmt.Sprint(err)
	})
	if st := procWaitEnd(t, session); st.exit() != "0" || !strings.Contains(procOutput(t, session), "ran by hand") {
		t.Errorf("the run: exit %s, output %q", st.exit(), procOutput(t, session))
	}
	cronHistory(t, d, id+"\tcron-"+id+"-1\tby ctl\tstart ")
	cronHistory(t, d, "\texit 0\tcompleted\n")
	for line, why := range map[string]string{
		"frob " + id:    `unknown verb "frob"`,
		"run":           "which job?",
		"run nope-0000": `no job "nope-0000"`,
	} {
		err := os.WriteFile(d.Path("sys/cron/ctl"), []byte(line+"\n"), 0o644)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("echo %s > /sys/cron/ctl: %v, want EINVAL", line, err)
		}
		if b, _ := os.ReadFile(d.Path("sys/cron/jobs")); !strings.Contains(string(b), "refused\tctl ") || !strings.Contains(string(b), why) {
			t.Errorf("after %q, /sys/cron/jobs does not say %s:\n%s", line, why, b)
		}
	}
}

// A job's runs are kept in /sys/cron/history, with their session, start,
// end and exit code, across an edit of /etc/crontab that leaves the
// job's schedule and command as they were: the job keeps its id and
// count, and a run going on during the edit has its end recorded.
func TestCronHistoryAcrossEdit(t *testing.T) {
	d := startMount(t)
	gate := filepath.Join(t.TempDir(), "gate")
	command := "while [ ! -e " + gate + " ]; do sleep 0.1; done; echo gated"
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("@yearly "+command+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := cronID(cronJob(t, d, command))
	if err := os.WriteFile(d.Path("sys/cron/ctl"), []byte("run "+id+"\n"), 0o644); err != nil {
		t.Fatalf("echo run %s > /sys/cron/ctl: %v", id, err)
	}
	testenv.Eventually(t, 15*time.Second, "the run going on in /sys/cron/jobs", func() (bool, string) {
		line := cronLine(d, command)
		return strings.Contains(line, "running cron-"+id+"-1"), line
	})
	edit := "# edited\n@every 1h true\n@yearly   " + command + "\n"
	if err := os.WriteFile(d.Path("etc/crontab"), []byte(edit), 0o644); err != nil {
		t.Fatal(err)
	}
	cronJob(t, d, "true")
	if line := cronLine(d, command); cronID(line) != id || !strings.Contains(line, "running cron-"+id+"-1") {
		t.Fatalf("the job after the edit: %q; want id %s, its run going on", line, id)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cronHistory(t, d, id+"\tcron-"+id+"-1\tby ctl\tstart ")
	cronHistory(t, d, "\texit 0\tcompleted\n")
	if err := os.WriteFile(d.Path("sys/cron/ctl"), []byte("run "+id+"\n"), 0o644); err != nil {
		t.Fatalf("echo run %s > /sys/cron/ctl after the edit: %v", id, err)
	}
	cronHistory(t, d, id+"\tcron-"+id+"-2\tby ctl\t")
}

// @in and @at run once (@at read in the zone it names), and /sys/cron/jobs
// says so, with when and how they ended; an @at whose time has passed
// never runs. CRON_TZ= reads a line in a named zone, an unknown zone is
// refused with why, and @every takes days.
func TestCronOneShotsAndZones(t *testing.T) {
	d := startMount(t)
	at := time.Now().Add(8 * time.Second).In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05-07:00")
	tab := "@in 2s echo in once\n@at " + at + " echo at once\n@at 2020-01-01T00:00Z echo at past\n" +
		"CRON_TZ=Europe/Paris 0 9 * * * echo paris\nCRON_TZ=Mars/Olympus 0 9 * * * echo mars\n@every 1d echo daily\n"
	if err := os.WriteFile(d.Path("etc/crontab"), []byte(tab), 0o644); err != nil {
		t.Fatal(err)
	}
	once := map[string]string{}
	for _, command := range []string{"echo in once", "echo at once"} {
		testenv.Eventually(t, 30*time.Second, command+" done in /sys/cron/jobs", func() (bool, string) {
			line := cronLine(d, command)
			return strings.Contains(line, "\tnext done\tlast cron-") && strings.Contains(line, " completed exit 0 ended "), line
		})
		once[command] = cronID(cronLine(d, command))
		session := d.Path("proc/cron-" + once[command] + "-1")
		if out := procOutput(t, session); !strings.Contains(out, strings.TrimPrefix(command, "echo ")) {
			t.Errorf("%s's output: %q", command, out)
		}
	}
	// An edit later, with the daemon running due jobs, each ran once.
	if err := os.WriteFile(d.Path("etc/crontab"), []byte(tab+"@every 1s true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "three runs of a new job", func() (bool, string) {
		runs, _ := filepath.Glob(d.Path("proc/cron-true-*"))
		return len(runs) >= 3, fmt.Sprint(runs)
	})
	for command, id := range once {
		if runs, _ := filepath.Glob(d.Path("proc/cron-" + id + "-*")); len(runs) != 1 {
			t.Errorf("%s ran as %q, want once", command, runs)
		}
	}
	table, _ := os.ReadFile(d.Path("sys/cron/jobs"))
	for _, want := range []string{
		`\tnext expired [^\t]*\tlast none\techo at past\n`,
		`CRON_TZ=Europe/Paris 0 9 \* \* \*\tnext \d{4}-\d\d-\d\dT09:00:00\+0[12]:00\t`,
		`refused\tline 5: CRON_TZ=Mars/Olympus .*unknown time zone "Mars/Olympus"`,
		`\t@every 1d\tnext \S+\tlast none\techo daily\n`,
	} {
		if !regexp.MustCompile(want).Match(table) {
			t.Errorf("/sys/cron/jobs does not match %q:\n%s", want, table)
		}
	}
}
