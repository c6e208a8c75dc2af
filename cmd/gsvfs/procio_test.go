//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// Tests of a session's output and environment (gsvfs-proc(7)): stderr
// apart, ctl's env over the login files, rc off and shell, truncation in
// whole lines, and the wait of an exec carrying its output.

// procExecWait is the wait JSON of an exec: its status, output and stderr.
type procExecWait struct {
	procStatus
	Output *string `json:"output"`
	Stderr *string `json:"stderr"`
}

// procReadExecWait reads wait until the exec has ended.
func procReadExecWait(t testing.TB, dir string) procExecWait {
	t.Helper()
	procWaitEnd(t, dir)
	var w procExecWait
	procJSON(t, filepath.Join(dir, "wait"), &w)
	if w.Output == nil || w.Stderr == nil {
		t.Fatalf("%s/wait of an exec lacks output or stderr: %+v", dir, w)
	}
	return w
}

// procHome is the HOME of the daemon's sessions (procMount).
func procHome(t testing.TB, d *daemon) string {
	t.Helper()
	for _, kv := range d.env {
		if home, ok := strings.CutPrefix(kv, "HOME="); ok {
			return home
		}
	}
	t.Fatal("the daemon has no HOME")
	return ""
}

// An exec's standard error is a file of its own, and in its wait; an
// interactive shell keeps the terminal's one merged stream.
func TestProcStderrApart(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	dir, st := procExec(t, d, "apart", "echo to-out; echo to-err >&2; echo more-err >&2; exit 2")
	if st.Status != "failed" || st.exit() != "2" {
		t.Errorf("status %+v, want failed with 2", st)
	}
	if got := procOutput(t, dir); got != "to-out\n" {
		t.Errorf("stdout %q, want only the standard output %q", got, "to-out\n")
	}
	if got := string(smReadFile(t, filepath.Join(dir, "stderr"))); got != "to-err\nmore-err\n" {
		t.Errorf("stderr %q, want %q", got, "to-err\nmore-err\n")
	}
	fi, err := os.Stat(filepath.Join(dir, "stderr"))
	if err != nil || fi.Size() != int64(len("to-err\nmore-err\n")) {
		t.Errorf("stderr's size %v (%v), want the bytes written", fi, err)
	}
	w := procReadExecWait(t, dir)
	if *w.Output != "to-out\n" || *w.Stderr != "to-err\nmore-err\n" || w.exit() != "2" {
		t.Errorf("wait: output %q stderr %q exit %s; want %q, %q, 2", *w.Output, *w.Stderr, w.exit(), "to-out\n", "to-err\nmore-err\n")
	}

	// Standard output stays the terminal, standard error a pipe.
	dir, _ = procExec(t, d, "tty", "test -t 1 && echo out-is-tty; test -t 2 || echo err-is-not-tty")
	if got := procOutput(t, dir); got != "out-is-tty\nerr-is-not-tty\n" {
		t.Errorf("terminal test: %q", got)
	}

	shell := procNew(t, d, "shell")
	c := procRun(t, shell, "echo shell-err >&2")
	if procLines(c.Output) != "shell-err\n" {
		t.Errorf("interactive stderr in the record: %q, want it merged", c.Output)
	}
	if got := string(smReadFile(t, filepath.Join(shell, "stderr"))); got != "" {
		t.Errorf("stderr of an interactive shell: %q, want empty (merged in stdout)", got)
	}
}

// ctl's env is applied after the login files: its values win, in an
// exec and in an interactive shell, whatever they hold.
func TestProcEnvWins(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	profile := "export PATH=/from/login:$PATH\nexport GREETING=from-login\n"
	smMust(t, "write .profile", os.WriteFile(filepath.Join(procHome(t, d), ".profile"), []byte(profile), 0o644))
	ctl := "env PATH=/usr/bin:/bin\nenv GREETING=it's $HOME \"quoted\"\n"
	want := "/usr/bin:/bin|it's $HOME \"quoted\"\n"

	dir := procNew(t, d, "exec")
	procMustWrite(t, filepath.Join(dir, "ctl"), ctl+`exec echo "$PATH|$GREETING"`+"\n")
	procWaitEnd(t, dir)
	if got := procOutput(t, dir); got != want {
		t.Errorf("exec: %q, want ctl's values %q", got, want)
	}
	if got := string(smReadFile(t, filepath.Join(dir, "cmdline"))); got != "echo \"$PATH|$GREETING\"\n" {
		t.Errorf("cmdline %q, want the command as written", got)
	}

	shell := procNew(t, d, "shell")
	procMustWrite(t, filepath.Join(shell, "ctl"), ctl)
	if c := procRun(t, shell, `echo "$PATH|$GREETING"`); procLines(c.Output) != want {
		t.Errorf("interactive: %q, want ctl's values %q", c.Output, want)
	}

	// Without ctl's env the login files' values hold.
	dir, _ = procExec(t, d, "login", `echo "$GREETING"`)
	if got := procOutput(t, dir); got != "from-login\n" {
		t.Errorf("exec without env: %q, want the login file's value", got)
	}
}

