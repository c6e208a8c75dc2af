//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// The /proc tests drive shell sessions through a real FUSE mount of the
// real daemon, as agents do (gsvfs-proc(7)): mkdir a
// session, write stdin or ctl, read wait, status, stdout, stream and the
// command records. Each group of tests shares one mount; sessions have
// names of their own, so the tests of a group run in parallel.

// An interactive shell: records, waiting, its cwd link, tail -f, exit,
// rm -r.
func TestProcInteractive(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	home := filepath.Join(filepath.Dir(d.Root), "home")

	// The shell keeps its directory and variables from one line to the
	// next; each line's record has its own output and exit code.
	t.Run("records", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "records")
		work := t.TempDir()
		tests := []struct {
			line, out, status, exit string
		}{
			{"cd " + work, "", "completed", "0"},
			{"X=forty-two", "", "completed", "0"},
			{`echo "at:$PWD:$X"`, "at:" + work + ":forty-two\n", "completed", "0"},
			{"false", "", "failed", "1"},
			{"(exit 3)", "", "failed", "3"},
			{"echo out; echo err >&2; (exit 5)", "out\nerr\n", "failed", "5"},
			{"printf 'no newline'", "no newline", "completed", "0"},
		}
		for i, tc := range tests {
			c := procRun(t, dir, tc.line)
			n := strconv.Itoa(i + 1)
			if c.N != i+1 || c.Status != tc.status || procExit(c.ExitCode) != tc.exit || procLines(c.Output) != tc.out {
				t.Errorf("%q: cmds/last/wait is n=%d %s exit %s output %q; want n=%d %s exit %s output %q",
					tc.line, c.N, c.Status, procExit(c.ExitCode), c.Output, i+1, tc.status, tc.exit, tc.out)
			}
			rec := filepath.Join(dir, "cmds", n)
			for file, want := range map[string]string{
				"input":  tc.line + "\n",
				"output": c.Output,
				"exit":   tc.exit + "\n",
			} {
				if got := string(smReadFile(t, filepath.Join(rec, file))); got != want {
					t.Errorf("%q: cmds/%s/%s is %q, want %q", tc.line, n, file, got, want)
				}
			}
			var st procCommand
			procJSON(t, filepath.Join(rec, "status"), &st)
			if st.N != c.N || st.Input != tc.line || st.Status != tc.status || procExit(st.ExitCode) != tc.exit {
				t.Errorf("%q: cmds/%s/status is %+v", tc.line, n, st)
			}
		}
		var names []string
		ents, err := os.ReadDir(filepath.Join(dir, "cmds"))
		smMust(t, "list cmds", err)
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{"1", "2", "3", "4", "5", "6", "7", "last"}
		if !slices.Equal(names, want) {
			t.Errorf("cmds/ lists %q, want %q", names, want)
		}
		if last, err := os.Readlink(filepath.Join(dir, "cmds", "last")); last != "7" {
			t.Errorf("cmds/last links to %q (%v), want 7", last, err)
		}
		// The command has ended: the shell waits at its prompt.
		if st := procWaitFor(t, dir, "waiting"); st.Command != "bash" || st.ExitCode != nil {
			t.Errorf("status at the prompt: %+v, want the login shell, no exit code", st)
		}
		if got := string(smReadFile(t, filepath.Join(dir, "cmdline"))); !strings.HasSuffix(got, "bash -l\n") {
			t.Errorf("cmdline is %q, want the login shell", got)
		}
	})

	// A command that reads its terminal waits; the line written next is
	// its input, not a command, and it completes.
	t.Run("read-input", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "read-input")
		c := procRun(t, dir, "read x; echo got-$x")
		if c.Status != "waiting" || c.ExitCode != nil {
			t.Errorf("a command at `read`: %s exit %s, want waiting with no exit code", c.Status, procExit(c.ExitCode))
		}
		if st := procReadStatus(t, dir); st.Status != "waiting" {
			t.Errorf("session status while `read` waits: %s, want waiting", st.Status)
		}
		if got := string(smReadFile(t, filepath.Join(dir, "cmds", "1", "exit"))); got != "" {
			t.Errorf("exit of a waiting command is %q, want empty", got)
		}
		procMustWrite(t, filepath.Join(dir, "stdin"), "hello\n")
		c = procWaitCommand(t, dir, "1")
		if c.Status != "completed" || procExit(c.ExitCode) != "0" || !strings.Contains(c.Output, "got-hello") {
			t.Errorf("after the input: %s exit %s output %q, want completed 0 with got-hello", c.Status, procExit(c.ExitCode), c.Output)
		}
		if last, _ := os.Readlink(filepath.Join(dir, "cmds", "last")); last != "1" {
			t.Errorf("the input line made a record: cmds/last is %q, want 1", last)
		}
	})

	// cwd links to the start directory, then to the live shell's.
	t.Run("cwd-link", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "cwd-link")
		if got, err := os.Readlink(filepath.Join(dir, "cwd")); got != home {
			t.Errorf("cwd of an idle session: %q (%v), want the daemon's home %s", got, err, home)
		}
		for _, to := range []string{t.TempDir(), "/", t.TempDir()} {
			procRun(t, dir, "cd "+to)
			if got, err := os.Readlink(filepath.Join(dir, "cwd")); got != to {
				t.Errorf("cwd after `cd %s`: %q (%v)", to, got, err)
			}
		}
	})

	// GNU tail -f follows stdout over FUSE: its size grows truthfully.
	t.Run("tail-f", func(t *testing.T) {
		t.Parallel()
		tailPath, err := exec.LookPath("tail")
		if err != nil {
			t.Skipf("SKIPPED: no tail here: %v", err)
		}
		dir := procNew(t, d, "tail-f")
		procRun(t, dir, "echo started")
		tail := exec.Command(tailPath, "-f", "-s", "0.1", filepath.Join(dir, "stdout"))
		out := &testenv.LogBuffer{}
		tail.Stdout, tail.Stderr = out, out
		smMust(t, "start tail -f", tail.Start())
		defer func() {
			tail.Process.Kill()
			tail.Wait()
		}()
		testenv.Eventually(t, procBound, "tail -f shows what was there", func() (bool, string) {
			return strings.Contains(out.String(), "started"), out.String()
		})
		for _, tc := range []struct{ line, want string }{
			{"echo tail-$((6*7))", "tail-42"},
			{"printf 'no-newline-%s' $((7*7))", "no-newline-49"},
			{"seq 1000 1005", "1005"},
		} {
			procMustWrite(t, filepath.Join(dir, "stdin"), tc.line+"\n")
			testenv.Eventually(t, procBound, "tail -f shows the output of "+tc.line, func() (bool, string) {
				return strings.Contains(out.String(), tc.want), out.String()
			})
		}
	})

	// A name looked up before it existed is found once it does: misses in
	// /proc's directories are not cached by the kernel (an agent that
	// checks cmds/last before its first command must not be told ENOENT
	// for a second after it).
	t.Run("no-stale-miss", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "no-stale-miss")
		for _, name := range []string{"cmds/last", "cmds/1", "cmds/1/exit"} {
			if _, err := os.Lstat(filepath.Join(dir, name)); vfs.Errno(err) != syscall.ENOENT {
				t.Fatalf("lstat %s before any command: %v, want ENOENT", name, err)
			}
		}
		procMustWrite(t, filepath.Join(dir, "stdin"), "echo first\n")
		for _, name := range []string{"cmds/last", "cmds/1", "cmds/1/exit"} {
			if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
				t.Errorf("lstat %s right after the first command was written: %v", name, err)
			}
		}
		if _, err := os.Lstat(d.Path("proc/later")); vfs.Errno(err) != syscall.ENOENT {
			t.Fatalf("lstat /proc/later before mkdir: %v, want ENOENT", err)
		}
		procNew(t, d, "later")
		if _, err := os.Lstat(d.Path("proc/later/status")); err != nil {
			t.Errorf("/proc/later/status right after mkdir: %v", err)
		}
	})

	// `signal INT` interrupts the command in front of an interactive
	// shell, as Ctrl-C does, though job control put it in a group of
	// its own; the shell lives on.
	t.Run("signal-foreground", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "signal-foreground")
		procRun(t, dir, "echo ready")
		procMustWrite(t, filepath.Join(dir, "stdin"), "sleep 333\n")
		testenv.Eventually(t, procBound, "sleep 333 runs", func() (bool, string) {
			for _, p := range procHostGroup(procReadStatus(t, dir).Pid) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
				if string(cmdline) == "sleep\x00333\x00" {
					return true, ""
				}
			}
			return false, "no sleep 333 in the session"
		})
		procMustWrite(t, filepath.Join(dir, "ctl"), "signal INT\n")
		c := procWaitCommand(t, dir, "2")
		if c.Input != "sleep 333" || procExit(c.ExitCode) != "130" {
			t.Errorf("the record of the interrupted sleep: %q exit %s, want exit 130", c.Input, procExit(c.ExitCode))
		}
		if got := procRun(t, dir, "echo alive"); !strings.Contains(got.Output, "alive") {
			t.Errorf("the shell after the interrupt: %+v, want it to run `echo alive`", got)
		}
	})

	// After the shell exits, writes to stdin fail with EPIPE.
	t.Run("exit", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "exit")
		procRun(t, dir, "echo hi")
		c := procRun(t, dir, "exit 7")
		if c.Status != "failed" || procExit(c.ExitCode) != "7" {
			t.Errorf("the record of `exit 7`: %s exit %s, want failed 7", c.Status, procExit(c.ExitCode))
		}
		if st := procWaitEnd(t, dir); st.Status != "failed" || st.exit() != "7" {
			t.Errorf("session after `exit 7`: %s exit %s, want failed 7", st.Status, st.exit())
		}
		err := procWrite(filepath.Join(dir, "stdin"), "echo late\n")
		if vfs.Errno(err) != syscall.EPIPE {
			t.Errorf("write to stdin after exit: %s (%v), want EPIPE", procErrno(err), err)
		}
	})

	// rm -r of a session works: its files' unlinks succeed and change
	// nothing, the rmdir at the end kills it.
	t.Run("rm-r", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "rm-r")
		procRun(t, dir, "echo one")
		procRun(t, dir, "echo two")
		pid := procReadStatus(t, dir).Pid
		testenv.Run(t, "/", "rm", "-r", dir)
		if _, err := os.Lstat(dir); vfs.Errno(err) != syscall.ENOENT {
			t.Errorf("stat after rm -r: %v, want ENOENT", err)
		}
		if slices.Contains(procNames(t, d), "rm-r") {
			t.Errorf("/proc still lists the session after rm -r")
		}
		if procAlive(pid) {
			t.Errorf("the shell (pid %d) is alive after rm -r", pid)
		}
	})

	// rmdir of an interactive session ends the jobs its shell started
	// too, though job control gives each its own process group.
	t.Run("rmdir-jobs", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "rmdir-jobs")
		procRun(t, dir, "sleep 311 &")
		procRun(t, dir, "sleep 312 | sleep 313 &")
		sid := procReadStatus(t, dir).Pid
		procs := procHostGroup(sid)
		if len(procs) < 4 {
			t.Fatalf("processes of the session before rmdir: %+v, want the shell and three sleeps", procs)
		}
		smMust(t, "rmdir", os.Remove(dir))
		var left []procHostProc
		for _, p := range procs {
			if procAlive(p.pid) {
				left = append(left, p)
			}
		}
		for _, p := range left {
			syscall.Kill(p.pid, syscall.SIGKILL) // ours to clean up
		}
		if len(left) > 0 {
			t.Errorf("rmdir of an interactive session left its background jobs running: %+v (the shell was pid %d)", left, sid)
		}
	})
}

