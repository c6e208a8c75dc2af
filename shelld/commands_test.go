package shelld

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// testShells are the interactive shells the command records are tested
// with. One that is not installed is skipped, saying so.
var testShells = []struct {
	name string
	find func(t *testing.T) (string, error)
}{
	{"bash", func(*testing.T) (string, error) { return exec.LookPath("bash") }},
	{"dash", func(*testing.T) (string, error) { return exec.LookPath("dash") }},
	{"busybox", func(t *testing.T) (string, error) {
		bb, err := exec.LookPath("busybox")
		if err != nil {
			return "", err
		}
		// Busybox runs the applet its name says.
		sh := filepath.Join(t.TempDir(), "sh")
		return sh, os.Symlink(bb, sh)
	}},
	{"zsh", func(*testing.T) (string, error) { return exec.LookPath("zsh") }},
}

// forShells runs f in a subtest per shell, with an interactive session of
// that shell started.
func forShells(t *testing.T, f func(t *testing.T, shell string, s *Session)) {
	forShellsWith(t, func(*Session) {}, f)
}

// forShellsWith is forShells with setup run on each session before its
// shell starts.
func forShellsWith(t *testing.T, setup func(*Session), f func(t *testing.T, shell string, s *Session)) {
	for _, sh := range testShells {
		t.Run(sh.name, func(t *testing.T) {
			path, err := sh.find(t)
			if err != nil {
				t.Skipf("SKIPPED: %s is not installed here: %v", sh.name, err)
			}
			m := newManager(t, Config{Shell: path})
			s := create(t, m)
			setup(s)
			if err := s.StartShell(); err != nil {
				t.Fatal(err)
			}
			f(t, sh.name, s)
		})
	}
}

func write(t *testing.T, s *Session, p string) {
	t.Helper()
	if _, err := s.Write([]byte(p)); err != nil {
		t.Fatalf("write %q: %v", p, err)
	}
}

// waitCommand waits for record n to end or wait for input.
func waitCommand(t *testing.T, s *Session, n int) Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	c, err := s.WaitCommand(ctx, n)
	if err != nil {
		t.Fatalf("command %d: %v after %v; output so far:\n%s", n, err, hangBound, output(s))
	}
	return c
}

// waitStatus waits until the session's status is want.
func waitStatus(t *testing.T, s *Session, want string) {
	t.Helper()
	testenv.Eventually(t, hangBound, "session "+want, func() (bool, string) {
		st := s.Status()
		return st.Status == want, fmt.Sprintf("%+v; output:\n%s", st, output(s))
	})
}

// run writes line to the shell and waits for its record.
func run(t *testing.T, s *Session, line string) Command {
	t.Helper()
	before := len(s.Commands())
	write(t, s, line+"\n")
	c, ok := s.LastCommand()
	if !ok || len(s.Commands()) != before+1 {
		t.Fatalf("%q: no new record (%d records, %d before)", line, len(s.Commands()), before)
	}
	return waitCommand(t, s, c.N)
}

// outputOf is a record's output, with the terminal's \r\n as \n.
func outputOf(s *Session, c Command) string {
	buf := make([]byte, c.OutputEnd-c.OutputStart)
	n, _ := s.Output().ReadAt(buf, c.OutputStart)
	return strings.ReplaceAll(string(buf[:n]), "\r\n", "\n")
}

func exitOf(c Command) string {
	if c.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*c.ExitCode)
}