// rc off starts the shell without login or rc files; shell picks one
// that /etc/shells lists.
func TestProcRCOffAndShell(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	home := procHome(t, d)
	smMust(t, "write .profile", os.WriteFile(filepath.Join(home, ".profile"), []byte("export GREETING=from-login\n"), 0o644))
	smMust(t, "write .bashrc", os.WriteFile(filepath.Join(home, ".bashrc"), []byte("export GREETING=from-rc\n"), 0o644))

	dir := procNew(t, d, "pristine")
	procMustWrite(t, filepath.Join(dir, "ctl"), "rc off\nenv GIVEN=yes\nexec echo \"[$GREETING] [$GIVEN]\"\n")
	procWaitEnd(t, dir)
	if got := procOutput(t, dir); got != "[] [yes]\n" {
		t.Errorf("exec with rc off: %q, want no login file read and ctl's env", got)
	}
	shell := procNew(t, d, "pristine-shell")
	procMustWrite(t, filepath.Join(shell, "ctl"), "rc off\n")
	if c := procRun(t, shell, `echo "[$GREETING]"`); procLines(c.Output) != "[]\n" || c.Status != "completed" {
		t.Errorf("interactive with rc off: %+v, want [] and a completed record", c)
	}
	dir = procNew(t, d, "rc-on")
	procMustWrite(t, filepath.Join(dir, "ctl"), "rc off\nrc on\nexec echo \"[$GREETING]\"\n")
	procWaitEnd(t, dir)
	if got := procOutput(t, dir); got != "[from-login]\n" {
		t.Errorf("exec with rc on again: %q", got)
	}

	dash := "/bin/dash"
	if _, err := os.Stat(dash); err != nil || !procListedShell(dash) {
		t.Skipf("SKIPPED the shell verb: %s is not here or not in /etc/shells (%v)", dash, err)
	}
	dir = procNew(t, d, "dash")
	procMustWrite(t, filepath.Join(dir, "ctl"), "shell "+dash+"\nexec echo \"$SHELL\"; readlink /proc/$$/exe\n")
	procWaitEnd(t, dir)
	real, _ := filepath.EvalSymlinks(dash)
	if got := procOutput(t, dir); got != dash+"\n"+real+"\n" {
		t.Errorf("exec under shell %s: %q, want SHELL and the process to be it", dash, got)
	}
	shell = procNew(t, d, "dash-shell")
	procMustWrite(t, filepath.Join(shell, "ctl"), "shell "+dash+"\n")
	if c := procRun(t, shell, "readlink /proc/$$/exe"); procLines(c.Output) != real+"\n" {
		t.Errorf("interactive under shell %s: %+v", dash, c)
	}

	for _, tc := range []struct{ line, want string }{
		{"shell /usr/bin/env", "/etc/shells"},
		{"shell bash", "/etc/shells"},
		{"rc maybe", "on or off"},
	} {
		dir := procNew(t, d, "bad-"+strconv.Itoa(len(tc.line)))
		err := procWrite(filepath.Join(dir, "ctl"), tc.line+"\nexec echo ran\n")
		if vfs.Errno(err) != syscall.EINVAL {
			t.Errorf("%q: %s (%v), want EINVAL", tc.line, procErrno(err), err)
		}
		st := procReadStatus(t, dir)
		if !strings.Contains(st.LastError, tc.want) || st.Status != "idle" {
			t.Errorf("%q: status %+v, want idle and lastError naming %q", tc.line, st, tc.want)
		}
	}
}

func procListedShell(path string) bool {
	b, err := os.ReadFile("/etc/shells")
	return err == nil && strings.Contains("\n"+string(b)+"\n", "\n"+path+"\n")
}

// procMarker is the first line of truncated output.
var procMarker = regexp.MustCompile(`^\[gsvfs: ([0-9]+) bytes truncated\]\n`)

