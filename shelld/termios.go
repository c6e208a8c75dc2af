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

// canonical reports whether the terminal reads in lines (ICANON), asked
// on the master side without making it blocking.
func canonical(master *os.File) (bool, error) {
	var t syscall.Termios
	if err := ioctlPtr(master, getTermios, unsafe.Pointer(&t)); err != nil {
		return false, err
	}
	return t.Lflag&syscall.ICANON != 0, nil
}

func termiosIoctl(tty *os.File, req uintptr, t *syscall.Termios) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), req, uintptr(unsafe.Pointer(t))); errno != 0 {
		return errno
	}
	return nil
}
