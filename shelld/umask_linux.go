package shelld

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startWithUmask starts cmd with the given umask without touching the
// daemon's own (0, which file creations through the tree rely on): the
// umask belongs to a thread's filesystem context, so a thread of its own
// unshares that context, sets the mask and forks from there. The thread
// is never unlocked, so it ends with the goroutine instead of carrying the
// changed context back into the runtime's pool.
func startWithUmask(cmd *exec.Cmd, umask int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_FS); err != nil {
			errc <- err
			return
		}
		syscall.Umask(umask)
		errc <- cmd.Start()
	}()
	return <-errc
}