// One-shot commands (ctl exec), and what every session file does with
// them.
func TestProcExec(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)

	// exec gives the exit code, or the signal that ended the command.
	t.Run("exit-codes", func(t *testing.T) {
		t.Parallel()
		for i, tc := range []struct {
			cmd, status, exit, signal, out string
		}{
			{"echo hi", "completed", "0", "", "hi\n"},
			{"echo oops >&2; exit 3", "failed", "3", "", ""},      // stderr is apart
			{"seq 3", "completed", "0", "", "1\n2\n3\n"},          // as printed: no \r
			{"printf 'a\\r\\nb'", "completed", "0", "", "a\r\nb"}, // a \r it printed stays
			{"kill -TERM $$", "killed", "none", "SIGTERM", ""},
			{"kill -KILL $$", "killed", "none", "SIGKILL", ""},
		} {
			dir, st := procExec(t, d, fmt.Sprintf("exit-%d", i), tc.cmd)
			if st.Status != tc.status || st.exit() != tc.exit || st.Signal != tc.signal {
				t.Errorf("exec %q: %s exit %s signal %q; want %s exit %s signal %q",
					tc.cmd, st.Status, st.exit(), st.Signal, tc.status, tc.exit, tc.signal)
			}
			if got := procOutput(t, dir); got != tc.out {
				t.Errorf("exec %q: stdout %q, want %q", tc.cmd, got, tc.out)
			}
			if st.Command != tc.cmd || st.Pid == 0 || st.TimedOut {
				t.Errorf("exec %q: status %+v", tc.cmd, st)
			}
			if got := string(smReadFile(t, filepath.Join(dir, "cmdline"))); got != tc.cmd+"\n" {
				t.Errorf("exec %q: cmdline %q", tc.cmd, got)
			}
		}
	})

	// The timeout kills the command's group and says so.
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "timeout")
		start := time.Now()
		procMustWrite(t, filepath.Join(dir, "ctl"), "timeout 0.5\nexec sleep 30\n")
		st := procWaitEnd(t, dir)
		if st.Status != "killed" || st.Signal != "SIGTERM" || !st.TimedOut || st.ExitCode != nil {
			t.Errorf("exec past its timeout: %+v, want killed by SIGTERM, timedOut", st)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("a 0.5 s timeout ended the command after %v", took)
		}
	})

	// A session nobody reads does not stall: its output is drained.
	t.Run("nobody-reads", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "nobody-reads")
		procMustWrite(t, filepath.Join(dir, "ctl"), "exec yes | head -c 5000000; echo done\n")
		var st procStatus
		testenv.Eventually(t, 30*time.Second, "yes | head -c 5000000 ends unread", func() (bool, string) {
			st = procReadStatus(t, dir)
			return st.ended(), fmt.Sprintf("%+v", st)
		})
		if st.Status != "completed" || st.exit() != "0" || st.OutputBytes < 5_000_000 {
			t.Errorf("unread session: %+v, want completed 0 with at least 5,000,000 bytes", st)
		}
		if tail := string(smReadFile(t, filepath.Join(dir, "tail"))); !strings.HasSuffix(tail, "y\ndone\n") || len(tail) != 4000 {
			t.Errorf("tail of the unread session: %d bytes ending %q", len(tail), tail[max(0, len(tail)-20):])
		}
	})

	// stdout's size is the bytes written so far, growing as they come;
	// reads at offsets work.
	t.Run("stdout-size", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "stdout-size")
		stdout := filepath.Join(dir, "stdout")
		procMustWrite(t, filepath.Join(dir, "ctl"), "exec for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.15; done\n")
		var sizes []int64
		for deadline := time.Now().Add(procBound); !procEndedNow(dir) && time.Now().Before(deadline); {
			fi, err := os.Stat(stdout)
			smMust(t, "stat stdout", err)
			if len(sizes) == 0 || fi.Size() != sizes[len(sizes)-1] {
				if len(sizes) > 0 && fi.Size() < sizes[len(sizes)-1] {
					t.Errorf("stdout's size went down: %d after %v", fi.Size(), sizes)
				}
				sizes = append(sizes, fi.Size())
			}
			time.Sleep(10 * time.Millisecond) // sampling, not asserting
		}
		st := procWaitEnd(t, dir)
		data := smReadFile(t, stdout)
		fi, err := os.Stat(stdout)
		smMust(t, "stat stdout", err)
		if fi.Size() != int64(len(data)) || st.OutputBytes != int64(len(data)) {
			t.Errorf("stdout: size %d, outputBytes %d, %d bytes read; want all equal", fi.Size(), st.OutputBytes, len(data))
		}
		if len(sizes) < 3 {
			t.Errorf("stdout's size seen while the command ran: %v, want it to grow in steps", sizes)
		}
		if want := "line-1\nline-2\nline-3\nline-4\nline-5\nline-6\n"; string(data) != want {
			t.Errorf("stdout %q, want %q", data, want)
		}
		f, err := os.Open(stdout)
		smMust(t, "open stdout", err)
		defer f.Close()
		for _, off := range []int64{0, 1, 8, 20, int64(len(data)) - 8, int64(len(data)) - 1} {
			buf := make([]byte, 10)
			n, err := f.ReadAt(buf, off)
			want := data[off:min(off+10, int64(len(data)))]
			if !bytes.Equal(buf[:n], want) || (err != nil && err != io.EOF) {
				t.Errorf("pread(10) at %d: %q, %v; want %q", off, buf[:n], err, want)
			}
		}
		if n, err := f.ReadAt(make([]byte, 10), int64(len(data))); n != 0 || err != io.EOF {
			t.Errorf("pread at the end: %d bytes, %v; want EOF", n, err)
		}
	})

	// Several stream readers at once each see the whole output, and
	// each stream ends when the process has exited.
	t.Run("readers", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "readers")
		procMustWrite(t, filepath.Join(dir, "ctl"), "yield 30\nexec for i in $(seq 1 40); do echo reader-line-$i; sleep 0.01; done\n")
		const readers = 5
		got := make([]string, readers)
		errs := make([]error, readers)
		var wg sync.WaitGroup
		for i := range readers {
			wg.Go(func() { got[i], errs[i] = procReadStream(t, dir, procBound) })
		}
		wg.Wait()
		st := procWaitEnd(t, dir)
		want := procOutput(t, dir)
		if !strings.HasSuffix(want, "reader-line-40\n") || st.Status != "completed" {
			t.Fatalf("session %+v, stdout %q", st, want)
		}
		for i := range readers {
			if got[i] != want || errs[i] != nil {
				t.Errorf("stream reader %d: %d bytes (%v); want the whole %d bytes of stdout", i, len(got[i]), errs[i], len(want))
			}
		}
	})

	// A stream read blocks until more output comes, and the stream ends
	// (EOF) once the process has exited.
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "stream")
		f, err := os.Open(filepath.Join(dir, "stream"))
		smMust(t, "open stream", err)
		defer f.Close()
		procMustWrite(t, filepath.Join(dir, "ctl"), "yield 30\nexec sleep 1; echo late; sleep 0.3; echo last\n")
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for reads := 0; !strings.Contains(b.String(), "last\n"); reads++ {
			n, err := f.Read(buf)
			if n == 0 || reads > 10 {
				t.Fatalf("stream read %d: %d bytes (%v) before the output was all there (%q), status %+v", reads, n, err, b.String(), procReadStatus(t, dir))
			}
			b.Write(buf[:n])
		}
		if b.String() != "late\nlast\n" {
			t.Errorf("stream gave %q", b.String())
		}
		n, err := f.Read(buf)
		if n != 0 || err != io.EOF {
			t.Errorf("stream read at the end: %d bytes, %v; want EOF", n, err)
		}
		if st := procReadStatus(t, dir); !st.ended() {
			t.Errorf("stream ended while the session is %s", st.Status)
		}
	})

	// wait and stream block at most the yield time.
	t.Run("yield", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "yield")
		procMustWrite(t, filepath.Join(dir, "ctl"), "yield 1s\nexec sleep 30\n")
		for _, file := range []string{"wait", "stream"} {
			start := time.Now()
			data := smReadFile(t, filepath.Join(dir, file))
			took := time.Since(start)
			if took < 900*time.Millisecond || took > 4500*time.Millisecond {
				t.Errorf("a read of %s with yield 1s returned after %v", file, took)
			}
			if file == "wait" && !strings.Contains(string(data), `"status":"running"`) {
				t.Errorf("wait at the yield time: %s, want status running", data)
			}
			if file == "stream" && len(data) != 0 {
				t.Errorf("stream of a silent command: %q, want nothing", data)
			}
		}
		procMustWrite(t, filepath.Join(dir, "ctl"), "kill")
		if st := procReadStatus(t, dir); st.Status != "killed" || st.Signal != "SIGKILL" {
			t.Errorf("after ctl kill: %s %s, want killed SIGKILL", st.Status, st.Signal)
		}
	})

	// A command reading its terminal is waiting; input written to stdin
	// completes it.
	t.Run("waiting", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "waiting")
		procMustWrite(t, filepath.Join(dir, "ctl"), "exec read x; echo got-$x\n")
		procWaitFor(t, dir, "waiting")
		procMustWrite(t, filepath.Join(dir, "stdin"), "typed\n")
		st := procWaitEnd(t, dir)
		if out := procOutput(t, dir); st.Status != "completed" || !strings.Contains(out, "got-typed\n") {
			t.Errorf("after the input: %s, output %q; want completed with got-typed", st.Status, out)
		}
	})

	// ctl cwd takes a path of the tree (run in its real directory in the
	// state directory) or a host path.
	t.Run("cwd", func(t *testing.T) {
		t.Parallel()
		smMust(t, "mkdir /workspaces/app", os.Mkdir(d.Path("workspaces/app"), 0o755))
		host := t.TempDir()
		for i, tc := range []struct{ dir, want string }{
			{"/workspaces/app", filepath.Join(d.Root, "workspaces", "app")},
			{"/workspaces/app/../app/", filepath.Join(d.Root, "workspaces", "app")},
			{host, host},
		} {
			dir := procNew(t, d, fmt.Sprintf("cwd-%d", i))
			procMustWrite(t, filepath.Join(dir, "ctl"), "cwd "+tc.dir+"\n")
			if got, err := os.Readlink(filepath.Join(dir, "cwd")); got != tc.want {
				t.Errorf("cwd link after ctl cwd %s: %q (%v), want %s", tc.dir, got, err, tc.want)
			}
			procMustWrite(t, filepath.Join(dir, "ctl"), "exec pwd -P")
			st := procWaitEnd(t, dir)
			want, _ := filepath.EvalSymlinks(tc.want)
			if got := procOutput(t, dir); got != want+"\n" || st.Workdir != tc.want {
				t.Errorf("ctl cwd %s: pwd %q, workdir %q; want %s", tc.dir, got, st.Workdir, tc.want)
			}
		}
		dir := procNew(t, d, "cwd-missing")
		err := procWrite(filepath.Join(dir, "ctl"), "cwd /workspaces/none\n")
		if vfs.Errno(err) != syscall.ENOENT || !strings.Contains(procReadStatus(t, dir).LastError, "none") {
			t.Errorf("ctl cwd of a missing directory: %s (%v), lastError %q; want ENOENT and why",
				procErrno(err), err, procReadStatus(t, dir).LastError)
		}
	})

	// A bad ctl write fails with its errno, and lastError says why; no
	// line of it takes effect, those before the bad one included.
	t.Run("bad-ctl", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "bad-ctl")
		ctl := filepath.Join(dir, "ctl")
		for _, tc := range []struct {
			write string
			errno syscall.Errno
			why   string
		}{
			{"bogus\n", syscall.EINVAL, `unknown verb "bogus"`},
			{"EXEC true\n", syscall.EINVAL, `unknown verb "EXEC"`},
			{"exec\n", syscall.EINVAL, "needs an argument"},
			{"timeout soon\n", syscall.EINVAL, `bad duration "soon"`},
			{"timeout -1s\n", syscall.EINVAL, `bad duration "-1s"`},
			{"yield 2h\n", syscall.EINVAL, "longer than"},
			{"signal NOPE\n", syscall.EINVAL, `unknown signal "NOPE"`},
			{"signal TERM\n", syscall.ESRCH, "runs no process"},
			{"resize 0 80\n", syscall.EINVAL, "want ROWS COLS"},
			{"cwd relative/dir\n", syscall.ENOENT, "relative/dir"},
			{"env NOEQUALS\n", syscall.EINVAL, "want NAME=VALUE"},
			{"kill now\n", syscall.EINVAL, "takes no argument"},
			{"env GOOD=1\n# a comment\n\nbogus2\nenv LATER=1\n", syscall.EINVAL, `unknown verb "bogus2"`},
			{"# only a comment\n\n", 0, ""},
			{"env LAST=no-newline", 0, ""},
		} {
			err := procWrite(ctl, tc.write)
			if vfs.Errno(err) != tc.errno {
				t.Errorf("ctl %q: %s (%v), want %s", tc.write, procErrno(err), err, smErrName(tc.errno))
			}
			if st := procReadStatus(t, dir); tc.why != "" && !strings.Contains(st.LastError, tc.why) {
				t.Errorf("ctl %q: lastError %q, want it to say %q", tc.write, st.LastError, tc.why)
			}
		}
		env := string(smReadFile(t, filepath.Join(dir, "env")))
		if !strings.Contains(env, "LAST=no-newline\n") {
			t.Errorf("env lacks LAST=no-newline: a last line without a newline runs at the close\n%s", env)
		}
		if strings.Contains(env, "GOOD=") || strings.Contains(env, "LATER=") {
			t.Errorf("env has GOOD= or LATER=: a line of a failed write took effect\n%s", env)
		}
		if st := procReadStatus(t, dir); st.Status != "idle" {
			t.Errorf("session after failed ctl writes: %s, want idle", st.Status)
		}
		// After the start: exec, cwd and env are refused (EBUSY). (The
		// failed cwd above left the session without a directory: it
		// starts nothing until a cwd succeeds.)
		procMustWrite(t, ctl, "cwd ~\nexec echo started\n")
		procWaitEnd(t, dir)
		for _, tc := range []struct {
			file, write string
			errno       syscall.Errno
		}{
			{"ctl", "exec true\n", syscall.EBUSY},
			{"ctl", "start\n", syscall.EBUSY},
			{"ctl", "env A=1\n", syscall.EBUSY},
			{"ctl", "cwd /\n", syscall.EBUSY},
			{"ctl", "eof\n", syscall.EPIPE},
			{"ctl", "signal TERM\n", syscall.ESRCH},
			{"stdin", "echo late\n", syscall.EPIPE},
		} {
			err := procWrite(filepath.Join(dir, tc.file), tc.write)
			if vfs.Errno(err) != tc.errno {
				t.Errorf("%s %q after the exit: %s (%v), want %s", tc.file, tc.write, procErrno(err), err, smErrName(tc.errno))
			}
		}
	})

	// Agents' atomic saves: a temp file beside stdin or ctl renamed over
	// it acts as one write of its bytes, leaving no stray file; a plain
	// write right after it reaches the real file.
	t.Run("atomic-save", func(t *testing.T) {
		t.Parallel()
		saves := []struct {
			name string
			save func(t *testing.T, target, data string)
		}{
			{"go", func(t *testing.T, target, data string) {
				f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+"-*.tmp")
				smMust(t, "create temp", err)
				_, err = f.WriteString(data)
				smMust(t, "write temp", err)
				smMust(t, "fsync temp", f.Sync())
				smMust(t, "close temp", f.Close())
				smMust(t, "rename", os.Rename(f.Name(), target))
			}},
			{"python", func(t *testing.T, target, data string) {
				py, err := exec.LookPath("python3")
				if err != nil {
					t.Skipf("SKIPPED: no python3 here: %v", err)
				}
				testenv.Run(t, "/", py, "-c", `
import os, sys, tempfile
target, data = sys.argv[1], sys.argv[2]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix='.'+os.path.basename(target)+'.')
with os.fdopen(fd, 'w') as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
os.chmod(tmp, 0o644)
os.replace(tmp, target)
`, target, data)
			}},
			{"node", func(t *testing.T, target, data string) {
				node, err := exec.LookPath("node")
				if err != nil {
					t.Skipf("SKIPPED: no node here: %v", err)
				}
				// What npm's write-file-atomic does: the target's mode and
				// owner taken first, then write, fsync, chown, chmod,
				// rename.
				testenv.Run(t, "/", node, "-e", `
const fs = require('fs');
const [target, data] = process.argv.slice(1);
const real = fs.realpathSync(target);
const st = fs.statSync(real);
const tmp = real + '.' + process.pid.toString(16) + 'a1b2';
const fd = fs.openSync(tmp, 'w', st.mode);
fs.writeSync(fd, data, 0, 'utf8');
fs.fsyncSync(fd);
fs.closeSync(fd);
fs.chownSync(tmp, st.uid, st.gid);
fs.chmodSync(tmp, st.mode);
fs.renameSync(tmp, real);
`, target, data)
			}},
		}
		for _, sv := range saves {
			t.Run(sv.name, func(t *testing.T) {
				// Over stdin: the line runs as a command. A plain write
				// right after it (before anything lists the directory)
				// reaches stdin, not the temp file's node.
				dir := procNew(t, d, "save-stdin-"+sv.name)
				stdin := filepath.Join(dir, "stdin")
				sv.save(t, stdin, "echo saved-$((40+2))\n")
				if fi, err := os.Stat(stdin); err != nil || fi.Mode() != 0o200 {
					t.Errorf("stdin right after the save: %v, %v; want mode 0200", fi.Mode(), err)
				}
				procMustWrite(t, stdin, "echo plain-after\n")
				for i, want := range []string{"saved-42\n", "plain-after\n"} {
					if c := procWaitCommand(t, dir, strconv.Itoa(i+1)); c.Output != want {
						t.Errorf("cmds/%d after the save: %+v, want output %q", i+1, c, want)
					}
				}
				procCheckListing(t, dir)
				// Over ctl: the verbs run; a plain write right after it
				// reaches ctl.
				dir = procNew(t, d, "save-ctl-"+sv.name)
				ctl := filepath.Join(dir, "ctl")
				sv.save(t, ctl, "env SAVED=yes\nexec echo via-ctl-$SAVED\n")
				err := procWrite(ctl, "bogus-after-save\n")
				if vfs.Errno(err) != syscall.EINVAL {
					t.Errorf("a plain ctl write right after the save: %s (%v), want EINVAL from the real ctl", procErrno(err), err)
				}
				if st := procWaitEnd(t, dir); st.Status != "completed" || procOutput(t, dir) != "via-ctl-yes\n" {
					t.Errorf("ctl saved: %s, stdout %q; want completed via-ctl-yes", st.Status, procOutput(t, dir))
				}
				procCheckListing(t, dir)
			})
		}
	})

	// A name is free again once its session is removed: the new session
	// behind it is a fresh one, not the kernel's memory of the old.
	t.Run("name-reuse", func(t *testing.T) {
		t.Parallel()
		for i, cmd := range []string{"echo first; exit 1", "echo second"} {
			dir, st := procExec(t, d, "reused", cmd)
			want := []string{"first\n", "second\n"}[i]
			if got := procOutput(t, dir); got != want || st.Command != cmd {
				t.Errorf("session %d named reused: stdout %q, command %q; want %q, %q", i+1, got, st.Command, want, cmd)
			}
			smMust(t, "rmdir", os.Remove(dir))
		}
	})

	// A session's processes hold no descriptor of the daemon's FUSE
	// connection: one that did could read the kernel's requests meant
	// for the daemon, answer them, and keep a dead daemon's mount alive.
	t.Run("no-fuse-fd", func(t *testing.T) {
		t.Parallel()
		fuseFds := func(pid int) []string {
			fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
			var held []string
			for _, fd := range fds {
				if target, _ := os.Readlink(fd); target == "/dev/fuse" {
					held = append(held, filepath.Base(fd))
				}
			}
			return held
		}
		if len(fuseFds(d.cmd.Process.Pid)) == 0 {
			t.Skip("SKIPPED: the daemon holds no /dev/fuse descriptor (mounted through fusermount?): nothing to leak")
		}
		dir, _ := procExec(t, d, "fds", `for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink $f)"; done`)
		out := procLines(procOutput(t, dir))
		if !strings.Contains(out, "0 /dev/pts/") {
			t.Fatalf("the session's descriptors, as it listed them:\n%s", out)
		}
		if strings.Contains(out, " /dev/fuse\n") {
			t.Errorf("a session's shell holds the daemon's /dev/fuse:\n%s", out)
		}
	})

	// cat /proc/clone makes idle sessions with fresh names.
	t.Run("clone", func(t *testing.T) {
		t.Parallel()
		var names []string
		for range 3 {
			b := smReadFile(t, d.Path("proc/clone"))
			name := strings.TrimSuffix(string(b), "\n")
			if _, err := strconv.Atoi(name); err != nil || !strings.HasSuffix(string(b), "\n") || slices.Contains(names, name) {
				t.Fatalf("clone gave %q after %q", b, names)
			}
			names = append(names, name)
			if st := procReadStatus(t, d.Path("proc/"+name)); st.Status != "idle" || st.ID != name {
				t.Errorf("session %s made by clone: %+v, want idle", name, st)
			}
		}
		listed := procNames(t, d)
		for _, name := range names {
			if !slices.Contains(listed, name) {
				t.Errorf("/proc does not list %s: %q", name, listed)
			}
			smMust(t, "rmdir", os.Remove(d.Path("proc/"+name)))
		}
	})

	// rmdir kills the whole process group, background jobs included,
	// before it returns.
	t.Run("rmdir", func(t *testing.T) {
		t.Parallel()
		dir := procNew(t, d, "rmdir")
		procMustWrite(t, filepath.Join(dir, "ctl"), "exec sleep 301 & sleep 302 & echo started; wait\n")
		testenv.Eventually(t, procBound, "the jobs started", func() (bool, string) {
			out := procOutput(t, dir)
			return strings.Contains(out, "started"), out
		})
		pid := procReadStatus(t, dir).Pid
		procs := procHostGroup(pid)
		if len(procs) < 3 {
			t.Fatalf("processes of the session: %+v, want the shell and two sleeps", procs)
		}
		smMust(t, "rmdir", os.Remove(dir))
		for _, p := range procs {
			if procAlive(p.pid) {
				t.Errorf("process %d of the session is alive after rmdir returned", p.pid)
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		if _, err := os.Lstat(dir); vfs.Errno(err) != syscall.ENOENT {
			t.Errorf("stat after rmdir: %v, want ENOENT", err)
		}
	})
}

// procCheckListing fails if a session's directory lists anything but its
// own files (a temp file left by a save).
func procCheckListing(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	smMust(t, "list the session", err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"cmdline", "cmds", "ctl", "cwd", "env", "screen", "status", "stderr", "stdin", "stdout", "stream", "tail", "wait"}
	if !slices.Equal(names, want) {
		t.Errorf("%s lists %q, want only %q", dir, names, want)
	}
}

// A hundred sessions at once: mkdir, exec, wait, output, rmdir.
func TestProcConcurrentSessions(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	const sessions = 100
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			name := fmt.Sprintf("many-%03d", i)
			dir := d.Path("proc/" + name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Errorf("mkdir %s: %v", name, err)
				return
			}
			if err := procWrite(filepath.Join(dir, "ctl"), fmt.Sprintf("exec echo hello-%d; exit %d\n", i, i%7)); err != nil {
				t.Errorf("exec in %s: %v", name, err)
				return
			}
			var st procStatus
			for deadline := time.Now().Add(60 * time.Second); !st.ended(); {
				b, err := os.ReadFile(filepath.Join(dir, "wait"))
				if err != nil || time.Now().After(deadline) {
					t.Errorf("wait of %s: %v (status %+v)", name, err, st)
					return
				}
				st = procStatus{}
				json.Unmarshal(b, &st)
			}
			out, err := os.ReadFile(filepath.Join(dir, "stdout"))
			if want := fmt.Sprintf("hello-%d\n", i); string(out) != want || err != nil || st.exit() != strconv.Itoa(i%7) {
				t.Errorf("%s: stdout %q (%v), exit %s; want %q, exit %d", name, out, err, st.exit(), want, i%7)
			}
			if err := os.Remove(dir); err != nil {
				t.Errorf("rmdir %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if left := slices.DeleteFunc(procNames(t, d), func(n string) bool { return !strings.HasPrefix(n, "many-") }); len(left) > 0 {
		t.Errorf("/proc still lists %q after their rmdir", left)
	}
	if s := procReadSummary(t, d); s.Sessions != 0 || s.Live != 0 {
		t.Errorf("/proc/status after all were removed: %+v", s)
	}
}

// Output past the cap is dropped from the head, in whole lines said by a
// marker; the tail is intact, and offsets stay absolute.
func TestProcOutputCap(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil, "--session-output", "10000")
	dir, st := procExec(t, d, "cap", "seq 1 20000; echo END")
	var full strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	full.WriteString("END\n")
	if st.Status != "completed" || !st.Truncated || st.OutputBytes != int64(full.Len()) {
		t.Errorf("status %+v, want completed, truncated, outputBytes %d", st, full.Len())
	}
	got := procOutput(t, dir)
	procTruncated(t, "stdout past the cap", got, full.String(), 10000)
	fi, err := os.Stat(filepath.Join(dir, "stdout"))
	if err != nil || fi.Size() != int64(full.Len()) {
		t.Errorf("stdout's size %v (%v), want every byte written: %d", fi.Size(), err, full.Len())
	}
	f, err := os.Open(filepath.Join(dir, "stdout"))
	smMust(t, "open stdout", err)
	defer f.Close()
	buf := make([]byte, 100)
	if n, err := f.ReadAt(buf, int64(full.Len())-10); string(buf[:n]) != "20000\nEND\n" {
		t.Errorf("pread at the absolute offset of the last line: %q (%v)", buf[:n], err)
	}
	want := full.String()[full.Len()-4000:]
	if tail := string(smReadFile(t, filepath.Join(dir, "tail"))); tail != want {
		t.Errorf("tail: %s", smDescribe([]byte(tail), []byte(want)))
	}
	// A stream read from the start is moved up to the kept head.
	s, err := procReadStream(t, dir, procBound)
	if s != got || err != nil {
		t.Errorf("stream past the cap (%v): %s", err, smDescribe([]byte(s), []byte(got)))
	}
}

// Finished sessions are forgotten after the retention time; running ones
// stay, and so do idle ones somebody holds (TestProcIdleSessionsGo has
// those nobody holds).
func TestProcRetention(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil, "--session-retention", "1s")
	idle := procNew(t, d, "idle")
	hold, err := os.Open(filepath.Join(idle, "stdout")) // held: an idle session nobody holds expires
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	running := procNew(t, d, "running")
	procMustWrite(t, filepath.Join(running, "ctl"), "exec sleep 60\n")
	dir, st := procExec(t, d, "done", "echo bye")
	if st.Status != "completed" {
		t.Fatalf("status %+v", st)
	}
	testenv.Eventually(t, procBound, "the finished session is forgotten", func() (bool, string) {
		_, err := os.Stat(dir)
		names := procNames(t, d)
		return vfs.Errno(err) == syscall.ENOENT && !slices.Contains(names, "done"), fmt.Sprintf("stat: %v, /proc: %q", err, names)
	})
	for _, keep := range []string{idle, running} {
		if _, err := os.Stat(filepath.Join(keep, "status")); err != nil {
			t.Errorf("%s, not finished, was forgotten: %v", keep, err)
		}
	}
	if s := procReadSummary(t, d); s.Sessions != 2 || s.Live != 2 {
		t.Errorf("/proc/status: %+v, want 2 sessions, 2 live", s)
	}
}