// Each command line written to an interactive shell gets a record with its
// own output and exit code; the shell keeps its directory and variables
// from one line to the next; no marker or nonce reaches the output.
func TestCommandRecords(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		dir := t.TempDir()
		for i, tc := range []struct {
			line, out, status string
			exit              int
		}{
			{"cd " + dir, "", Completed, 0},
			{"X=forty-two", "", Completed, 0},
			{`echo "at:$PWD:$X"`, "at:" + dir + ":forty-two\n", Completed, 0},
			{"true", "", Completed, 0},
			{"false", "", Failed, 1},
			{"(exit 3)", "", Failed, 3},
			{"echo out; echo err >&2; (exit 5)", "out\nerr\n", Failed, 5},
			{"printf 'no newline'", "no newline", Completed, 0},
			{"printf 'part'; sleep 0.2; printf 'ial\\n'", "partial\n", Completed, 0},
			{"printf '\\033[1mbold\\033[0m\\n'", "\x1b[1mbold\x1b[0m\n", Completed, 0},
			{"", "", Completed, 0},
		} {
			c := run(t, s, tc.line)
			if c.N != i+1 || c.Input != tc.line {
				t.Errorf("record n %d input %q, want %d %q", c.N, c.Input, i+1, tc.line)
			}
			if got := outputOf(s, c); got != tc.out {
				t.Errorf("%q: output %q, want %q", tc.line, got, tc.out)
			}
			if c.Status != tc.status || exitOf(c) != strconv.Itoa(tc.exit) {
				t.Errorf("%q: status %s exit %s, want %s %d", tc.line, c.Status, exitOf(c), tc.status, tc.exit)
			}
			if c.StartedAt.IsZero() || c.EndedAt.Before(c.StartedAt) {
				t.Errorf("%q: startedAt %v endedAt %v", tc.line, c.StartedAt, c.EndedAt)
			}
		}
		log := output(s)
		if strings.Contains(log, s.integ.nonce) || strings.Contains(log, markerOSC) {
			t.Errorf("the output holds a marker or the nonce %s:\n%q", s.integ.nonce, log)
		}
	})
}

// Several lines in one write are several records; lines that make one
// command (a loop) end together with its output.
func TestCommandLinesInOneWrite(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		run(t, s, "true")
		write(t, s, "echo one\necho two; (exit 4)\necho three\n")
		waitCommand(t, s, 4)
		write(t, s, "for i in 1 2; do\necho i$i\ndone\n")
		for _, tc := range []struct {
			n         int
			input     string
			out, exit string
		}{
			{2, "echo one", "one\n", "0"},
			{3, "echo two; (exit 4)", "two\n", "4"},
			{4, "echo three", "three\n", "0"},
			{5, "for i in 1 2; do", "i1\ni2\n", "0"},
			{6, "echo i$i", "i1\ni2\n", "0"},
			{7, "done", "i1\ni2\n", "0"},
		} {
			c := waitCommand(t, s, tc.n)
			if c.Input != tc.input || outputOf(s, c) != tc.out || exitOf(c) != tc.exit {
				t.Errorf("record %d: input %q output %q exit %s; want %q %q %s",
					tc.n, c.Input, outputOf(s, c), exitOf(c), tc.input, tc.out, tc.exit)
			}
		}
		if n := len(s.Commands()); n != 7 {
			t.Errorf("%d records, want 7", n)
		}
	})
}

// A long output and a long command line (wrapped by the line editor) are
// recorded whole.
func TestCommandLongOutput(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		c := run(t, s, "seq 1 20000")
		var want strings.Builder
		for i := 1; i <= 20000; i++ {
			want.WriteString(strconv.Itoa(i) + "\n")
		}
		if got := outputOf(s, c); got != want.String() {
			t.Errorf("seq 1 20000: %d bytes of output, want %d; it ends %q", len(got), want.Len(), got[max(0, len(got)-40):])
		}
		long := strings.Repeat("y", 150)
		if c := run(t, s, "echo "+long); outputOf(s, c) != long+"\n" {
			t.Errorf("a 155-character line: output %q, want %q", outputOf(s, c), long+"\n")
		}
	})
}

// The session is waiting when the shell shows its prompt and when a
// command reads input; input written then completes the command and is
// not a record of its own. A command that runs is running, and ^C ends it.
func TestCommandWaiting(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		run(t, s, "true")
		waitStatus(t, s, Waiting) // the shell back at its prompt

		c := run(t, s, "read x")
		if c.Status != Waiting || c.ExitCode != nil {
			t.Errorf("read x: status %s exit %s, want waiting and none", c.Status, exitOf(c))
		}
		if st := s.Status().Status; st != Waiting {
			t.Errorf("during read x: session %s, want waiting", st)
		}
		write(t, s, "foo\n")
		if n := len(s.Commands()); n != 2 {
			t.Errorf("input to read x made a record: %d records, want 2", n)
		}
		if c := waitCommand(t, s, 2); c.Status != Completed || exitOf(c) != "0" {
			t.Errorf("read x after input: status %s exit %s, want completed 0", c.Status, exitOf(c))
		}
		if c := run(t, s, `echo "got:$x"`); outputOf(s, c) != "got:foo\n" {
			t.Errorf("after read x: %q, want got:foo", outputOf(s, c))
		}

		write(t, s, "sleep 30\n")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		c, err := s.WaitCommand(ctx, 4)
		cancel()
		if err == nil || c.Status != Running {
			t.Errorf("sleep 30: WaitCommand returned %v with status %s, want it still running", err, c.Status)
		}
		if st := s.Status().Status; st != Running {
			t.Errorf("during sleep 30: session %s, want running", st)
		}
		write(t, s, "\x03")
		if c := waitCommand(t, s, 4); c.Status != Failed || exitOf(c) != "130" {
			t.Errorf("sleep 30 after ^C: status %s exit %s, want failed 130", c.Status, exitOf(c))
		}
	})
}

