//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// Helpers of the /proc tests (proc_test.go): mounts whose sessions run
// bash in a home of their own, and readers of the session files.

// procBound bounds every wait for something a session does at once; it
// is generous so that a loaded machine (two cores, a hundred shells) does
// not fail the tests. No test sleeps for a fixed time to assert anything:
// they poll until a deadline.
const procBound = 20 * time.Second

// procMount starts a mount whose sessions run bash, with a fresh HOME (so
// the login shell reads no one's start-up files but the system's) and
// extraEnv added to the daemon's environment.
func procMount(t *testing.T, extraEnv []string, extra ...string) *daemon {
	t.Helper()
	vfstest.NeedFUSE(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("SKIPPED: bash is not installed here: %v", err)
	}
	base := t.TempDir()
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"mount", "--foreground", "--root", root, "--session-shell", bash}, extra...)
	env := append(procEnviron("HOME="+home), extraEnv...)
	d := launch(t, &daemon{Root: root, Mnt: mnt, env: env}, append(args, mnt)...)
	t.Cleanup(func() { d.stop(t) })
	if _, err := os.Stat(filepath.Join(mnt, "proc", "status")); err != nil {
		t.Fatalf("gsvfs is not serving /proc: %v\n%s", err, d.log)
	}
	return d
}

// procEnviron is this process's environment with the given NAME=VALUE
// pairs replacing or adding to it.
func procEnviron(kv ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		name, _, _ := strings.Cut(e, "=")
		return slices.ContainsFunc(kv, func(x string) bool { return strings.HasPrefix(x, name+"=") })
	})
	return append(env, kv...)
}

// procStatus is /proc/<id>/status and /proc/<id>/wait.
type procStatus struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Pid         int    `json:"pid"`
	Command     string `json:"command"`
	Workdir     string `json:"workdir"`
	ExitCode    *int   `json:"exitCode"`
	Signal      string `json:"signal"`
	TimedOut    bool   `json:"timedOut"`
	DurationMs  int64  `json:"durationMs"`
	OutputBytes int64  `json:"outputBytes"`
	Truncated   bool   `json:"truncated"`
	LastError   string `json:"lastError"`
}

func (s procStatus) ended() bool {
	return s.Status == "completed" || s.Status == "failed" || s.Status == "killed"
}

func (s procStatus) exit() string { return procExit(s.ExitCode) }

func procExit(code *int) string {
	if code == nil {
		return "none"
	}
	return strconv.Itoa(*code)
}

// procCommand is /proc/<id>/cmds/<n>/status and (with Output) wait.
type procCommand struct {
	N           int    `json:"n"`
	Input       string `json:"input"`
	Status      string `json:"status"`
	ExitCode    *int   `json:"exitCode"`
	OutputStart int64  `json:"outputStart"`
	OutputEnd   int64  `json:"outputEnd"`
	AsInput     bool   `json:"asInput"`
	Output      string `json:"output"`
}

// procSummary is /proc/status.
type procSummary struct {
	Sessions  int    `json:"sessions"`
	Live      int    `json:"live"`
	MaxLive   int    `json:"maxLive"`
	LastError string `json:"lastError"`
}

// procJSON reads the file p and decodes its one line of JSON into v.
func procJSON(t testing.TB, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if err := json.Unmarshal(b, v); err != nil || !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("%s is not one line of JSON (%v): %q", p, err, b)
	}
}

func procReadStatus(t testing.TB, dir string) procStatus {
	t.Helper()
	var st procStatus
	procJSON(t, filepath.Join(dir, "status"), &st)
	return st
}

func procReadSummary(t testing.TB, d *daemon) procSummary {
	t.Helper()
	var s procSummary
	procJSON(t, d.Path("proc/status"), &s)
	return s
}

// procNew makes the session name (mkdir) and returns its directory.
func procNew(t testing.TB, d *daemon, name string) string {
	t.Helper()
	dir := d.Path("proc/" + name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", dir, err)
	}
	return dir
}

// procTerminal makes the session name with a terminal of rows×cols, as a
// full-screen program wants one.
func procTerminal(t testing.TB, d *daemon, name string, rows, cols int) string {
	t.Helper()
	dir := procNew(t, d, name)
	procResize(t, dir, rows, cols)
	return dir
}

// procResize gives the session in dir a terminal of rows×cols (ctl resize).
func procResize(t testing.TB, dir string, rows, cols int) {
	t.Helper()
	procMustWrite(t, filepath.Join(dir, "ctl"), fmt.Sprintf("resize %d %d\n", rows, cols))
}

// needProgram skips the test unless program is installed (.ci/run
// installs the ones the tests run).
func needProgram(t testing.TB, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		t.Skipf("SKIPPED: %v (.ci/run installs it)", err)
	}
}

// procWrite writes data to a session file (stdin, ctl) as one write, as
// `echo > file` does (O_TRUNC included), and returns the write's error.
func procWrite(p, data string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(data))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func procMustWrite(t testing.TB, p, data string) {
	t.Helper()
	if err := procWrite(p, data); err != nil {
		t.Fatalf("write %q to %s: %v", data, p, err)
	}
}

