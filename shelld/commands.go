package shelld

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxCommands is how many command records a session keeps: the last
// 1,000 command lines. Older records are forgotten (Command reports them
// missing); numbering goes on.
const MaxCommands = 1000

// maxPartialLine bounds the bytes of a line written in pieces that are
// kept until its end comes.
const maxPartialLine = 64 << 10

// ErrNoCommand is the error of WaitCommand for a record that does not
// exist (not yet written, or forgotten).
var ErrNoCommand = errors.New("shelld: no such command")

// Command is the record of one command line written to an interactive
// shell, what /proc/<id>/cmds/<n>/ shows.
//
// Its output is the Log's bytes from OutputStart to OutputEnd (absolute
// offsets; while it runs, OutputEnd is the Log's current end): from after
// the shell's echo of the line to the next prompt. Lines that together make
// one command (a for loop over several lines, a here-document) end
// together: each of their records has the exit code and output of the
// whole. A line a program read as its input before the shell could (lines
// after `python3` in the same write, say) is recorded with AsInput set and
// no output.
type Command struct {
	N           int       `json:"n"`
	Input       string    `json:"input"`
	Status      string    `json:"status"` // running, waiting, completed or failed
	ExitCode    *int      `json:"exitCode"`
	OutputStart int64     `json:"outputStart"`
	OutputEnd   int64     `json:"outputEnd"`
	StartedAt   time.Time `json:"startedAt"` // when the line was written
	EndedAt     time.Time `json:"endedAt,omitzero"`
	AsInput     bool      `json:"asInput,omitempty"`
}

// Phases of a record.
const (
	queued    = iota // written; the shell has not been seen reading it
	consumed         // the shell read it (its echo, or marker C) and runs it
	continued        // the shell read it and asked for more (PS2)
	ended
)

type record struct {
	Command
	phase     int
	started   bool   // OutputStart is known
	program   bool   // a program it runs took lines written as input
	promptSeq int    // prompts (D markers) seen when it was written
	writeOff  int64  // the end of output when it was written
	ahead     string // keys written before it while a command ran: left out of Input unless the shell echoes them
	noise     bool   // the line editor's noise after the echo may still come
}

// tracker turns the marker events and the echo of lines in a session's
// output into command records. All of it is guarded by Session.rd.
type tracker struct {
	shellPid int
	hasC     bool // the shell reports command starts (marker C)
	editor   bool // the shell echoes a line when it reads it (a line editor)
	clock    func() time.Time

	recs    []*record // the kept records, oldest first
	lastCR  bool      // the last write ended in \r
	done    int       // recs[:done] have ended
	next    int       // n of the next record
	partial []byte    // a line written without its end yet
	ahead   int       // bytes at its start written as keys while a command ran (typed)

	off       int64 // the Log's end: bytes of output so far
	active    bool  // a D marker was seen: markers work
	fallback  bool  // the shell showed a prompt without markers: they never will
	prompts   int   // D markers processed
	lastSeq   int   // the shell's count of the last D marker
	evidence  bool  // since the last D, the shell was seen reading a line
	readFrom  int64 // where the shell's reading of the current line began (after B or S)
	atPrompt  bool  // a B marker came after the last D
	capturing bool  // collecting the echo after B or S
	echo      []byte
	follow    *record // read by the shell; the echoes of lines typed ahead may follow
	followed  *record // the last line whose echo was passed
	waiting   bool    // the last inspection found the terminal waiting for input
	steady    bool    // and its reader has been so long enough to be reported (tty.go)
}

func newTracker(shellPid int, hasC, editor bool, clock func() time.Time) *tracker {
	return &tracker{shellPid: shellPid, hasC: hasC, editor: editor, clock: clock, next: 1, readFrom: -1}
}

// open is the kept records from the oldest one not ended on: records end
// mostly in order, so this is the few of the last lines.
func (t *tracker) open() []*record {
	for t.done < len(t.recs) && t.recs[t.done].phase == ended {
		t.done++
	}
	return t.recs[t.done:]
}

// text follows output bytes p, just written to the Log at t.off.
func (t *tracker) text(p []byte) {
	base := t.off
	t.off += int64(len(p))
	t.skipNoise(p, base)
	for t.capturing && len(p) > 0 {
		nl := indexNL(p)
		if nl < 0 {
			t.echo = append(t.echo, p...)
			if len(t.echo) > t.echoLimit() {
				t.stopCapture()
			}
			return
		}
		t.echo = append(t.echo, p[:nl]...)
		base += int64(nl + 1)
		p = p[nl+1:]
		t.echoLine(base)
		t.skipNoise(p, base)
	}
}

