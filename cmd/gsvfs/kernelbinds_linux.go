package main

import (
	"errors"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/gsvfs/gsvfs/internal/bounds"
	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs/fusefs"
)

// kernelBindCheck is how often the binds are checked when the mount table
// did not change: the kernel drops a bind whose mount point the tree told
// it to forget, and it is laid again here.
const kernelBindCheck = 5 * time.Second

// checkKernelBinds refuses --kernel-binds where it cannot work.
func (f *mountFlags) checkKernelBinds() error {
	switch {
	case !f.kernelBinds:
		return nil
	case f.server != "":
		return errors.New("--kernel-binds lays the state directory's own disk trees over the mount; a --server tree has none here")
	case os.Geteuid() != 0:
		return errors.New("--kernel-binds needs root: a bind mount needs CAP_SYS_ADMIN")
	}
	return nil
}

// keepKernelBinds lays the table's plain host directories over their
// places in the mount and keeps them matching the table as it changes
// (the namespace file, devices), until stop. The first binds are laid
// before it returns, so the mount is fast from its first use.
func keepKernelBinds(m *fusefs.Mount, t *mounts.Table) (stop func()) {
	changed := make(chan struct{}, 1)
	unhook := t.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	var warn *bounds.RateLog
	var last []fusefs.KernelBind
	var lastErr string
	apply := func() {
		msg := ""
		if err := m.SetKernelBinds(kernelBindsOf(t)); err != nil {
			msg = err.Error()
		}
		if msg != lastErr {
			// Something new is refused (a symlink on the way, say): it
			// is said at once, however recent the last warning.
			warn, lastErr = bounds.NewRateLog(slog.Default(), time.Minute), msg
		}
		if msg != "" {
			warn.Warn("kernel binds", "these places are served through FUSE instead", "err", msg)
		}
		if now := m.KernelBinds(); !slices.Equal(now, last) {
			slog.Info("kernel binds", "binds", now)
			last = now
		}
	}
	apply()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(kernelBindCheck)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-changed:
			case <-tick.C:
			}
			apply()
		}
	}()
	return func() {
		unhook()
		close(done)
		<-finished
	}
}

// kernelBindsOf is what the kernel may serve in the table's place.
func kernelBindsOf(t *mounts.Table) []fusefs.KernelBind {
	var out []fusefs.KernelBind
	for _, h := range t.HostDirs() {
		out = append(out, fusefs.KernelBind{Path: h.Path, Dir: h.Dir, Tree: h.Tree})
	}
	return out
}
