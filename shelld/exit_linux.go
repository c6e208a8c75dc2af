package shelld

import (
	"os"
	"syscall"
	"unsafe"
)

// Why the session's process is not reaped when it exits: a pid, and the
// process group and session named after it, cannot be handed to another
// process while a zombie holds it. Killing "everything in the session"
// at rmdir, perhaps half an hour after the exit, is then sure to reach
// only what the session started, never a stranger that got the pid.
// The zombie is reaped (release) when the session is forgotten.

const (
	sysPidfdOpen  = 434 // the same number on every Linux architecture
	pidfdNonblock = syscall.O_NONBLOCK
	pPIDFD        = 3
	pPID          = 1
	wNOWAIT       = 0x1000000
)

// siginfo is the part of siginfo_t that waitid fills for SIGCHLD, at
// the offsets of 64-bit Linux.
type siginfo struct {
	signo, errno, code int32
	_                  int32
	pid, uid           int32
	status             int32
	_                  [100]byte
}

// The si_code values of a child's exit.
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// waitExit waits until process pid has exited, leaving it unreaped, and
// returns its wait status. It waits on a pidfd through the runtime's
// poller, so a thousand idle sessions hold no thread each; where pidfds
// are missing it blocks a thread in waitid.
func waitExit(pid int) (syscall.WaitStatus, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), pidfdNonblock, 0)
	if errno != 0 {
		return waitid(pPID, pid, 0)
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitid(pPID, pid, 0)
	}
	var ws syscall.WaitStatus
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		ws, werr = waitid(pPIDFD, int(fd), syscall.WNOHANG)
		return werr != nil || ws != notYet
	})
	if err != nil {
		return 0, err
	}
	return ws, werr
}

// notYet is what waitid with WNOHANG reports while the process runs.
const notYet = syscall.WaitStatus(1<<32 - 1)

// waitid is waitid(2) with WEXITED|WNOWAIT and extra flags.
func waitid(idtype, id int, flags int) (syscall.WaitStatus, error) {
	for {
		var info siginfo
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, uintptr(idtype), uintptr(id),
			uintptr(unsafe.Pointer(&info)), uintptr(syscall.WEXITED|wNOWAIT|flags), 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return 0, errno
		case info.pid == 0:
			return notYet, nil
		}
		switch info.code {
		case cldExited:
			return syscall.WaitStatus(info.status&0xff) << 8, nil
		case cldDumped:
			return syscall.WaitStatus(info.status&0x7f | 0x80), nil
		default: // cldKilled
			return syscall.WaitStatus(info.status & 0x7f), nil
		}
	}
}