// Past --max-sessions, mkdir and clone fail with EAGAIN and /proc/status
// says why; a finished session frees its place.
func TestProcMaxSessions(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil, "--max-sessions", "3")
	for _, name := range []string{"a", "b", "c"} {
		procNew(t, d, name)
	}
	err := os.Mkdir(d.Path("proc/d"), 0o755)
	if vfs.Errno(err) != syscall.EAGAIN {
		t.Errorf("mkdir past the cap: %s (%v), want EAGAIN", procErrno(err), err)
	}
	if s := procReadSummary(t, d); !strings.Contains(s.LastError, "too many") || s.Live != 3 || s.MaxLive != 3 {
		t.Errorf("/proc/status at the cap: %+v, want 3 of 3 live and lastError saying too many", s)
	}
	if b, err := os.ReadFile(d.Path("proc/clone")); vfs.Errno(err) != syscall.EAGAIN {
		t.Errorf("clone past the cap: %q, %s (%v), want EAGAIN", b, procErrno(err), err)
	}
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
	}{
		{".hidden", syscall.EINVAL},
		{"a", syscall.EEXIST},
		{"clone", syscall.EEXIST},
	} {
		if err := os.Mkdir(d.Path("proc/"+tc.name), 0o755); vfs.Errno(err) != tc.errno {
			t.Errorf("mkdir %s: %s (%v), want %s", tc.name, procErrno(err), err, smErrName(tc.errno))
		}
	}
	procMustWrite(t, d.Path("proc/a/ctl"), "exec true\n")
	procWaitEnd(t, d.Path("proc/a"))
	procNew(t, d, "d")
	if s := procReadSummary(t, d); s.Sessions != 4 || s.Live != 3 {
		t.Errorf("/proc/status after a finished: %+v, want 4 sessions, 3 live", s)
	}
}