// A program reading the terminal (cat, a shell inside the shell) gets the
// lines written while it waits; lines it read from one write with its
// command are marked as its input, not left running.
func TestCommandProgramInput(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		c := run(t, s, "cat")
		if c.Status != Waiting {
			t.Errorf("cat: status %s, want waiting", c.Status)
		}
		write(t, s, "hello\n")
		if err := s.EOF(); err != nil {
			t.Fatal(err)
		}
		if c := waitCommand(t, s, c.N); c.Status != Completed || outputOf(s, c) != "hello\nhello\n" {
			t.Errorf("cat: status %s output %q, want completed and hello twice", c.Status, outputOf(s, c))
		}

		c = run(t, s, "sh")
		write(t, s, "echo inner-$((6*7))\n")
		write(t, s, "exit\n")
		if c := waitCommand(t, s, c.N); c.Status != Completed || !strings.Contains(outputOf(s, c), "inner-42") {
			t.Errorf("a shell inside: status %s output %q, want completed with inner-42", c.Status, outputOf(s, c))
		}
		if n := len(s.Commands()); n != 2 {
			t.Errorf("lines to the inner shell made records: %d, want 2", n)
		}
		if c := run(t, s, "echo after"); outputOf(s, c) != "after\n" {
			t.Errorf("after the inner shell: %q", outputOf(s, c))
		}

		if shell == "zsh" {
			// zsh's line editor drops what was typed ahead of a
			// builtin read: nothing to see.
			return
		}
		write(t, s, "read a\nsomething\n")
		if c := waitCommand(t, s, 4); c.Input != "read a" || c.Status != Completed {
			t.Errorf("read a: %+v", c)
		}
		if c := run(t, s, `echo "a=$a"`); outputOf(s, c) != "a=something\n" {
			t.Errorf("after read a: %q", outputOf(s, c))
		}
		if c, _ := s.Command(5); !c.AsInput || c.Status != Completed || c.Input != "something" {
			t.Errorf("the line read a read: %+v, want it completed as input", c)
		}
	})
}

// The user's login files are read, so the login behaviour is kept; a
// POSIX sh also reads the user's $ENV.
func TestShellReadsLoginFiles(t *testing.T) {
	home := t.TempDir()
	for name, text := range map[string]string{
		".profile":  "GSVFS_LOGIN=profile\n",
		".zprofile": "GSVFS_LOGIN=zprofile\n",
		".zshrc":    "GSVFS_RC=zshrc\n",
		"envrc":     "GSVFS_RC=envrc\n",
	} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	setup := func(s *Session) { s.SetEnv("ENV=" + filepath.Join(home, "envrc")) }
	forShellsWith(t, setup, func(t *testing.T, shell string, s *Session) {
		want := map[string]string{"bash": "profile:", "dash": "profile:envrc", "busybox": "profile:envrc", "zsh": "zprofile:zshrc"}[shell]
		if c := run(t, s, `echo "$GSVFS_LOGIN:$GSVFS_RC"`); outputOf(s, c) != want+"\n" {
			t.Errorf("login files: %q, want %q", outputOf(s, c), want)
		}
	})
}

