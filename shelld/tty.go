package shelld

import (
	"os"
	"syscall"
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
	s.mu.Lock()
	tty, pts, state, trk := s.tty, s.pts, s.state, s.trk
	s.mu.Unlock()
	if state != Running || tty == nil {
		return false
	}
	p := inspect(tty, pts, deep)
	s.drain()
	if trk != nil {
		s.rd.Lock()
		trk.settle(p)
		s.rd.Unlock()
	}
	return p.waiting
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
