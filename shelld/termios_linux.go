package shelld

import (
	"os"

	"golang.org/x/sys/unix"
)

// plainOutput turns off the terminal's output processing (OPOST), above
// all its \n → \r\n: what a one-shot command prints reaches the log as it
// printed it. The terminal is still a terminal to the program (isatty).
func plainOutput(tty *os.File) error {
	t, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		return err
	}
	t.Oflag &^= unix.OPOST
	return unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, t)
}
