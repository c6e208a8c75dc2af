//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A line added to /etc/crontab through the mount runs as /proc sessions
// named after its job, with their output and exit codes as files, and
// /sys/cron says when it runs next and how it last ended.
func TestCrontab(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("# every second\n@every 1s echo tick from cron\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var runs []string
	deadline := time.Now().Add(15 * time.Second)
	for len(runs) < 2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		runs, _ = filepath.Glob(d.Path("proc/cron-echo-*"))
	}
	if len(runs) < 2 {
		t.Fatalf("cron sessions after 15 s: %q", runs)
	}
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
	table, err := os.ReadFile(d.Path("sys/cron"))
	if err != nil || !strings.Contains(string(table), "@every 1s") || !strings.Contains(string(table), "completed exit 0") {
		t.Errorf("/sys/cron: %q, %v", table, err)
	}
	// Taken away, the job stops. Its line is replaced by another job's,
	// whose runs show that the daemon went on running due jobs. Cron
	// starts a run's session before it reads the crontab again, so once
	// /sys/cron lacks the line every run of it has its session.
	os.WriteFile(d.Path("etc/crontab"), []byte("@every 1s true\n"), 0o644)
	if !waitFor(30*time.Second, func() bool {
		b, err := os.ReadFile(d.Path("sys/cron"))
		return err == nil && !strings.Contains(string(b), "echo") && strings.Contains(string(b), "true")
	}) {
		t.Fatalf("/sys/cron still shows the removed line after 30 s")
	}
	before, _ := filepath.Glob(d.Path("proc/cron-echo-*"))
	if !waitFor(30*time.Second, func() bool {
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
// private in /sys/cron: an ordinary user's cat is refused, as for the
// crontab itself, and the daemon's log, which everyone reads in /sys/log,
// holds none of its lines, refused ones included. Made readable to all,
// the crontab's table is too.
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
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		table, _ = os.ReadFile(d.Path("sys/cron"))
		if strings.Contains(string(table), "refused") {
			break
		}
	}
	if !strings.Contains(string(table), secret) || !strings.Contains(string(table), refusedSecret) {
		t.Fatalf("/sys/cron read by root, who may read the crontab: %q; want all of it", table)
	}
	// A second mount of the state directory attaches to the daemon over
	// 9P as root, for all its users: the mount's kernel still checks.
	second := mountAt(t, d.Root, filepath.Join(filepath.Dir(d.Mnt), "second"))
	t.Cleanup(func() { second.stop(t) })
	sys := d.Path("sys")
	for _, dir := range []string{sys, second.Path("sys")} {
		out := smAsOther(t, dir, "cat cron; echo status $?")
		if strings.Contains(out, "tok-") || !strings.Contains(out, "Permission denied") {
			t.Errorf("cat %s/cron as uid %d, who may not read the 0600 crontab: %q; want it refused", dir, smOther, out)
		}
	}
	if out := smAsOther(t, sys, "cat log"); strings.Contains(out, "tok-") || !strings.Contains(out, "lines refused") {
		t.Errorf("/sys/log as uid %d: %q; want the refusal noted without the crontab's text", smOther, out)
	}
	if err := os.Chmod(crontab, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := smAsOther(t, sys, "cat cron"); !strings.Contains(out, secret) {
		t.Errorf("cat /sys/cron as uid %d once the crontab is 0644: %q; want the whole table", smOther, out)
	}
}