// skipNoise moves the start of a record's output past the line editor's
// noise at the beginning of p (at offset base).
func (t *tracker) skipNoise(p []byte, base int64) {
	if len(p) == 0 {
		return
	}
	if r := t.noisy(); r != nil {
		n := editorNoise(p)
		r.OutputStart = base + int64(n)
		r.noise = n == len(p)
	}
}

// echoLine looks at a line of output that ended at offset end, while the
// shell is reading a command line: the echo of a queued line shows that
// the shell read it (a line editor may wrap a long one over several lines).
// Without a line editor the echo is the terminal's, made when the line was
// written: then the echoes of the lines typed with it follow, which are
// not output either.
func (t *tracker) echoLine(end int64) {
	seen := strings.TrimSpace(cleanEcho(t.echo))
	if t.follow != nil {
		next := t.queuedAfter(t.followed)
		if next != nil && seen != "" && seen == strings.TrimSpace(next.Input) {
			t.follow.OutputStart, t.follow.noise = end, true
			t.followed, t.echo = next, t.echo[:0]
			return
		}
		t.stopCapture()
		return
	}
	if r := t.matchEcho(end, seen); r != nil {
		t.echo = t.echo[:0]
		if t.editor {
			t.stopCapture()
		} else {
			t.follow, t.followed = r, r
		}
		return
	}
	if h := t.queuedAfter(nil); h != nil && seen != "" {
		if in := strings.TrimSpace(h.Input); len(seen) < len(in) && strings.HasPrefix(in, seen) {
			return // wrapped: the rest follows
		}
	}
	t.stopCapture()
}

// queuedAfter is the first queued record after r (after none: the first).
func (t *tracker) queuedAfter(r *record) *record {
	after := r == nil
	for _, q := range t.open() {
		if q == r {
			after = true
		} else if after && q.phase == queued {
			return q
		}
	}
	return nil
}

func indexNL(p []byte) int {
	for i, c := range p {
		if c == '\n' {
			return i
		}
	}
	return -1
}

func (t *tracker) noisy() *record {
	for i := len(t.recs) - 1; i >= 0 && i >= len(t.recs)-4; i-- {
		if t.recs[i].noise {
			return t.recs[i]
		}
	}
	return nil
}

func (t *tracker) echoLimit() int {
	n := 0
	for _, r := range t.open() {
		if r.phase == queued {
			n = max(n, len(r.Input))
		}
	}
	return 4*n + 1024
}

func (t *tracker) stopCapture() {
	t.capturing = false
	t.echo = t.echo[:0]
	t.follow, t.followed = nil, nil
}

// matchEcho looks at the line echoed (complete at offset end): if it is a
// queued record's input, the shell has read that line. A line editor
// echoes what the shell reads, when it reads it: then queued records
// before it were read by something else.
func (t *tracker) matchEcho(end int64, seen string) *record {
	open := t.open()
	for i, r := range open {
		if r.phase != queued {
			continue
		}
		in := strings.TrimSpace(r.Input)
		head := i == 0 || open[i-1].phase != queued
		if !head && !t.editor {
			return nil // the terminal echoes lines when they come
		}
		// The head matches leniently (a line editor may leave some of
		// the prompt in front); a later line only exactly, so output
		// is not taken for an echo. Keys typed ahead of the line that
		// the echo shows were read by the shell: they are its start.
		if full := strings.TrimSpace(r.ahead + r.Input); r.ahead != "" && (seen == full || (head && strings.HasSuffix(seen, full))) {
			r.Input, r.ahead, in = r.ahead+r.Input, "", full
		}
		if seen == in || (head && in != "" && strings.HasSuffix(seen, in)) {
			for _, q := range open[:i] {
				if q.phase == queued {
					t.endAsInput(q)
				}
			}
			r.phase = consumed
			r.OutputStart, r.started, r.noise = end, true, true
			t.evidence = true
			return r
		}
	}
	return nil
}

func (t *tracker) endAsInput(r *record) {
	r.phase, r.AsInput = ended, true
	r.Status = Completed
	r.OutputStart, r.OutputEnd = t.off, t.off
	r.EndedAt = t.clock()
}

