package bounds

import "syscall"

// OpenLimit is how many files one client of an edge (a 9P connection, a
// user of a FUSE mount) may hold open: a quarter of the process's
// descriptor limit, so that no one client can run the daemon out of
// descriptors for everyone else.
func OpenLimit() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	return int64(min(max(lim.Cur/4, 64), 1<<20))
}
