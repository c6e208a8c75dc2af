package shelld

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// probe is one inspection of a session's terminal.
type probe struct {
	waiting  bool // the foreground is blocked reading it, and no input is pending
	fg       int  // the foreground process group
	reader   int  // the process found reading it
	readByte bool // that process reads one byte at a time with read(2)
}

// settle inspects the terminal of a running session, then reads what
// output it holds (what the blocked reader wrote before blocking is then
// taken in, its prompt marker included), and brings the records up to
// date. It reports whether the terminal waits for input.
func (s *Session) settle() bool { return s.settleWith(true) }

// settleWith is settle; a shallow one (deep false) looks only at the
// foreground group's leader, not for the group's other members, which
// takes a scan of /proc: waits look shallow while a command is young.
func (s *Session) settleWith(deep bool) bool {
	waiting, _ := s.settleSteady(deep)
	return waiting
}

// settleSteady is settleWith that also says how long a reader seen
// blocked must still stay so before it counts (steady).
func (s *Session) settleSteady(deep bool) (bool, time.Duration) {
	s.mu.Lock()
	tty, pts, state, trk := s.tty, s.pts, s.state, s.trk
	s.mu.Unlock()
	if state != Running || tty == nil {
		return false, 0
	}
	p := inspect(tty, pts, deep)
	s.drain()
	waiting, pending := s.steady(p)
	if trk != nil {
		s.rd.Lock()
		trk.settle(p, waiting)
		s.rd.Unlock()
	}
	return waiting, pending
}

// steadyWait is how long a process must be seen blocked reading the
// terminal, with no output meanwhile, before the session counts as
// waiting. A program that is ending is not asking for input, though it
// may read its terminal once more (vim, after :wq, restores the terminal
// and waits a moment for its answers): a line written on a "waiting"
// seen then would be read by it and lost, where it belonged to the
// shell.
const steadyWait = 250 * time.Millisecond

// sighting is the last time a reader was seen blocked on the terminal.
type sighting struct {
	reader int
	at     time.Time // real time: the sighting is about processes, not the injected clock
	outEnd int64
}

// steady reports whether the reader of p has been seen blocked for
// steadyWait with no output since, or else how long it has yet to be.
func (s *Session) steady(p probe) (bool, time.Duration) {
	_, end, _, _ := s.out.Stat()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &s.sighted
	if !p.waiting {
		*w = sighting{}
		return false, 0
	}
	if w.at.IsZero() || w.reader != p.reader || w.outEnd != end {
		*w = sighting{reader: p.reader, at: now, outEnd: end}
		return false, steadyWait
	}
	if left := steadyWait - now.Sub(w.at); left > 0 {
		return false, left
	}
	return true, 0
}

func ioctlPtr(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func tcgetpgrp(master *os.File) (int, error) {
	var pgrp int32
	err := ioctlPtr(master, syscall.TIOCGPGRP, unsafe.Pointer(&pgrp))
	return int(pgrp), err
}

// setWinsize sets the terminal's size through the master side, without
// putting it into blocking mode as os.File.Fd would.
func setWinsize(master *os.File, rows, cols uint16) error {
	ws := [4]uint16{rows, cols, 0, 0}
	return ioctlPtr(master, syscall.TIOCSWINSZ, unsafe.Pointer(&ws))
}

// pollable replaces f, which creack/pty left in blocking mode (its ioctls
// call os.File.Fd), by a non-blocking duplicate the runtime's poller
// serves: reads wait in the poller, and a read can be tried without
// waiting (drain).
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, err
	}
	return os.NewFile(fd, f.Name()), nil
}
