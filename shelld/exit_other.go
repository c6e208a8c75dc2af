//go:build !linux

package shelld

import (
	"os"
	"syscall"
)

// waitExit waits until process pid has exited. Without Linux's waitid
// WNOWAIT the process is reaped here, so its pid may be reused before the
// session is removed (see exit_linux.go).
func waitExit(pid int) (syscall.WaitStatus, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Wait()
	if err != nil {
		return 0, err
	}
	return st.Sys().(syscall.WaitStatus), nil
}