// procTruncated checks text against full, the whole output: a marker
// line counting the bytes left out, then the rest of full from the start
// of a line, at most limit bytes of it.
func procTruncated(t *testing.T, what, text, full string, limit int) {
	t.Helper()
	m := procMarker.FindStringSubmatch(text)
	if m == nil {
		t.Errorf("%s does not start with the marker: %.60q", what, text)
		return
	}
	n, _ := strconv.Atoi(m[1])
	rest := text[len(m[0]):]
	switch {
	case n <= 0 || n > len(full) || full[n:] != rest:
		t.Errorf("%s: the marker says %d bytes, but the rest (%d bytes, %.30q...) is not the output after them", what, n, len(rest), rest)
	case full[n-1] != '\n':
		t.Errorf("%s starts inside a line after the marker: %.30q", what, rest)
	case len(rest) > limit:
		t.Errorf("%s keeps %d bytes, more than %d", what, len(rest), limit)
	case len(rest) < limit/2:
		t.Errorf("%s keeps %d bytes of a limit of %d", what, len(rest), limit)
	}
}

// Output past the cap is dropped from the head in whole lines, and its
// first line says how much went; the wait of an exec carries its output,
// bounded the same way.
func TestProcTruncatedLines(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil, "--session-output", "100000")
	dir, st := procExec(t, d, "lines", "seq 1 30000; echo END; seq 1 5000 >&2")
	var full, errs strings.Builder
	for i := 1; i <= 30000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	full.WriteString("END\n")
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&errs, "%d\n", i)
	}
	if st.Status != "completed" || !st.Truncated || st.OutputBytes != int64(full.Len()) {
		t.Fatalf("status %+v, want completed, truncated, every byte counted", st)
	}
	out := procOutput(t, dir)
	procTruncated(t, "stdout", out, full.String(), 100000)
	if s, err := procReadStream(t, dir, procBound); s != out || err != nil {
		t.Errorf("stream (%v) differs from stdout: %s", err, smDescribe([]byte(s), []byte(out)))
	}
	w := procReadExecWait(t, dir)
	procTruncated(t, "wait's output", *w.Output, full.String(), 64<<10)
	if *w.Stderr != errs.String() {
		t.Errorf("wait's stderr: %d bytes, want the %d written (within the bound, whole)", len(*w.Stderr), errs.Len())
	}
}

// Keys sent to a full-screen program are its input, never the start of
// the next command line: q to less, then a command, records the command
// alone, whenever the q was written.
func TestProcKeysToProgramNotInRecord(t *testing.T) {
	t.Parallel()
	needProgram(t, "less")
	d := procMount(t, nil)
	page := filepath.Join(t.TempDir(), "page.txt")
	smMust(t, "write", os.WriteFile(page, []byte(strings.Repeat("a line of text\n", 200)), 0o644))
	for _, tc := range []struct {
		name      string
		waitFirst bool // q written once less is seen waiting
	}{{"waiting", true}, {"at-once", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := procTerminal(t, d, "less-"+tc.name, 24, 80)
			for i := range 3 {
				procMustWrite(t, filepath.Join(dir, "stdin"), "less "+page+"\n")
				last, err := os.Readlink(filepath.Join(dir, "cmds", "last"))
				smMust(t, "cmds/last", err)
				if tc.waitFirst {
					if c := procWaitCommand(t, dir, last); c.Status != "waiting" {
						t.Fatalf("round %d: less is %s, want waiting", i, c.Status)
					}
				}
				procMustWrite(t, filepath.Join(dir, "stdin"), "q")
				procWaitCommand(t, dir, last)
				next := fmt.Sprintf("echo after-%d", i)
				if c := procRun(t, dir, next); c.Output != fmt.Sprintf("after-%d\n", i) || c.Status != "completed" {
					t.Fatalf("round %d: %+v", i, c)
				}
			}
		})
	}
}

// Keys typed ahead while a command runs, which the shell reads once it is
// back at its prompt, are the start of the next line's record: the
// shell's echo shows them.
func TestProcTypeAheadKeys(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	dir := procNew(t, d, "ahead")
	flag := filepath.Join(t.TempDir(), "go-on")
	procMustWrite(t, filepath.Join(dir, "stdin"), "while [ ! -e "+flag+" ]; do sleep 0.02; done\n")
	last, err := os.Readlink(filepath.Join(dir, "cmds", "last"))
	smMust(t, "cmds/last", err)
	procMustWrite(t, filepath.Join(dir, "stdin"), "ech")
	smMust(t, "create the flag", os.WriteFile(flag, nil, 0o644))
	if c := procWaitCommand(t, dir, last); c.Status != "completed" {
		t.Fatalf("the loop: %+v", c)
	}
	procMustWrite(t, filepath.Join(dir, "stdin"), "o typed-$((6*7))\n")
	n, err := os.Readlink(filepath.Join(dir, "cmds", "last"))
	smMust(t, "cmds/last", err)
	if c := procWaitCommand(t, dir, n); c.Input != "echo typed-$((6*7))" || c.Output != "typed-42\n" {
		t.Errorf("the line typed ahead in two writes: %+v, want input %q", c, "echo typed-$((6*7))")
	}
}