// mark handles one marker at the current end of output.
func (t *tracker) mark(m marker) bool {
	if m.pid != t.shellPid {
		return false // a nested shell that inherited the integration
	}
	t.clearNoise()
	switch m.kind {
	case 'D':
		if m.seq <= t.lastSeq {
			return false // the prompt drawn again
		}
		t.lastSeq = m.seq
		t.stopCapture()
		if t.active {
			if r := t.reader(true); r != nil {
				t.end(r, m.status)
			}
		}
		t.active, t.atPrompt, t.evidence = true, false, false
		t.prompts++
	case 'B', 'S':
		if m.kind == 'S' {
			if r := t.reader(false); r != nil {
				r.phase = continued
			}
		} else {
			t.atPrompt = true
		}
		t.readFrom = t.off
		t.stopCapture()
		t.capturing = true
	case 'C':
		t.stopCapture()
		if r := t.reader(false); r != nil {
			r.phase = consumed
			r.OutputStart, r.started = t.off, true
		}
		t.evidence = true
	}
	return true
}

func (t *tracker) clearNoise() {
	for _, r := range t.open() {
		r.noise = false
	}
}

// reader is the record of the line the shell has read: the one it was
// seen reading, else the oldest queued one (its output then starts where
// the shell began reading), else, for a prompt only (^C at a continuation
// prompt), the last continued one.
func (t *tracker) reader(prompt bool) *record {
	var last *record
	open := t.open()
	for _, r := range open {
		if r.phase == consumed {
			return r
		}
		if r.phase == continued {
			last = r
		}
	}
	for _, r := range open {
		if r.phase == queued {
			if !r.started {
				r.OutputStart, r.started = max(t.readFrom, 0), true
			}
			return r
		}
	}
	if prompt {
		return last
	}
	return nil
}

// end completes r, and the continued lines before it, with the exit
// status of the prompt that followed.
func (t *tracker) end(r *record, status int) {
	now := t.clock()
	for _, q := range t.open() {
		if q.phase != continued && q != r {
			continue
		}
		code := status
		q.phase, q.ExitCode, q.EndedAt = ended, &code, now
		q.Status = Completed
		if status != 0 {
			q.Status = Failed
		}
		q.OutputStart, q.OutputEnd = r.OutputStart, t.off
		if q == r {
			break
		}
	}
}

// finish ends every open record when the shell has exited: the one it was
// running with the shell's exit code (`exit 3`), the others failed.
func (t *tracker) finish(code *int) {
	now := t.clock()
	first := true
	for _, r := range t.open() {
		if r.phase == ended {
			continue
		}
		if !r.started {
			r.OutputStart = t.off
		}
		r.OutputEnd, r.EndedAt, r.Status = t.off, now, Failed
		if first && r.phase != queued && code != nil {
			c := *code
			r.ExitCode = &c
			if c == 0 {
				r.Status = Completed
			}
		}
		if r.phase != continued {
			first = false
		}
		r.phase = ended
	}
	t.waiting, t.steady = false, false
}

// firstOpen is the oldest record not ended.
func (t *tracker) firstOpen() *record {
	if open := t.open(); len(open) > 0 {
		return open[0]
	}
	return nil
}

// settle brings the records up to date with an inspection of the
// terminal made after all output before it was read.
func (t *tracker) settle(p probe, steady bool) {
	t.waiting, t.steady = p.waiting, steady
	if !p.waiting || p.fg != t.shellPid {
		return
	}
	if !t.active && !t.fallback && t.prompts == 0 {
		// The shell reads its terminal and never printed a marker:
		// the integration did not take (an unknown shell, a login file
		// that changed ENV). Records then end at the next line, their
		// output is all that came after they were written.
		t.fallback = true
		for _, r := range t.open() {
			if r.phase == queued {
				r.phase, r.OutputStart, r.started = consumed, r.writeOff, true
			}
		}
	}
	// The shell waits at its prompt (no line read since it was drawn;
	// a POSIX sh's read builtin reads a byte at a time, its prompt a
	// buffer): queued lines written before that prompt were read by a
	// program, not by the shell.
	if t.active && t.atPrompt && !t.evidence && (t.hasC || !p.readByte) {
		for _, r := range t.open() {
			if r.phase == queued && r.promptSeq < t.prompts {
				t.endAsInput(r)
			}
		}
	}
}

// settleWait bounds how long a write waits for the shell to reach its
// prompt read when that decides what earlier lines were (unsure).
const settleWait = 100 * time.Millisecond

// unsure reports that the shell has drawn its prompt but not been seen
// reading at it yet, while lines written before that prompt are queued:
// in a moment it either reads them as commands, or blocks at its prompt,
// which shows they were a program's input. A line written meanwhile would
// be taken for one of those.
func (t *tracker) unsure() bool {
	if !t.active || !t.atPrompt || t.evidence || t.waiting {
		return false
	}
	for _, r := range t.open() {
		if r.phase == queued && r.promptSeq < t.prompts {
			return true
		}
	}
	return false
}

