package diskfs

import "syscall"

// statTimes are a stat's access, change and modification times, and its
// birth time in nanoseconds (0: not kept), where Linux's stat has them.
func statTimes(st *syscall.Stat_t) (atime, mtime, ctime syscall.Timespec, born uint64) {
	return st.Atim, st.Mtim, st.Ctim, 0
}