// The daemon's secrets never reach a session: its environment is an
// allow-list, plus what ctl env adds.
func TestProcSecretEnv(t *testing.T) {
	t.Parallel()
	secret := fmt.Sprintf("s3cret-%d", time.Now().UnixNano())
	d := procMount(t, []string{"GSVFS_TEST_SECRET=" + secret, "AWS_SECRET_ACCESS_KEY=" + secret})
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", d.cmd.Process.Pid)); err != nil || !bytes.Contains(env, []byte(secret)) {
		t.Fatalf("the daemon's environment lacks the secret (%v): the test proves nothing", err)
	}
	dir := procNew(t, d, "exec")
	procMustWrite(t, filepath.Join(dir, "ctl"), "env ADDED=by-ctl\nexec env\n")
	procWaitEnd(t, dir)
	shell := procNew(t, d, "shell")
	c := procRun(t, shell, "env; echo secret=[$GSVFS_TEST_SECRET]")
	for what, text := range map[string]string{
		"env file":              string(smReadFile(t, filepath.Join(dir, "env"))),
		"exec env":              procLines(procOutput(t, dir)),
		"interactive shell env": procLines(c.Output),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the daemon's secret:\n%s", what, text)
		}
		if !strings.Contains(text, "PATH=") || !strings.Contains(text, "HOME=") {
			t.Errorf("%s lacks the allowed PATH and HOME:\n%s", what, text)
		}
	}
	if out := procLines(procOutput(t, dir)); !strings.Contains(out, "ADDED=by-ctl\n") {
		t.Errorf("exec env lacks what ctl env added:\n%s", out)
	}
	if !strings.Contains(c.Output, "secret=[]") {
		t.Errorf("the interactive shell sees the secret: %q", c.Output)
	}
}