// snapshot is r as callers see it, with its live status.
func (t *tracker) snapshot(r *record) Command {
	c := r.Command
	if r.phase != ended {
		c.OutputEnd = t.off
		if !r.started {
			c.OutputStart = t.off
		}
		c.Status = Running
		if t.steady && r == t.firstOpen() {
			c.Status = Waiting
		}
	}
	if c.ExitCode != nil {
		code := *c.ExitCode
		c.ExitCode = &code
	}
	return c
}

// typedLine is a command line written to the terminal; its first ahead
// bytes were written as keys (no line end) while a command ran.
type typedLine struct {
	text  string
	ahead int
}

// lines takes a write to the terminal and returns the command lines it
// completes, as a person would see them typed: a line ends at \n or \r
// (\r\n once), backspace and DEL take back a character, ^U the line, ^C
// drops it, other control bytes are left out. busy says that a command
// runs: bytes the write leaves without a line end are then keys for it
// (q to a pager), or typed ahead for the shell, which only the shell's
// echo of them tells apart (matchEcho).
func (t *tracker) lines(p []byte, busy bool) []typedLine {
	var out []typedLine
	if t.lastCR && len(p) > 0 && p[0] == '\n' {
		p = p[1:] // the \n of a \r\n cut in two
	}
	t.lastCR = len(p) > 0 && p[len(p)-1] == '\r'
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\n', '\r':
			out = append(out, typedLine{string(t.partial), t.ahead})
			t.partial, t.ahead = t.partial[:0], 0
			if c == '\r' && i+1 < len(p) && p[i+1] == '\n' {
				i++
			}
		case '\b', 0x7f:
			if len(t.partial) > 0 {
				_, n := utf8.DecodeLastRune(t.partial)
				t.partial = t.partial[:len(t.partial)-n]
				t.ahead = min(t.ahead, len(t.partial))
			}
		case 0x15, 0x03:
			t.partial, t.ahead = t.partial[:0], 0
		default:
			if (c >= 0x20 || c == '\t') && len(t.partial) < maxPartialLine {
				t.partial = append(t.partial, c)
			}
		}
	}
	if busy {
		t.ahead = len(t.partial)
	}
	return out
}

// busy reports whether a command runs: one is open and the shell is not
// reading more of it (a continuation prompt).
func (t *tracker) busy() bool {
	r := t.firstOpen()
	return r != nil && r.phase != continued
}

// add records a command line written now.
func (t *tracker) add(line string) { t.addTyped(typedLine{text: line}) }

// addTyped records a command line written now, keys typed ahead of it
// while a command ran left out of its input until the shell's echo shows
// them (matchEcho).
func (t *tracker) addTyped(l typedLine) {
	line := l.text[l.ahead:]
	if t.fallback {
		// Without markers a record ends when the next line comes.
		for _, r := range t.open() {
			if r.phase != ended {
				r.phase, r.Status, r.EndedAt, r.OutputEnd = ended, Completed, t.clock(), t.off
			}
		}
	}
	r := &record{Command: Command{N: t.next, Input: line, StartedAt: t.clock()},
		promptSeq: t.prompts, writeOff: t.off, ahead: l.text[:l.ahead]}
	if t.fallback {
		r.phase, r.OutputStart, r.started = consumed, t.off, true
	}
	t.next++
	t.recs = append(t.recs, r)
	if t.atPrompt && !t.evidence && !t.capturing {
		// Written at the prompt: its echo comes now.
		t.stopCapture()
		t.capturing = true
	}
	if over := len(t.recs) - MaxCommands; over > 0 {
		t.recs = append(t.recs[:0:0], t.recs[over:]...)
		t.done = max(0, t.done-over)
	}
}

// inputFor reports whether a line written now goes to a program rather
// than to the shell as a command: the command running (not a continued
// one) waits for the terminal, or took input before (a REPL, a shell
// inside, busy for a moment with the last line). It marks that command.
func (t *tracker) inputFor() bool {
	if t.fallback {
		return false
	}
	r := t.firstOpen()
	if r == nil || r.phase == continued || !(t.waiting || r.program) {
		return false
	}
	r.program = true
	return true
}

func (t *tracker) find(n int) *record {
	if len(t.recs) == 0 {
		return nil
	}
	i := n - t.recs[0].N
	if i < 0 || i >= len(t.recs) {
		return nil
	}
	return t.recs[i]
}

