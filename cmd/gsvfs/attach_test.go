//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/shelld"
)

// The attach tests run `gsvfs attach` in a real terminal: a pane of a
// private tmux server, driven with send-keys and read with capture-pane.
// The sessions are the daemon's (procMount, proc_helpers_test.go), whose
// /proc the tests also read through the mount.

// TestAttachOverMount is the whole life of an attachment through the
// files of a FUSE mount: a new session, typing, the terminal's size and
// its changes, detaching, attaching again to see the output replayed,
// and the shell's exit status becoming attach's.
func TestAttachOverMount(t *testing.T) {
	tm := atNewTmux(t)
	d := procMount(t, nil)
	tm.start("one", "attach", "--mount", d.Mnt, "--new")
	id := tm.waitFor("one", regexp.MustCompile(`gsvfs: attached to session (\S+); detach with Ctrl-\]`))[1]
	dir := d.Path("proc/" + id)
	atShortYield(t, dir)

	tm.typeLine("one", "echo hi-$((6*7))")
	tm.waitFor("one", regexp.MustCompile(`(?m)^hi-42\s*$`))
	// Reads of the stream now end empty every 100ms; attach must read on.
	// Time is what is tested: several of those empty reads must pass.
	time.Sleep(500 * time.Millisecond)
	tm.typeLine("one", "stty size")
	tm.waitFor("one", regexp.MustCompile(`(?m)^30 100\s*$`))

	// The size follows the terminal's (SIGWINCH). stty is asked again
	// until it says so: it may run before attach has passed the change on.
	tm.tmux("resize-window", "-t", "one", "-x", "120", "-y", "40")
	tm.until("one", regexp.MustCompile(`(?m)^40 120\s*$`), func() { tm.typeLine("one", "stty size") })

	tm.keys("one", "C-]")
	tm.waitFor("one", regexp.MustCompile(`gsvfs: detached from session `+regexp.QuoteMeta(id)+`\s+attach exited 0, terminal restored`))
	if st := procReadStatus(t, dir); st.Status != shelld.Waiting && st.Status != shelld.Running {
		t.Fatalf("session %s after detaching: %s, want it still running", id, st.Status)
	}

	tm.start("two", "attach", "--mount", d.Mnt, id)
	tm.waitFor("two", regexp.MustCompile(`(?m)^hi-42\s*$`)) // replayed: nobody typed it here
	tm.typeLine("two", "exit 3")
	tm.waitFor("two", regexp.MustCompile(`gsvfs: session `+regexp.QuoteMeta(id)+` exited with status 3\s+attach exited 3, terminal restored`))
}

// TestAttachOverSocket attaches over 9P to the daemon of a state
// directory (--root), keeps the connection while a read of the stream
// waits for output, and passes a kill on as 128+9.
func TestAttachOverSocket(t *testing.T) {
	tm := atNewTmux(t)
	d := procMount(t, nil)
	tm.start("sock", "attach", "--root", d.Root, "--new")
	id := tm.waitFor("sock", regexp.MustCompile(`attached to session (\S+);`))[1]
	dir := d.Path("proc/" + id)

	tm.typeLine("sock", "echo over-$((6*7))")
	tm.waitFor("sock", regexp.MustCompile(`(?m)^over-42\s*$`))
	// attach's read of the stream now waits for output (up to the yield
	// time, 5 s), while its 9P client probes the quiet server every
	// 300ms; the connection must live through that (time is what is
	// tested: several probes must pass).
	time.Sleep(1500 * time.Millisecond)
	tm.typeLine("sock", "echo still-$((6*7))")
	tm.waitFor("sock", regexp.MustCompile(`(?m)^still-42\s*$`))

	procMustWrite(t, filepath.Join(dir, "ctl"), "kill\n")
	tm.waitFor("sock", regexp.MustCompile(`gsvfs: session `+regexp.QuoteMeta(id)+` was killed by SIGKILL\s+attach exited 137, terminal restored`))
}

