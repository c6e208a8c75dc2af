//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// TestPs lists the same sessions through the files of the mount and over
// 9P on the daemon's socket: a finished exec, an interactive shell and
// two idle sessions, in natural order of their names.
func TestPs(t *testing.T) {
	d := procMount(t, nil)
	shell := psShell(t, d)
	_, job := procExec(t, d, "job", "echo done-ok")
	if job.Status != "completed" {
		t.Fatalf("exec echo done-ok: %s, want completed", job.Status)
	}
	procNew(t, d, "10")
	procNew(t, d, "9")

	// No flag, run inside the mount: its daemon, not the default state
	// directory's (none serves that here), nor another mount's. The
	// command runs in a directory named through a symbolic link, as a
	// TMPDIR behind one would: $PWD then differs from the kernel's path
	// that the mount table uses.
	procMount(t, nil)
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(d.Path("workspaces"), link); err != nil {
		t.Fatal(err)
	}
	for _, where := range [][]string{{"--mount", d.Mnt}, {"--root", d.Root}, {}} {
		name := "no-flag"
		if len(where) > 0 {
			name = where[0]
		}
		t.Run(name, func(t *testing.T) {
			rows := psTable(t, psRunIn(t, link, append([]string{"ps"}, where...)...))
			want := []map[string]string{
				{"ID": shell, "COMMAND": `bash`, "AGE": `\d+s`, "OUTPUT": `[1-9][0-9.]*K?`},
				{"ID": "9", "STATUS": "idle", "COMMAND": "-", "AGE": "-", "OUTPUT": "0"},
				{"ID": "10", "STATUS": "idle", "COMMAND": "-", "AGE": "-", "OUTPUT": "0"},
				// "done-ok\n"
				{"ID": "job", "STATUS": "completed", "COMMAND": "echo done-ok", "AGE": `\d+s`, "OUTPUT": "8"},
			}
			if len(rows) != len(want) {
				t.Fatalf("gsvfs ps: %d sessions, want %d: %v", len(rows), len(want), rows)
			}
			for i, w := range want {
				for col, re := range w {
					if !regexp.MustCompile(`^(` + re + `)$`).MatchString(rows[i][col]) {
						t.Errorf("gsvfs ps, row %d, %s: %q, want %s", i+1, col, rows[i][col], re)
					}
				}
			}
			if st := rows[0]["STATUS"]; st != "running" && st != "waiting" {
				t.Errorf("gsvfs ps: the shell is %s, want running or waiting", st)
			}

			var list []map[string]any
			out := psRunIn(t, d.Path("workspaces"), append([]string{"ps", "--json"}, where...)...)
			if err := json.Unmarshal([]byte(out), &list); err != nil || strings.Count(out, "\n") != 1 {
				t.Fatalf("gsvfs ps --json: not one line of a JSON array (%v): %q", err, out)
			}
			var ids []string
			for _, st := range list {
				ids = append(ids, st["id"].(string))
			}
			if want := []string{shell, "9", "10", "job"}; !slices.Equal(ids, want) {
				t.Errorf("gsvfs ps --json: ids %v, want %v", ids, want)
			}
			if j := list[3]; j["status"] != "completed" || j["exitCode"] != 0.0 || j["outputBytes"] != 8.0 || j["command"] != "echo done-ok" {
				t.Errorf("gsvfs ps --json: job is %v", j)
			}
		})
	}
}

// psShell makes a session from /proc/clone and starts its shell with a
// line on stdin; it returns the session's name.
func psShell(t *testing.T, d *daemon) string {
	t.Helper()
	clone, err := os.ReadFile(d.Path("proc/clone"))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(clone))
	procMustWrite(t, d.Path("proc/"+id+"/stdin"), "echo hi\n")
	testenv.Eventually(t, procBound, "the shell prints", func() (bool, string) {
		st := procReadStatus(t, d.Path("proc/"+id))
		return st.OutputBytes > 0, st.Status
	})
	return id
}