// A command that ends the shell ends with the shell's exit code; one the
// session's end cuts off fails. The terminal size set is the shell's.
func TestCommandEndsWithShell(t *testing.T) {
	forShells(t, func(t *testing.T, shell string, s *Session) {
		if c := run(t, s, "stty size"); outputOf(s, c) != "24 80\n" {
			t.Errorf("stty size: %q, want 24 80", outputOf(s, c))
		}
		if err := s.Resize(30, 100); err != nil {
			t.Fatal(err)
		}
		if c := run(t, s, "stty size"); outputOf(s, c) != "30 100\n" {
			t.Errorf("stty size after Resize(30, 100): %q", outputOf(s, c))
		}
		c := run(t, s, "exit 3")
		if c.Status != Failed || exitOf(c) != "3" {
			t.Errorf("exit 3: status %s exit %s, want failed 3", c.Status, exitOf(c))
		}
		if st := wait(t, s); st.Status != Failed || st.ExitCode == nil || *st.ExitCode != 3 {
			t.Errorf("the session after exit 3: %+v", st)
		}
	})
	forShells(t, func(t *testing.T, shell string, s *Session) {
		write(t, s, "sleep 30\n")
		s.Kill()
		if c, _ := s.Command(1); c.Status != Failed || c.ExitCode != nil {
			t.Errorf("sleep 30 killed: status %s exit %s, want failed and none", c.Status, exitOf(c))
		}
	})
}

// A shell gsvfs has no integration for still gets records, without exit
// codes, each ending when the next line is written.
func TestCommandsWithoutMarkers(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skipf("SKIPPED: dash is not installed here: %v", err)
	}
	sh := filepath.Join(t.TempDir(), "unknownsh")
	if err := os.Symlink(dash, sh); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{Shell: sh})
	s := create(t, m)
	if err := s.StartShell(); err != nil {
		t.Fatal(err)
	}
	if s.integ != nil {
		t.Fatalf("an integration for %s", sh)
	}
	c := run(t, s, "echo a")
	if c.Status != Waiting || !strings.Contains(outputOf(s, c), "a\n") {
		t.Errorf("echo a: status %s output %q, want waiting with a", c.Status, outputOf(s, c))
	}
	c = run(t, s, "echo b")
	if first, _ := s.Command(1); first.Status != Completed || first.ExitCode != nil || c.N != 2 {
		t.Errorf("after the next line: record 1 %+v, record %d", first, c.N)
	}
}

// A key written to a program without a newline (y to a one-key prompt)
// is its input, not the start of the next command line.
func TestCommandKeyWithoutNewline(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("SKIPPED: bash is not installed here: %v", err)
	}
	s := create(t, newManager(t, Config{Shell: bash}))
	if err := s.StartShell(); err != nil {
		t.Fatal(err)
	}
	c := run(t, s, `read -n 1 k; echo "k=$k"`)
	if c.Status != Waiting {
		t.Errorf("read -n 1: status %s, want waiting", c.Status)
	}
	write(t, s, "y")
	if c := waitCommand(t, s, c.N); c.Status != Completed || outputOf(s, c) != "yk=y\n" { // the key echoed, then echo
		t.Errorf("read -n 1 after y: status %s output %q, want completed, yk=y", c.Status, outputOf(s, c))
	}
	if c := run(t, s, "echo next"); c.Input != "echo next" || outputOf(s, c) != "next\n" {
		t.Errorf("the next line: input %q output %q", c.Input, outputOf(s, c))
	}
}

// A one-command session that reads its terminal is waiting too.
func TestExecWaiting(t *testing.T) {
	m := newManager(t, Config{})
	s := create(t, m)
	if err := s.Exec("read x; echo got-$x"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, Waiting)
	if _, ok := s.LastCommand(); ok {
		t.Error("a one-command session has command records")
	}
	write(t, s, "y\n")
	if st := wait(t, s); st.Status != Completed || !strings.Contains(output(s), "got-y") {
		t.Errorf("after input: %+v, output %q", st, output(s))
	}
}

// The terminal is found waiting whichever way its reader waits for it:
// read(2) in a child of the foreground process, select, poll, epoll; and
// not when a program waits for something else or sleeps.
func TestWaitingSystemCalls(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("SKIPPED: python3 is not installed here: %v", err)
	}
	py := func(code string) string { return `python3 -c "` + code + `"` }
	m := newManager(t, Config{})
	for _, tc := range []struct {
		name, cmd string
		waiting   bool
	}{
		{"read in a child", "cat; echo done", true},
		{"select", py("import select; print('ready', flush=True); select.select([0], [], [])"), true},
		{"poll", py("import select; p = select.poll(); p.register(0, select.POLLIN); print('ready', flush=True); p.poll()"), true},
		{"epoll", py("import select; e = select.epoll(); e.register(0, select.EPOLLIN); print('ready', flush=True); e.poll()"), true},
		{"sleep", py("import time; print('ready', flush=True); time.sleep(30)"), false},
		{"select on a pipe", py("import os, select; r, w = os.pipe(); print('ready', flush=True); select.select([r], [], [])"), false},
	} {
		s := create(t, m)
		if err := s.Exec(tc.cmd); err != nil {
			t.Fatal(err)
		}
		if tc.waiting {
			waitStatus(t, s, Waiting)
			write(t, s, "x\n")
			s.EOF()
			if st := wait(t, s); st.Status != Completed {
				t.Errorf("%s: after input %+v; output %q", tc.name, st, output(s))
			}
			continue
		}
		waitOutput(t, s, "ready")
		if st := s.Status().Status; st != Running {
			t.Errorf("%s: status %s, want running", tc.name, st)
		}
		s.Kill()
	}
}

