package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gsvfs/gsvfs/internal/client"
	"github.com/gsvfs/gsvfs/shelld"
)

type attachFlags struct {
	proc       procFlags
	newSession bool
	detachKey  string
}

func attachCommand() *cobra.Command {
	var f attachFlags
	cmd := &cobra.Command{
		Use:   "attach [--root DIR | --server ADDR | --mount DIR] [--new] [--detach-key KEY] [SESSION]",
		Short: "use a session of /proc from this terminal, like tmux attach",
		Long: `attach connects this terminal to a shell session of /proc: the session's
kept output is shown from its start and then followed, keystrokes go to
the session's terminal, and the terminal's size follows this one's. The
detach key (Ctrl-] unless --detach-key says otherwise) leaves the session
running; attach ends with the session's exit status when it exits. --new
makes a session first and starts its shell. See gsvfs-attach(1).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := runAttach(f, args)
			if err != nil {
				return err
			}
			if code != 0 {
				// cobra has no exit status but 1; everything runAttach
				// set up (the terminal above all) is restored by now.
				os.Exit(code)
			}
			return nil
		},
	}
	addProcFlags(cmd, &f.proc)
	cmd.Flags().BoolVar(&f.newSession, "new", false, "make a new session (from /proc/clone) and start its shell")
	cmd.Flags().StringVar(&f.detachKey, "detach-key", "^]", "the key that detaches, in ^X notation")
	return cmd
}

// runAttach attaches to the session and returns attach's exit status:
// 0 when detached, the session's when it ends.
func runAttach(f attachFlags, args []string) (int, error) {
	key, err := parseDetachKey(f.detachKey)
	if err != nil {
		return 0, err
	}
	id, err := sessionArg(f.newSession, args)
	if err != nil {
		return 0, err
	}
	c, err := f.proc.dial()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if id != "" {
		// An unknown session is the likelier mistake; say it first.
		if _, err := client.ReadStatus(c, id); err != nil {
			return 0, err
		}
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return 0, errors.New("attach needs a terminal on standard input; without one, use the files of /proc (gsvfs-proc(7))")
	}
	if id == "" {
		if id, err = cloneSession(c); err != nil {
			return 0, err
		}
	}
	a, err := openAttachment(c, id, fd)
	if err != nil {
		return 0, err
	}
	defer a.close()
	return a.run(key)
}

// sessionArg is the session named on the command line, or "" with --new.
func sessionArg(newSession bool, args []string) (string, error) {
	switch {
	case newSession && len(args) > 0:
		return "", errors.New("--new makes a session with a fresh name; give either --new or SESSION")
	case newSession:
		return "", nil
	case len(args) == 0:
		return "", errors.New("name a SESSION to attach to (gsvfs ps lists them), or give --new")
	}
	return args[0], client.ValidSessionName(args[0])
}

// cloneSession makes an idle session, reading /proc/clone.
func cloneSession(c client.Proc) (string, error) {
	data, err := client.ReadFile(c, "clone")
	if err != nil {
		return "", fmt.Errorf("make a session: %w", err)
	}
	id := strings.TrimSpace(string(data))
	if err := client.ValidSessionName(id); err != nil {
		return "", fmt.Errorf("make a session: /proc/clone said %q", data)
	}
	return id, nil
}

// attachment is a terminal attached to a session: the session's inputs
// that attach keeps open, and the terminal.
type attachment struct {
	c          client.Proc
	id         string
	fd         int // the terminal: standard input
	ctl, stdin io.WriteCloser
	screen     gate // the session's output to standard output
}

// gate passes writes on until it is shut: once attach ends, a read of
// the session's output still in flight must not write after attach's
// last words.
type gate struct {
	mu   sync.Mutex
	shut bool
	w    io.Writer
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		return len(p), nil
	}
	return g.w.Write(p)
}

// close waits for a write in progress and lets no other through.
func (g *gate) close() {
	g.mu.Lock()
	g.shut = true
	g.mu.Unlock()
}

// openAttachment opens the session's inputs.
func openAttachment(c client.Proc, id string, fd int) (*attachment, error) {
	ctl, err := c.Open(id+"/ctl", true)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	stdin, err := c.Open(id+"/stdin", true)
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	return &attachment{c: c, id: id, fd: fd, ctl: ctl, stdin: stdin, screen: gate{w: os.Stdout}}, nil
}

func (a *attachment) close() {
	a.ctl.Close()
	a.stdin.Close()
}

// run sets the session up for this terminal, puts the terminal in raw
// mode, and passes bytes both ways until the session ends, the detach
// key comes or a signal does. The terminal is restored on every way out.
func (a *attachment) run(key byte) (int, error) {
	if err := a.prepare(); err != nil {
		return 0, err
	}
	// Signals are caught before the terminal turns raw, so none can end
	// attach with it left so.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	fmt.Fprintf(os.Stderr, "gsvfs: attached to session %s; detach with %s\n", a.id, keyName(key))
	old, err := term.MakeRaw(a.fd)
	if err != nil {
		return 0, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	restore := sync.OnceFunc(func() { term.Restore(a.fd, old) })
	defer restore() // a panic, too, leaves a usable terminal
	end := a.pump(key, sigs)
	a.screen.close()
	restore()
	return a.report(end)
}

// prepare gives an attached session this terminal's size and, if it is
// idle, starts its shell, so its prompt shows before the first keystroke.
func (a *attachment) prepare() error {
	st, err := client.ReadStatus(a.c, a.id)
	if err != nil || st.Ended() {
		return err // an ended session only has its output to show
	}
	a.resize()
	if st.Status.Status != shelld.Idle {
		return nil
	}
	_, err = io.WriteString(a.ctl, "start\n")
	if errors.Is(err, syscall.EBUSY) {
		err = nil // started by someone else meanwhile
	}
	if err != nil {
		return fmt.Errorf("start session %s: %w", a.id, err)
	}
	return nil
}

// resize tells the session this terminal's size. It is best effort: the
// session may have ended, which the output shows soon enough.
func (a *attachment) resize() {
	cols, rows, err := term.GetSize(a.fd)
	if err == nil {
		fmt.Fprintf(a.ctl, "resize %d %d\n", rows, cols)
	}
}

// ending is why an attachment ends: exactly one field is set.
type ending struct {
	detached bool
	signal   os.Signal
	status   *client.SessionStatus // the session ended
	err      error
}

// pump passes keystrokes and output until the attachment ends; it
// answers SIGWINCH with a resize on the way.
func (a *attachment) pump(key byte, sigs <-chan os.Signal) ending {
	ends := make(chan ending, 2)
	go a.pumpInput(key, ends)
	go a.pumpOutput(ends)
	for {
		select {
		case e := <-ends:
			return e
		case sig := <-sigs:
			if sig == syscall.SIGWINCH {
				a.resize()
				continue
			}
			return ending{signal: sig}
		}
	}
}

// pumpInput writes keystrokes to the session's stdin as they come, up
// to the detach key.
func (a *attachment) pumpInput(key byte, ends chan<- ending) {
	buf := make([]byte, 4096)
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			ends <- ending{err: fmt.Errorf("read the terminal: %w", err)}
			return
		}
		keys, detach := buf[:n], false
		if i := bytes.IndexByte(keys, key); i >= 0 {
			keys, detach = keys[:i], true
		}
		if len(keys) > 0 {
			if _, err := a.stdin.Write(keys); err != nil {
				if !errors.Is(err, syscall.EPIPE) {
					ends <- ending{err: fmt.Errorf("session %s: %w", a.id, err)}
				}
				// EPIPE: the session has exited; the output's end
				// reports it, once all of the output is shown.
				return
			}
		}
		if detach {
			ends <- ending{detached: true}
			return
		}
	}
}

// pumpOutput copies the session's output to the terminal, from the
// start of what is kept, until the session has ended and all of its
// output is shown.
//
// An empty read of the stream means the process exited, or only that
// the yield time passed with no output (then the stream is read again at
// the same offset). The status tells them apart; once it says the
// session ended, one more pass reads what came in between, and the next
// empty read is the end.
//
// The stream is this goroutine's alone: a read of it may be blocked up
// to the yield time, and on Linux closing a file waits for its reads.
// When attach detaches with such a read blocked, the process's exit
// ends it.
func (a *attachment) pumpOutput(ends chan<- ending) {
	stream, err := a.c.Open(a.id+"/stream", false)
	if err != nil {
		ends <- ending{err: fmt.Errorf("session %s: %w", a.id, err)}
		return
	}
	defer stream.Close()
	buf := make([]byte, client.MaxRead)
	var final *client.SessionStatus
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			if _, werr := a.screen.Write(buf[:n]); werr != nil {
				ends <- ending{err: fmt.Errorf("write the terminal: %w", werr)}
				return
			}
			continue
		}
		if err != nil && err != io.EOF {
			ends <- ending{err: fmt.Errorf("session %s's output: %w", a.id, err)}
			return
		}
		if final != nil {
			ends <- ending{status: final}
			return
		}
		st, err := client.ReadStatus(a.c, a.id)
		if errors.Is(err, client.ErrNoSession) {
			err = fmt.Errorf("session %s was removed", a.id)
		}
		if err != nil {
			ends <- ending{err: err}
			return
		}
		if st.Ended() {
			final = &st
		}
	}
}

// report says on standard error why attach ends, with the terminal
// restored, and returns the exit status.
func (a *attachment) report(e ending) (int, error) {
	switch {
	case e.err != nil:
		return 0, e.err
	case e.detached:
		// The cursor is wherever the session left it, after a prompt
		// most likely: start a line of our own.
		fmt.Fprintf(os.Stderr, "\ngsvfs: detached from session %s\n", a.id)
		return 0, nil
	case e.signal != nil:
		fmt.Fprintf(os.Stderr, "\ngsvfs: %v; detached from session %s, which runs on\n", e.signal, a.id)
		return 128 + int(e.signal.(syscall.Signal)), nil
	}
	why, code := endReason(e.status.Status)
	fmt.Fprintf(os.Stderr, "gsvfs: session %s %s\n", a.id, why)
	return code, nil
}

// endReason says how an ended session ended, and the exit status that
// passes it on the way a shell would: its exit code, or 128 plus the
// number of the signal that killed it.
func endReason(st shelld.Status) (string, int) {
	switch {
	case st.ExitCode != nil && *st.ExitCode == 0:
		return "exited", 0
	case st.ExitCode != nil:
		return fmt.Sprintf("exited with status %d", *st.ExitCode), *st.ExitCode
	case st.Signal != "":
		why := "was killed by " + st.Signal
		if st.TimedOut {
			why += " at its timeout"
		}
		// Without its prefix, for shelld names a signal it has no name
		// for SIG40, which ParseSignal takes only as 40.
		if sig, err := shelld.ParseSignal(strings.TrimPrefix(st.Signal, "SIG")); err == nil {
			return why, 128 + int(sig)
		}
		return why, 1
	case st.LastError != "":
		return "failed: " + st.LastError, 1
	}
	return st.Status, 1
}

// parseDetachKey takes a control key in ^X notation: ^A to ^Z, ^@, ^[,
// ^\, ^], ^^, ^_ and ^? (DEL), in either case.
func parseDetachKey(s string) (byte, error) {
	if len(s) == 2 && s[0] == '^' {
		c := s[1]
		switch {
		case c == '?':
			return 0x7f, nil
		case c >= 'a' && c <= 'z':
			return c - 'a' + 1, nil
		case c >= '@' && c <= '_':
			return c - '@', nil
		}
	}
	return 0, fmt.Errorf("--detach-key %q: want a control key in ^X notation, such as ^] or ^Q", s)
}

// keyName names a control key for people: Ctrl-] for 0x1d.
func keyName(k byte) string {
	if k == 0x7f {
		return "Ctrl-?"
	}
	return "Ctrl-" + string(rune(k+'@'))
}
