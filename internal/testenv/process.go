package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyBound bounds how long a server a test starts may take to say it
// is ready: generous, for a loaded machine.
const readyBound = 20 * time.Second

// Server says how to start a child process that serves something and
// says on its stdout when it is ready.
type Server struct {
	Path   string              // the binary
	Args   []string            // its arguments; Args[0] names it in failures
	Prefix []string            // a command it runs under (ip netns exec NS); none if empty
	Env    []string            // its environment; nil: this process's
	Cred   *syscall.Credential // the user it runs as; nil: this process's
	Ready  string              // a line of its stdout holding this says it is ready
}

// Process is a started Server.
type Process struct {
	Cmd  *exec.Cmd
	Done chan error // receives Wait's result once, when the process exits
	Log  *LogBuffer // its stderr
}

// Start starts s and returns once it has printed its Ready line, failing
// the test (with the process's stderr) if it exits first or is not ready
// within a bound; a process that is not ready is killed. Stopping it is
// the caller's: signal Cmd.Process and receive from Done.
func Start(t testing.TB, s Server) *Process {
	t.Helper()
	cmd := exec.Command(s.Path, s.Args...)
	if len(s.Prefix) > 0 {
		cmd = exec.Command(s.Prefix[0], append(append(s.Prefix[1:len(s.Prefix):len(s.Prefix)], s.Path), s.Args...)...)
	}
	cmd.Env = s.Env
	if s.Cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.Cred}
	}
	// A pipe of our own, not StdoutPipe: Wait closes that one as the
	// process exits, and a process that prints its ready line and exits
	// at once (a background mount's parent) could lose the line unread.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Done: make(chan error, 1), Log: &LogBuffer{}}
	cmd.Stdout, cmd.Stderr = w, p.Log
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatal(err)
	}
	ready, read := make(chan struct{}), make(chan struct{})
	go func() {
		// Read stdout to its end, whatever comes after the ready line,
		// so that the process never blocks on a full pipe. The end may
		// come after the process's: a child it started may hold it.
		defer close(read)
		defer stdout.Close()
		var once sync.Once
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s.Ready) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { p.Done <- cmd.Wait() }()
	select {
	case <-ready:
	case err := <-p.Done:
		// What it printed is still in the pipe: its ready line, or the
		// pipe's end (or a child still holding it, up to the bound).
		select {
		case <-ready:
		case <-read:
		case <-time.After(readyBound):
		}
		select {
		case <-ready: // it said so, then exited: a process that serves and goes
			p.Done <- err
			return p
		default:
		}
		t.Fatalf("%s exited before it was ready: %v\n%s", name(s), err, p.Log)
	case <-time.After(readyBound):
		cmd.Process.Kill()
		t.Fatalf("%s not ready after %v\n%s", name(s), readyBound, p.Log)
	}
	return p
}

// name is how failures call s: the binary's name and its first argument.
func name(s Server) string {
	n := s.Path[strings.LastIndexByte(s.Path, '/')+1:]
	if len(s.Args) > 0 {
		n += " " + s.Args[0]
	}
	return n
}