// The stripper takes markers out whatever the pieces the stream comes in:
// every split point, every pair of split points, byte by byte.
func TestStripperSplits(t *testing.T) {
	const nonce = "0123456789abcdef"
	m := func(body string) string { return markerOSC + nonce + ";" + body + "\a" }
	stream := "a" + m("12;D;0;1") + "$ " + m("12;B") + "ls\r\n\x1b[1mx\x1b[0m" +
		m("12;C") + "out" + "\x1b]6973;fedcba9876543210;12;B\a" + "\x1b]6973;" + nonce + ";not a marker\a" +
		"\x1b]697" + m("12;D;130;2") + "\x1b"
	wantText := "a$ ls\r\n\x1b[1mx\x1b[0mout\x1b]6973;fedcba9876543210;12;B\a\x1b]6973;" + nonce + ";not a marker\a\x1b]697\x1b"
	wantMarks := []string{"1@12;D;0;1", "3@12;B", "16@12;C", strconv.Itoa(len(wantText)-1) + "@12;D;130;2"}

	check := func(name string, pieces []string) {
		t.Helper()
		st := newStripper(nonce)
		var text strings.Builder
		var marks []string
		emit := func(p []byte) { text.Write(p) }
		for _, p := range pieces {
			st.feed([]byte(p), emit, func(body []byte) {
				marks = append(marks, strconv.Itoa(text.Len())+"@"+string(body))
			})
		}
		st.flush(emit)
		if text.String() != wantText || strings.Join(marks, " ") != strings.Join(wantMarks, " ") {
			t.Fatalf("%s: text %q marks %v; want %q %v", name, text.String(), marks, wantText, wantMarks)
		}
	}
	for i := 0; i <= len(stream); i++ {
		check("split at "+strconv.Itoa(i), []string{stream[:i], stream[i:]})
		for j := i; j <= len(stream); j++ {
			check("split at "+strconv.Itoa(i)+" and "+strconv.Itoa(j), []string{stream[:i], stream[i:j], stream[j:]})
		}
	}
	var bytewise []string
	for i := range len(stream) {
		bytewise = append(bytewise, stream[i:i+1])
	}
	check("byte by byte", bytewise)
}

// A marker split across two reads of a real terminal is still taken out:
// the shell's prompt is written while output fills the pipe.
func TestStripperHoldsPartialOutput(t *testing.T) {
	st := newStripper("0123456789abcdef")
	var text strings.Builder
	emit := func(p []byte) { text.Write(p) }
	st.feed([]byte("progress 50%\x1b]69"), emit, func([]byte) { t.Error("a marker") })
	if text.String() != "progress 50%" {
		t.Errorf("before the rest: %q", text.String())
	}
	st.flush(emit) // nothing came: it was output
	if text.String() != "progress 50%\x1b]69" {
		t.Errorf("after flush: %q", text.String())
	}
}

