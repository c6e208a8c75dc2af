package shelld

import (
	"os"
	"syscall"
	"unsafe"
)

// plainOutput turns off the terminal's output processing (OPOST), above
// all its \n → \r\n: what a one-shot command prints reaches the log as it
// printed it. The terminal is still a terminal to the program (isatty).
func plainOutput(tty *os.File) error {
	var t syscall.Termios
	if err := termiosIoctl(tty, getTermios, &t); err != nil {
		return err
	}
	t.Oflag &^= syscall.OPOST
	return termiosIoctl(tty, setTermios, &t)
}

func termiosIoctl(tty *os.File, req uintptr, t *syscall.Termios) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), req, uintptr(unsafe.Pointer(t))); errno != 0 {
		return errno
	}
	return nil
}