// TestAttachSignal: a signal detaches, restoring the terminal, and
// leaves the session running.
func TestAttachSignal(t *testing.T) {
	tm := atNewTmux(t)
	d := procMount(t, nil)
	tm.start("sig", "attach", "--mount", d.Mnt, "--new")
	m := tm.waitFor("sig", regexp.MustCompile(`attach pid (\d+)\s+gsvfs: attached to session (\S+);`))
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tm.waitFor("sig", regexp.MustCompile(`gsvfs: terminated; detached from session `+regexp.QuoteMeta(m[2])+
		`, which runs on\s+attach exited 143, terminal restored`))
	if st := procReadStatus(t, d.Path("proc/"+m[2])); st.ended() {
		t.Fatalf("session %s after attach's SIGTERM: %s, want it still running", m[2], st.Status)
	}
}

// TestAttachErrors: attach says what is wrong, exits 1, and makes no
// session when it cannot use it.
func TestAttachErrors(t *testing.T) {
	d := procMount(t, nil)
	procNew(t, d, "here")
	noDaemon := filepath.Join(t.TempDir(), "state")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--root", noDaemon, "here"}, "no daemon serves " + noDaemon + "; start one with gsvfs mount or gsvfs serve, or pass --server/--mount"},
		{[]string{"--mount", d.Mnt, "nosuch"}, `no such session "nosuch" (gsvfs ps lists them)`},
		{[]string{"--root", d.Root, "nosuch"}, `no such session "nosuch"`},
		{[]string{"--mount", d.Mnt, "../etc"}, `"../etc" is not a session name`},
		{[]string{"--mount", d.Mnt}, "name a SESSION to attach to"},
		{[]string{"--mount", d.Mnt, "--new", "here"}, "give either --new or SESSION"},
		{[]string{"--mount", d.Mnt, "--root", d.Root, "here"}, "--root, --server and --mount exclude each other"},
		{[]string{"--mount", d.Mnt, "--detach-key", "q", "here"}, `--detach-key "q": want a control key in ^X notation`},
		{[]string{"--mount", d.Mnt, "here"}, "attach needs a terminal on standard input"},
		{[]string{"--mount", d.Mnt, "--new"}, "attach needs a terminal on standard input"},
	} {
		cmd := exec.Command(binary, append([]string{"attach"}, tc.args...)...)
		cmd.Stdin = nil // /dev/null: no terminal
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), tc.want) {
			t.Errorf("gsvfs attach %s: exit %d (%v), %q; want exit 1 and %q", strings.Join(tc.args, " "), code, err, out, tc.want)
		}
	}
	if names, _ := os.ReadDir(d.Path("proc")); len(names) != 3 { // clone, status, here
		t.Errorf("/proc after the failed attaches: %d entries, want clone, status and here only", len(names))
	}
}

func TestAttachDetachKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byte
		name string
	}{
		{"^]", 0x1d, "Ctrl-]"}, {"^a", 0x01, "Ctrl-A"}, {"^Q", 0x11, "Ctrl-Q"}, {"^@", 0, "Ctrl-@"},
		{"^_", 0x1f, "Ctrl-_"}, {"^?", 0x7f, "Ctrl-?"}, {"^\\", 0x1c, "Ctrl-\\"},
	} {
		got, err := parseDetachKey(tc.in)
		if err != nil || got != tc.want || keyName(got) != tc.name {
			t.Errorf("parseDetachKey(%q) = %#x, %v, named %q; want %#x, %q", tc.in, got, err, keyName(got), tc.want, tc.name)
		}
	}
	for _, bad := range []string{"", "]", "^", "^1", "^]]", "C-]", "^~"} {
		if got, err := parseDetachKey(bad); err == nil {
			t.Errorf("parseDetachKey(%q) = %#x, want an error", bad, got)
		}
	}
}