func TestCleanEcho(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"echo hi", "echo hi"},
		{"\x1b[K\x1b[?1h\x1b=\x1b[?2004he\becho hi\x1b[?1l\x1b>\x1b[?2004l\r\r", "echo hi"}, // zsh
		{"\x1b[6necho hi", "echo hi"}, // busybox
		{"cd /tmp; X=4\r\r2", "cd /tmp; X=42"},
		{"caf\u00e9\x7f", "caf\u00e9"},
		{"ab\b\bc", "c"},
		{"\x1b]0;title\aok", "ok"},
	} {
		if got := cleanEcho([]byte(tc.in)); got != tc.want {
			t.Errorf("cleanEcho(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Writes become command lines as typed: in pieces, with \r or \r\n,
// with backspaces; ^C drops a line.
func TestWrittenLines(t *testing.T) {
	tr := newTracker(1, false, false, time.Now)
	for _, tc := range []struct {
		write string
		want  []string
	}{
		{"echo a\necho b\n", []string{"echo a", "echo b"}},
		{"ec", nil},
		{"ho c\r\n", []string{"echo c"}},
		{"ls -lx\x7fa\r", []string{"ls -la"}},
		{"oops\x03", nil},
		{"\n", []string{""}},
		{"x\x15y\n", []string{"y"}},
		{"cut\r", []string{"cut"}},
		{"\nin two\n", []string{"in two"}},
	} {
		var got []string
		for _, l := range tr.lines([]byte(tc.write), false) {
			got = append(got, l.text)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("lines(%q) = %q, want %q", tc.write, got, tc.want)
		}
	}
}

// Only the last MaxCommands records are kept; numbers go on.
func TestCommandRecordsBounded(t *testing.T) {
	tr := newTracker(1, false, false, time.Now)
	for i := 1; i <= MaxCommands+5; i++ {
		tr.add("line " + strconv.Itoa(i))
	}
	if len(tr.recs) != MaxCommands {
		t.Errorf("%d records kept, want %d", len(tr.recs), MaxCommands)
	}
	if r := tr.find(5); r != nil {
		t.Errorf("record 5 still kept: %q", r.Input)
	}
	for _, n := range []int{6, MaxCommands + 5} {
		if r := tr.find(n); r == nil || r.Input != "line "+strconv.Itoa(n) {
			t.Errorf("record %d: %+v", n, r)
		}
	}
}

// shellFeed returns what a test feeds tr in place of the terminal of the
// shell with pid 7: text it prints, its markers (mk), and its prompt
// (the marker that a command ended, with its status and sequence number,
// then "$ ", then the marker that the shell reads at its prompt).
func shellFeed(tr *tracker) (text func(string), mk func(kind byte, status, seq int), prompt func(status, seq int)) {
	text = func(s string) { tr.text([]byte(s)) }
	mk = func(kind byte, status, seq int) { tr.mark(marker{pid: 7, kind: kind, status: status, seq: seq}) }
	prompt = func(status, seq int) { mk('D', status, seq); text("$ "); mk('B', 0, 0) }
	return text, mk, prompt
}

// The tracker on a made-up stream: markers of another process and
// redrawn prompts are ignored; a line a program read is found out when
// the shell is back at its prompt, or by the echo of a later line; a
// continuation ends with the command it continues.
func TestTrackerEvents(t *testing.T) {
	tr := newTracker(7, false, true, time.Now)
	text, mk, prompt := shellFeed(tr)
	prompt(0, 1)
	tr.add("python3")
	tr.add("print(1)")
	tr.add("exit()")
	text("python3\r\n>>> print(1)\r\n1\r\n>>> ")
	tr.mark(marker{pid: 99, kind: 'D', seq: 5}) // a nested shell's
	text("exit()\r\n")
	mk('D', 0, 2)
	mk('D', 0, 2) // redrawn
	text("$ ")
	mk('B', 0, 0)
	if c := tr.snapshot(tr.find(2)); c.AsInput || c.Status != Running {
		t.Errorf("print(1) before an inspection: %+v", c)
	}
	tr.settle(probe{waiting: true, fg: 7}, true) // the shell reads at its prompt
	tr.add("for i in 1; do")
	tr.add("echo $i")
	tr.add("done")
	text("for i in 1; do\r\n> ")
	mk('S', 0, 0)
	text("echo $i\r\n> ")
	mk('S', 0, 0)
	text("done\r\n1\r\n")
	prompt(3, 3)
	tr.add("read v")
	tr.add("typed")
	tr.add("echo y")
	text("read v\r\ntyped\r\n")
	prompt(0, 4)
	text("echo y\r\ny\r\n")
	mk('D', 0, 5)
	for _, tc := range []struct {
		n       int
		status  string
		exit    string
		out     string
		asInput bool
	}{
		{1, Completed, "0", ">>> print(1)\r\n1\r\n>>> exit()\r\n", false},
		{2, Completed, "none", "", true},
		{3, Completed, "none", "", true},
		{4, Failed, "3", "1\r\n", false},
		{5, Failed, "3", "1\r\n", false},
		{6, Failed, "3", "1\r\n", false},
		{7, Completed, "0", "typed\r\n", false}, // a line editor's terminal echoes nothing
		{8, Completed, "none", "", true},        // passed over by the echo of echo y
		{9, Completed, "0", "y\r\n", false},
	} {
		c := tr.snapshot(tr.find(tc.n))
		if c.Status != tc.status || exitOf(c) != tc.exit || c.AsInput != tc.asInput {
			t.Errorf("record %d (%q): status %s exit %s asInput %v, want %s %s %v",
				tc.n, c.Input, c.Status, exitOf(c), c.AsInput, tc.status, tc.exit, tc.asInput)
		}
		if c.OutputEnd-c.OutputStart != int64(len(tc.out)) {
			t.Errorf("record %d (%q): output [%d,%d), want %d bytes %q", tc.n, c.Input, c.OutputStart, c.OutputEnd, len(tc.out), tc.out)
		}
	}
}

// Without a line editor (dash) the terminal echoes lines when they are
// written: the echoes of lines typed with the one the shell reads are not
// its output, and the echo of a later line does not pass over the lines
// before it.
func TestTrackerTerminalEcho(t *testing.T) {
	tr := newTracker(7, false, false, time.Now)
	text, mk, prompt := shellFeed(tr)
	prompt(0, 1)
	tr.add("echo a")
	tr.add("echo b")
	text("echo a\r\necho b\r\na\r\n")
	prompt(0, 2)
	text("b\r\n")
	prompt(0, 3)
	tr.add("sleep 1")
	text("sleep 1\r\n")
	tr.add("true")
	tr.add("echo c")
	text("true\r\necho c\r\n") // typed while sleep ran
	prompt(0, 4)
	prompt(0, 5)
	text("c\r\n")
	mk('D', 0, 6)
	for _, tc := range []struct {
		n   int
		out string
	}{{1, "a\r\n"}, {2, "b\r\n"}, {3, ""}, {4, ""}, {5, "c\r\n"}} {
		c := tr.snapshot(tr.find(tc.n))
		if c.Status != Completed || c.AsInput || c.OutputEnd-c.OutputStart != int64(len(tc.out)) {
			t.Errorf("record %d (%q): %s asInput %v output [%d,%d), want completed with %q",
				tc.n, c.Input, c.Status, c.AsInput, c.OutputStart, c.OutputEnd, tc.out)
		}
	}
}

// What `env` gives wins over the login and rc files, in every shell the
// integration knows, interactive and for an exec; rc off reads none.
func TestEnvWinsAndRCOff(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{".profile", ".zprofile", ".zshrc", ".zlogin", ".zshenv", "envrc"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte("GSVFS_V=login; export GSVFS_V\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	given := `ctl's $v "x"`
	forShellsWith(t, func(s *Session) { s.SetEnv("GSVFS_V=" + given) }, func(t *testing.T, shell string, s *Session) {
		if c := run(t, s, `echo "$GSVFS_V"`); outputOf(s, c) != given+"\n" {
			t.Errorf("interactive %s: %q, want env's %q", shell, outputOf(s, c), given)
		}
	})
	forShellsWith(t, func(s *Session) { s.SetEnv("ENV=" + filepath.Join(home, "envrc")); s.SetRC(false) }, func(t *testing.T, shell string, s *Session) {
		if c := run(t, s, `echo "[$GSVFS_V]"`); outputOf(s, c) != "[]\n" || c.Status != Completed {
			t.Errorf("interactive %s with rc off: %q (%s), want [] and a completed record", shell, outputOf(s, c), c.Status)
		}
	})
	for _, sh := range testShells {
		t.Run(sh.name+"-exec", func(t *testing.T) {
			path, err := sh.find(t)
			if err != nil {
				t.Skipf("SKIPPED: %s is not installed here: %v", sh.name, err)
			}
			m := newManager(t, Config{Shell: path})
			for _, tc := range []struct {
				rc   bool
				want string
			}{{true, given}, {false, ""}} {
				s := create(t, m)
				s.SetRC(tc.rc)
				if tc.rc {
					s.SetEnv("GSVFS_V=" + given)
				}
				s.Exec(`echo "$GSVFS_V"`)
				if st := wait(t, s); st.Status != Completed || output(s) != tc.want+"\n" {
					t.Errorf("exec in %s, rc %v: %s %q, want %q", sh.name, tc.rc, st.Status, output(s), tc.want)
				}
			}
		})
	}
}
