package diskfs

import "syscall"

// statTimes are a stat's access, change and modification times, and its
// birth time in nanoseconds, where macOS's stat has them.
func statTimes(st *syscall.Stat_t) (atime, mtime, ctime syscall.Timespec, born uint64) {
	return st.Atimespec, st.Mtimespec, st.Ctimespec, uint64(st.Birthtimespec.Nano())
}
