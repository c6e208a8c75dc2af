//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// TestCronRunsLeaveNoZombies runs a cron job three times, as `* * * * *`
// does each minute, and an exec session once: once each has ended,
// none is left as a zombie child of the daemon (issue 29, item 6). A
// session's process used to stay unreaped until the session was
// forgotten, half an hour later.
func TestCronRunsLeaveNoZombies(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("etc/crontab"), []byte("@yearly true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := cronID(cronJob(t, d, "true"))
	for n := 1; n <= 3; n++ {
		if err := os.WriteFile(d.Path("sys/cron/ctl"), []byte("run "+id+"\n"), 0o644); err != nil {
			t.Fatalf("echo run %s > /sys/cron/ctl: %v", id, err)
		}
		cronHistory(t, d, fmt.Sprintf("cron-%s-%d\tby ctl\tstart ", id, n))
	}
	testenv.Eventually(t, 15*time.Second, "three runs ended", func() (bool, string) {
		b, _ := os.ReadFile(d.Path("sys/cron/history"))
		return strings.Count(string(b), "\texit 0\tcompleted\n") == 3, string(b)
	})
	session := d.Path("proc/z")
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(session, "ctl"), []byte("exec true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	procWaitEnd(t, session)
	if z := zombieChildren(d.cmd.Process.Pid); len(z) != 0 {
		t.Errorf("zombie children of the daemon after 4 ended sessions: %v, want none", z)
	}
}

// zombieChildren lists the zombie children of process pid, from /proc.
func zombieChildren(pid int) []string {
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	var zombies []string
	for _, name := range names {
		data, err := os.ReadFile(name)
		i := strings.LastIndexByte(string(data), ')')
		if err != nil || i < 0 {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(pid) {
			zombies = append(zombies, string(data[:i+1]))
		}
	}
	return zombies
}