// noteInput records the command lines of a write to the terminal, before
// the bytes go out, so their prompt markers cannot come first.
func (s *Session) noteInput(p []byte) {
	s.rd.Lock()
	open := s.trk.firstOpen() != nil
	s.rd.Unlock()
	for deadline := time.Now().Add(settleWait); open; time.Sleep(time.Millisecond) {
		s.settle() // is that command waiting for this input?
		s.rd.Lock()
		unsure := s.trk.unsure()
		s.rd.Unlock()
		if !unsure || time.Now().After(deadline) {
			break
		}
	}
	s.rd.Lock()
	defer s.rd.Unlock()
	if open && s.trk.inputFor() {
		// All lines of one write go the same way; a key without a
		// newline (y to a prompt) is not the start of a command line.
		s.trk.partial, s.trk.ahead = s.trk.partial[:0], 0
		return
	}
	for _, line := range s.trk.lines(p, s.trk.busy()) {
		s.trk.addTyped(line)
	}
}

// Commands returns the records of the command lines written to the
// session's interactive shell, oldest first: the last MaxCommands of them.
func (s *Session) Commands() []Command {
	t := s.records()
	if t == nil {
		return nil
	}
	s.settle()
	s.rd.Lock()
	defer s.rd.Unlock()
	out := make([]Command, len(t.recs))
	for i, r := range t.recs {
		out[i] = t.snapshot(r)
	}
	return out
}

// records is the session's tracker, nil unless it runs an interactive
// shell.
func (s *Session) records() *tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trk
}

// Command returns record n (counted from 1), if it exists and is kept.
func (s *Session) Command(n int) (Command, bool) {
	t := s.records()
	if t == nil {
		return Command{}, false
	}
	s.settle()
	s.rd.Lock()
	defer s.rd.Unlock()
	r := t.find(n)
	if r == nil {
		return Command{}, false
	}
	return t.snapshot(r), true
}

// CommandRange returns the numbers of the oldest and the newest kept
// record (0, 0 when there is none). Unlike Command it does not look at
// the terminal, so it is cheap enough for every path lookup: a record
// exists from the moment its line is written.
func (s *Session) CommandRange() (first, last int) {
	t := s.records()
	if t == nil {
		return 0, 0
	}
	s.rd.Lock()
	defer s.rd.Unlock()
	if len(t.recs) == 0 {
		return 0, 0
	}
	return t.recs[0].N, t.recs[len(t.recs)-1].N
}

// LastCommand returns the newest record, if any.
func (s *Session) LastCommand() (Command, bool) {
	if _, n := s.CommandRange(); n > 0 {
		return s.Command(n)
	}
	return Command{}, false
}

// WaitCommand waits until record n has ended or waits for input, or ctx
// ends, and returns it (see poll for how often it looks).
func (s *Session) WaitCommand(ctx context.Context, n int) (Command, error) {
	t := s.records()
	if t == nil {
		return Command{}, ErrNoCommand
	}
	var c Command
	var missing bool
	err := s.poll(ctx, func(probed, deep bool) bool {
		if probed {
			s.settleWith(deep)
		}
		s.rd.Lock()
		defer s.rd.Unlock()
		r := t.find(n)
		if r == nil {
			missing = true
			return true
		}
		c = t.snapshot(r)
		return r.phase == ended || (probed && c.Status == Waiting)
	})
	if missing {
		return Command{}, ErrNoCommand
	}
	return c, err
}

// Wait waits until the session's process has exited or waits for input
// on its terminal, or ctx ends, and returns the status then. An idle
// session is returned at once: it has nothing to wait for.
func (s *Session) Wait(ctx context.Context) (Status, error) {
	var st Status
	err := s.poll(ctx, func(probed, deep bool) bool {
		if !probed {
			return false
		}
		st = s.status(deep)
		return st.Status != Running
	})
	return st, err
}

// poll calls done until it reports true or ctx ends. done(true, deep)
// is to take a fresh look at the terminal (settleWith deep); done(false,
// _) only follows new output. The end of a command shows in the output at
// once; whether the terminal waits for input is looked at 1 ms after
// output stops, then less and less often, at least every 50 ms. The
// first looks after output are shallow (the group's leader only): most
// commands that stop writing are about to end, and a deep look costs a
// scan of /proc.
func (s *Session) poll(ctx context.Context, done func(probed, deep bool) bool) error {
	const deepAfter = 8 * time.Millisecond
	delay := time.Millisecond
	probe, ended := true, false
	for {
		if done(probe, ended || delay >= deepAfter) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		_, end, _, _ := s.out.Stat()
		wctx, cancel := context.WithTimeout(ctx, delay)
		more, err := s.out.Follow(wctx, end)
		cancel()
		switch {
		case more:
			delay, probe = time.Millisecond, false
		case err == nil: // the output has ended: so has the session
			probe, ended = true, true
		default:
			delay, probe = min(2*delay, 50*time.Millisecond), true
		}
	}
}