// procExec runs command in a fresh session name (ctl exec) and returns
// its directory and its status once it has ended.
func procExec(t testing.TB, d *daemon, name, command string) (string, procStatus) {
	t.Helper()
	dir := procNew(t, d, name)
	procMustWrite(t, filepath.Join(dir, "ctl"), "exec "+command+"\n")
	return dir, procWaitEnd(t, dir)
}

// procWaitEnd reads wait again and again (each read ends at the yield
// time at the latest) until the session's process has ended.
func procWaitEnd(t testing.TB, dir string) procStatus {
	t.Helper()
	deadline := time.Now().Add(procBound)
	for {
		var st procStatus
		procJSON(t, filepath.Join(dir, "wait"), &st)
		if st.ended() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %s after %v; output:\n%s", dir, st.Status, procBound, procOutput(t, dir))
		}
	}
}

// procWaitFor reads wait until the session's status is want.
func procWaitFor(t testing.TB, dir, want string) procStatus {
	t.Helper()
	deadline := time.Now().Add(procBound)
	for {
		var st procStatus
		procJSON(t, filepath.Join(dir, "wait"), &st)
		if st.Status == want {
			return st
		}
		if time.Now().After(deadline) || (st.ended() && !strings.Contains("completed failed killed", want)) {
			t.Fatalf("%s is %s, want %s; output:\n%s", dir, st.Status, want, procOutput(t, dir))
		}
		if st.Status != "running" {
			time.Sleep(5 * time.Millisecond) // wait returned at once: poll
		}
	}
}

// procOutput is the session's stdout.
func procOutput(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatalf("read %s/stdout: %v", dir, err)
	}
	return string(b)
}

// procLines is output with the terminal's \r\n as \n.
func procLines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// procRun writes line to the interactive shell's stdin and returns the
// record of that line once it has ended or waits for input
// (cmds/last/wait, read again while it only says running).
func procRun(t testing.TB, dir, line string) procCommand {
	t.Helper()
	procMustWrite(t, filepath.Join(dir, "stdin"), line+"\n")
	last, err := os.Readlink(filepath.Join(dir, "cmds", "last"))
	if err != nil {
		t.Fatalf("%q: cmds/last after the write: %v", line, err)
	}
	c := procWaitCommand(t, dir, last)
	if c.Input != line {
		t.Fatalf("cmds/last (%s) after writing %q is the record of %q", last, line, c.Input)
	}
	return c
}

// procWaitCommand reads cmds/n/wait until the record is no longer running.
func procWaitCommand(t testing.TB, dir, n string) procCommand {
	t.Helper()
	deadline := time.Now().Add(procBound)
	for {
		var c procCommand
		procJSON(t, filepath.Join(dir, "cmds", n, "wait"), &c)
		if c.Status != "running" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("command %s (%q) still running after %v; output:\n%s", n, c.Input, procBound, procOutput(t, dir))
		}
	}
}

// procNames lists /proc.
func procNames(t testing.TB, d *daemon) []string {
	t.Helper()
	ents, err := os.ReadDir(d.Path("proc"))
	if err != nil {
		t.Fatalf("list /proc: %v", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// procHostProc is a process of the host as /proc/PID/stat shows it.
type procHostProc struct {
	pid, pgrp, sid int
	state          string
}

// procHostGroup lists the live (not zombie) processes of the host whose
// terminal session is sid: a /proc session's process is a session
// leader, so this is everything it started, in any process group.
func procHostGroup(sid int) []procHostProc {
	var out []procHostProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := procHostStat(pid)
		if ok && p.sid == sid && p.state != "Z" {
			out = append(out, p)
		}
	}
	return out
}

// procHostStat reads /proc/PID/stat: "pid (comm) state ppid pgrp session ...".
func procHostStat(pid int) (procHostProc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procHostProc{}, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 4 {
		return procHostProc{}, false
	}
	pgrp, _ := strconv.Atoi(f[2])
	sid, _ := strconv.Atoi(f[3])
	return procHostProc{pid: pid, pgrp: pgrp, sid: sid, state: f[0]}, true
}

// procAlive reports whether pid is a live process (a zombie is not: it
// runs nothing, and only its parent can make it go; a reaper that is slow
// or absent, as PID 1 of some containers, must not fail the tests).
func procAlive(pid int) bool {
	p, ok := procHostStat(pid)
	return ok && p.state != "Z"
}

// procReadStream reads a session's stream to its end: a read that ends
// empty while the session still runs (the yield time passed) is read
// again at the same offset.
func procReadStream(t testing.TB, dir string, within time.Duration) (string, error) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "stream"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b bytes.Buffer
	deadline := time.Now().Add(within)
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			// An empty read: the end, or the yield time passed.
			if procEndedNow(dir) {
				// Whatever came between this read and the status
				// look: read until the stream is really drained.
				for {
					n, _ := f.Read(buf)
					if n == 0 {
						return b.String(), nil
					}
					b.Write(buf[:n])
				}
			}
			if time.Now().After(deadline) {
				return b.String(), fmt.Errorf("stream of %s not ended after %v", dir, within)
			}
			continue
		}
		if err != nil {
			return b.String(), err
		}
	}
}

func procEndedNow(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return false
	}
	var st procStatus
	return json.Unmarshal(b, &st) == nil && st.ended()
}

// procErrno names the errno of err, for got/want messages.
func procErrno(err error) string { return smErrName(vfs.Errno(err)) }
