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
	// Taken away, the job stops.
	os.WriteFile(d.Path("etc/crontab"), []byte("# nothing\n"), 0o644)
	time.Sleep(1500 * time.Millisecond)
	before, _ := filepath.Glob(d.Path("proc/cron-echo-*"))
	time.Sleep(2 * time.Second)
	after, _ := filepath.Glob(d.Path("proc/cron-echo-*"))
	if len(after) != len(before) {
		t.Errorf("the job ran after its line was removed: %d sessions, then %d", len(before), len(after))
	}
}