// A daemon that stops (SIGTERM) ends its sessions first: an interactive
// shell with a background job and a running exec leave no process.
func TestProcShutdownEndsSessions(t *testing.T) {
	d := procMount(t, nil)
	shell := procNew(t, d, "shell")
	procRun(t, shell, "sleep 344 &")
	oneShot := procNew(t, d, "exec")
	procMustWrite(t, filepath.Join(oneShot, "ctl"), "exec sleep 345\n")
	var procs []procHostProc
	for _, dir := range []string{shell, oneShot} {
		procs = append(procs, procHostGroup(procReadStatus(t, dir).Pid)...)
	}
	if len(procs) < 3 {
		t.Fatalf("processes of the sessions before the stop: %+v, want the shell, its job and the exec", procs)
	}
	d.stop(t)
	for _, p := range procs {
		if procAlive(p.pid) {
			syscall.Kill(p.pid, syscall.SIGKILL)
			t.Errorf("pid %d (session %d) outlived the daemon", p.pid, p.sid)
		}
	}
}

// On a mount root shares with every user (allow_other), other users may
// list /proc but not make sessions or look into one: a session's output,
// environment and input are its user's alone.
func TestProcOtherUsersKeptOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to share the mount and to act as another user")
	}
	vfstest.NeedFUSE(t)
	base := testenv.SharedDir(t, "gsvfs-proc-users-", 0o755)
	d := mountAt(t, filepath.Join(base, "state"), filepath.Join(base, "mnt"))
	t.Cleanup(func() { d.stop(t) })
	procNew(t, d, "mine")
	asUID(t, 65534, `
		cd "$1/proc" || exit 1
		ls | grep -qx mine || { echo "ls /proc does not show the session"; exit 1; }
		cat status >/dev/null || { echo "/proc/status unreadable"; exit 1; }
		if cat clone 2>/dev/null; then echo "read /proc/clone, making a session"; exit 1; fi
		if mkdir theirs 2>/dev/null; then echo "made a session"; exit 1; fi
		if cat mine/status 2>/dev/null; then echo "read another user's session status"; exit 1; fi
		if echo id > mine/stdin 2>/dev/null; then echo "wrote another user's session stdin"; exit 1; fi
		if rmdir mine 2>/dev/null; then echo "removed another user's session"; exit 1; fi
		exit 0`, d.Mnt)
	if names := procNames(t, d); !slices.Equal(names, []string{"clone", "mine", "status"}) {
		t.Errorf("/proc after the other user tried: %v, want clone, mine, status", names)
	}
}

