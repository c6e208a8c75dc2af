package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"syscall"
)

// becomeDaemon sets up the process to serve files: clients send the mode
// they want with their own umask applied, so the daemon's must not apply a
// second time; and it needs a descriptor per cached directory.
func becomeDaemon() {
	syscall.Umask(0)
	raiseFileLimit()
}

// startCPUProfile profiles the daemon into path until stop is called; an
// empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); out.Close() }, nil
}

// raiseFileLimit leaves room for the files held open through the mount
// and the directory descriptors diskfs caches (an eighth of the limit, up
// to 4,096): every user's opens are bounded by a share of it. Root may
// raise the hard limit to the system's maximum; others get their hard
// limit.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if os.Geteuid() == 0 {
		if data, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
			var max uint64
			if _, err := fmt.Sscan(string(data), &max); err == nil && max > lim.Max {
				lim.Max = max
			}
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		// Without CAP_SYS_RESOURCE (a container) the hard limit stays;
		// Go's runtime has already raised the soft limit to it.
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		slog.Debug("open-file limit not raised", "limit", lim.Cur, "err", err)
		return
	}
	slog.Debug("open-file limit", "limit", lim.Cur)
}