func TestPsEmpty(t *testing.T) {
	d := procMount(t, nil)
	if got := psRun(t, "ps", "--mount", d.Mnt); got != "ID  STATUS  COMMAND  AGE  OUTPUT\n" {
		t.Errorf("gsvfs ps with no sessions: %q, want the header alone", got)
	}
	if got := psRun(t, "ps", "--json", "--root", d.Root); got != "[]\n" {
		t.Errorf("gsvfs ps --json with no sessions: %q, want []", got)
	}
}

func TestPsNoDaemon(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	out, err := exec.Command(binary, "ps", "--root", root).CombinedOutput()
	want := "gsvfs: no daemon serves " + root + "; start one with gsvfs mount or gsvfs serve, or pass --server/--mount\n"
	if err == nil || string(out) != want {
		t.Errorf("gsvfs ps with no daemon: %v, %q; want exit 1 and %q", err, out, want)
	}
}

func TestPsNaturalOrder(t *testing.T) {
	names := []string{"job", "10", "b2", "9", "b10", "010", "1", "a", "b1x", ""}
	slices.SortFunc(names, naturalCompare)
	want := []string{"", "1", "9", "010", "10", "a", "b1x", "b2", "b10", "job"}
	if !slices.Equal(names, want) {
		t.Errorf("natural order: %q, want %q", names, want)
	}
}

func TestPsHumanSizes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {9, "9"}, {1023, "1023"}, {1024, "1.0K"}, {1234, "1.2K"}, {10 * 1024, "10K"},
		{200000, "195K"}, {5 << 20, "5.0M"}, {3 << 30, "3.0G"}, {10239, "10K"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"}, {0, "0s"}, {59 * time.Second, "59s"}, {61 * time.Second, "1m"},
		{59 * time.Minute, "59m"}, {3 * time.Hour, "3h"}, {47 * time.Hour, "47h"}, {72 * time.Hour, "3d"},
	} {
		if got := humanAge(tc.d); got != tc.want {
			t.Errorf("humanAge(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// psRun runs gsvfs with args and returns its standard output.
func psRun(t *testing.T, args ...string) string {
	t.Helper()
	return psRunIn(t, "", args...)
}

// psRunIn runs gsvfs with args in the directory dir.
func psRunIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gsvfs %s: %v\n%s", strings.Join(args, " "), err, psStderr(err))
	}
	return string(out)
}

func psStderr(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// psTable parses ps's table by the columns of its header, which checks
// that every row is aligned under it.
func psTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	cols := []string{"ID", "STATUS", "COMMAND", "AGE", "OUTPUT"}
	starts := make([]int, len(cols))
	for i, c := range cols {
		starts[i] = strings.Index(lines[0], c)
	}
	if !slices.IsSorted(starts) || starts[0] != 0 || slices.Contains(starts, -1) {
		t.Fatalf("gsvfs ps header: %q, want %s", lines[0], strings.Join(cols, " "))
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, c := range cols {
			end := len(line)
			if i+1 < len(cols) {
				end = starts[i+1]
			}
			if len(line) < end || (i > 0 && line[starts[i]-1] != ' ') {
				t.Fatalf("gsvfs ps: row %q is not aligned under %q", line, lines[0])
			}
			row[c] = strings.TrimSpace(line[starts[i]:end])
		}
		rows = append(rows, row)
	}
	return rows
}

// The mount a directory is in: the deepest that holds it, by whole names.
func TestEnclosingMount(t *testing.T) {
	mounts := []string{"/home/u/gsv", "/home/u/gsv/mnt/other", "/srv/g"}
	for _, tc := range []struct{ dir, want string }{
		{"/home/u/gsv", "/home/u/gsv"},
		{"/home/u/gsv/proc/1", "/home/u/gsv"},
		{"/home/u/gsv/mnt/other/x", "/home/u/gsv/mnt/other"},
		{"/home/u/gsv2", ""},
		{"/srv", ""},
	} {
		got, ok := enclosingMount(tc.dir, mounts)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("enclosingMount(%q): %q, %v; want %q", tc.dir, got, ok, tc.want)
		}
	}
}