// Sessions take the umask of whoever started gsvfs, or --session-umask,
// never the daemon's own 0: what they create is not world-writable.
func TestProcUmask(t *testing.T) {
	t.Parallel()
	starter := syscall.Umask(0o022)
	syscall.Umask(starter)
	for _, tc := range []struct {
		flags []string
		umask int
	}{
		{nil, starter},
		{[]string{"--session-umask", "077"}, 0o077},
	} {
		d := procMount(t, nil, tc.flags...)
		host := t.TempDir()
		if err := os.Chmod(host, 0o777); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"exec", "interactive"} {
			dir := procNew(t, d, kind)
			script := fmt.Sprintf("cd %s; umask > %s.umask; touch %s.file; mkdir %s.dir", host, kind, kind, kind)
			if kind == "exec" {
				procMustWrite(t, filepath.Join(dir, "ctl"), "exec "+script+"\n")
				procWaitEnd(t, dir)
			} else {
				procRun(t, dir, script)
			}
			want := fmt.Sprintf("%04o\n", tc.umask)
			if got := string(smReadFile(t, filepath.Join(host, kind+".umask"))); got != want {
				t.Errorf("%s session of a mount with %v: umask %q, want %q", kind, tc.flags, got, want)
			}
			for name, mode := range map[string]os.FileMode{kind + ".file": 0o666, kind + ".dir": 0o777} {
				st, err := os.Stat(filepath.Join(host, name))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := st.Mode().Perm(), mode&^os.FileMode(tc.umask); got != want {
					t.Errorf("%s made by a %s session of a mount with %v: mode %v, want %v", name, kind, tc.flags, got, want)
				}
			}
		}
	}
}