func TestAttachEndReason(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		st   shelld.Status
		why  string
		exit int
	}{
		{shelld.Status{Status: shelld.Completed, ExitCode: code(0)}, "exited", 0},
		{shelld.Status{Status: shelld.Failed, ExitCode: code(3)}, "exited with status 3", 3},
		{shelld.Status{Status: shelld.Killed, Signal: "SIGKILL"}, "was killed by SIGKILL", 137},
		{shelld.Status{Status: shelld.Killed, Signal: "SIGTERM", TimedOut: true}, "was killed by SIGTERM at its timeout", 143},
		{shelld.Status{Status: shelld.Killed, Signal: "SIG40"}, "was killed by SIG40", 168},
		{shelld.Status{Status: shelld.Failed, LastError: "start /bin/nope: no such file"}, "failed: start /bin/nope: no such file", 1},
	} {
		why, exit := endReason(tc.st)
		if why != tc.why || exit != tc.exit {
			t.Errorf("endReason(%+v) = %q, %d; want %q, %d", tc.st, why, exit, tc.why, tc.exit)
		}
	}
}

// atShortYield makes the session's blocking reads end every 100ms, so a
// test sees attach read on after empty reads without waiting 5 s.
func atShortYield(t *testing.T, dir string) {
	t.Helper()
	procMustWrite(t, filepath.Join(dir, "ctl"), "yield 0.1\n")
}

// atTmuxServers numbers the tests' tmux servers apart.
var atTmuxServers atomic.Int64

// atTmux is a private tmux server whose panes are the terminals of the
// commands under test. A pane stays after its command exits, so its last
// words can be read; each command runs under atWrapper.
type atTmux struct {
	t          *testing.T
	sock, conf string
}

// atNewTmux starts nothing yet: the server comes with the first pane and
// is killed when the test ends.
func atNewTmux(t *testing.T) *atTmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("SKIPPED: tmux is not installed; .ci/run installs it")
	}
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	// No status line: the pane is the whole window, 30 rows of 100.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := &atTmux{t: t, conf: conf, sock: fmt.Sprintf("gsvfs-test-%d-%d", os.Getpid(), atTmuxServers.Add(1))}
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	return tm
}

// tmux runs a tmux command on the server and returns its output.
func (tm *atTmux) tmux(args ...string) string {
	tm.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", tm.sock, "-f", tm.conf}, args...)...)
	cmd.Env = procEnviron("TERM=xterm") // tmux wants to know a terminal, even detached
	out, err := cmd.CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// atWrapper runs a command in a pane: it says the command's pid (an
// inner sh that execs it), and when it ends its exit status and whether
// the terminal's modes are as they were before.
const atWrapper = `before=$(stty -g)
sh -c 'echo "attach pid $$"; exec "$0" "$@"' "$@"
code=$?
if [ "$(stty -g)" = "$before" ]; then modes=restored; else modes=changed; fi
echo "attach exited $code, terminal $modes"`

// start runs gsvfs with args in a new 100x30 pane called name.
func (tm *atTmux) start(name string, args ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"new-session", "-d", "-s", name, "-x", "100", "-y", "30", "--",
		"sh", "-c", atWrapper, "sh", binary}, args...)...)
}

// keys sends tmux key names (C-], Enter) to the pane.
func (tm *atTmux) keys(name string, keys ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", name}, keys...)...)
}

// typeLine types text literally, then Enter.
func (tm *atTmux) typeLine(name, text string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", name, "-l", text)
	tm.keys(name, "Enter")
}

// screen is everything the pane has shown, its history included, with
// wrapped lines joined.
func (tm *atTmux) screen(name string) string {
	tm.t.Helper()
	return tm.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", name)
}

// waitFor polls the pane until re matches and returns the match.
func (tm *atTmux) waitFor(name string, re *regexp.Regexp) []string {
	tm.t.Helper()
	return tm.until(name, re, nil)
}

// until polls the pane until re matches, doing again (if not nil) every
// half second what should make it match; it returns the match.
func (tm *atTmux) until(name string, re *regexp.Regexp, again func()) []string {
	tm.t.Helper()
	var m []string
	last := time.Time{}
	testenv.Eventually(tm.t, procBound, fmt.Sprintf("pane %s shows %s", name, re), func() (bool, string) {
		if again != nil && time.Since(last) > 500*time.Millisecond {
			again()
			last = time.Now()
		}
		s := tm.screen(name)
		m = re.FindStringSubmatch(s)
		return m != nil, "\n" + s
	})
	return m
}
