//go:build !linux

package shelld

import "os"

// canInspect says that inspect cannot tell a terminal waiting for input.
const canInspect = false

// inspect finds no terminal waiting: how is only known on Linux
// (tty_linux.go).
func inspect(tty *os.File, pts string, _ bool) probe {
	fg, _ := tcgetpgrp(tty)
	return probe{fg: fg}
}