// Through the mount, a ctl line split over two writes runs whole, never
// its first half, and a bad last line without a newline fails the close.
func TestProcCtlSplitLine(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	victim := filepath.Join(t.TempDir(), "victim")
	dir := procNew(t, d, "split")
	sh := fmt.Sprintf(`(printf 'exec touch %s'; sleep 0.2; printf '_suffix\n') > %s/ctl`, victim, dir)
	if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", sh, err, out)
	}
	procWaitEnd(t, dir)
	if _, err := os.Stat(victim); err == nil {
		t.Errorf("a ctl line split over two writes ran its first half: %s exists", victim)
	}
	if _, err := os.Stat(victim + "_suffix"); err != nil {
		t.Errorf("the whole line did not run: %v", err)
	}

	bad := procNew(t, d, "bad")
	f, err := os.OpenFile(filepath.Join(bad, "ctl"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("bogus")); err != nil {
		t.Errorf("write of an unfinished line: %v, want it to wait for the newline or the close", err)
	}
	if err := f.Close(); procErrno(err) != "EINVAL" {
		t.Errorf("close finishing the bad line %q: %v, want EINVAL", "bogus", err)
	}
}

// /proc/<id>/screen shows what the terminal shows: less, vim and top,
// each at two sizes (resize in between), as rows of text an agent reads.
func TestProcScreen(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	host := t.TempDir()
	var text strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&text, "line-%d\n", i)
	}
	pager := filepath.Join(host, "pager.txt")
	smMust(t, "write", os.WriteFile(pager, []byte(text.String()), 0o644))
	smMust(t, "write", os.WriteFile(filepath.Join(host, "edit.txt"), []byte("hello from vim\n"), 0o644))

	type check func(rows []string) bool
	for _, tc := range []struct {
		name, program, quit string
		small, large        check
	}{
		{"less", "less " + pager, "q",
			func(r []string) bool {
				return r[0] == "line-1" && r[18] == "line-19" && !strings.HasPrefix(r[19], "line-")
			},
			func(r []string) bool { return r[0] == "line-1" && r[28] == "line-29" }},
		{"vim", "cd " + host + " && vim --clean edit.txt", "\x1b:q!\r",
			func(r []string) bool { return r[0] == "hello from vim" && r[1] == "~" && r[18] == "~" },
			func(r []string) bool { return r[0] == "hello from vim" && r[28] == "~" }},
		{"top", "top -d 0.5", "q",
			func(r []string) bool { return strings.HasPrefix(r[0], "top - ") },
			func(r []string) bool {
				return strings.HasPrefix(r[0], "top - ") && strings.Contains(strings.Join(r, "\n"), "PID")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			needProgram(t, tc.name)
			dir := procTerminal(t, d, tc.name, 20, 60)
			procMustWrite(t, filepath.Join(dir, "stdin"), tc.program+"\n")
			procScreenShows(t, dir, 20, 60, tc.small)
			procResize(t, dir, 30, 100)
			procScreenShows(t, dir, 30, 100, tc.large)
			procMustWrite(t, filepath.Join(dir, "stdin"), tc.quit)
		})
	}
}

// procScreenShows reads the session's screen until it has rows×cols and
// want holds for its rows.
func procScreenShows(t *testing.T, dir string, rows, cols int, want func([]string) bool) {
	t.Helper()
	testenv.Eventually(t, procBound, fmt.Sprintf("screen of %s at %dx%d", dir, rows, cols), func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "screen"))
		if err != nil {
			return false, err.Error()
		}
		head, body, _ := strings.Cut(string(b), "\n")
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		ok := strings.HasPrefix(head, fmt.Sprintf("size %dx%d cursor ", rows, cols)) && len(lines) == rows
		for _, l := range lines {
			ok = ok && len([]rune(l)) <= cols
		}
		return ok && want(lines), string(b)
	})
}

// A line written on the answer that a program is done never goes to the
// program while it ends: vim after :wq, less and git's pager after q,
// python3 -i after exit(), read -p after its answer. `waiting` is said
// only of a reader that stays blocked, so the next command always reaches
// the shell, gets its record and runs.
func TestProcNextCommandAfterProgram(t *testing.T) {
	t.Parallel()
	d := procMount(t, nil)
	host := t.TempDir()
	repo := filepath.Join(host, "repo")
	gitSetup := fmt.Sprintf(`git init -q %[1]s && cd %[1]s && for i in 1 2 3; do echo $i > f; git add f; git -c user.name=t -c user.email=t@t commit -qm "commit $i"; done`, repo)
	if out, err := exec.Command("sh", "-c", gitSetup).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: git repository for the pager case: %v\n%s", err, out)
	}
	smMust(t, "write", os.WriteFile(filepath.Join(host, "page.txt"), []byte(strings.Repeat("a line of text\n", 200)), 0o644))
	for _, tc := range []struct {
		name, need, start, finish string
	}{
		{"vim", "vim", "vim --clean " + filepath.Join(host, "x.txt"), "ihello\x1b:wq\r"},
		{"less", "less", "less " + filepath.Join(host, "page.txt"), "q"},
		{"git-pager", "git", "LESS=-R GIT_PAGER=less git -C " + repo + " log", "q"},
		{"python", "/usr/bin/python3", "/usr/bin/python3 -i", "exit()\n"},
		{"read", "bash", "read -p 'name? ' v", "bob\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			needProgram(t, tc.need)
			dir := procTerminal(t, d, tc.name, 24, 80)
			for i := range 3 {
				c := procRun(t, dir, tc.start)
				if c.Status != "waiting" {
					t.Fatalf("round %d: %q is %s, want waiting; output:\n%s", i, tc.start, c.Status, procOutput(t, dir))
				}
				procMustWrite(t, filepath.Join(dir, "stdin"), tc.finish)
				procWaitCommand(t, dir, strconv.Itoa(c.N)) // done: write at once
				next := fmt.Sprintf("echo next-%d-$((40+%d))", i, i)
				n := procRun(t, dir, next)
				if n.Status != "completed" || n.Output != fmt.Sprintf("next-%d-%d\n", i, 40+i) {
					t.Fatalf("round %d: the line written once %q was done: %+v; output:\n%s", i, tc.start, n, procOutput(t, dir))
				}
			}
		})
	}
}
