package diskfs

import "time"

// LockFilesHeld is how many descriptions lock owners hold.
func LockFilesHeld() int {
	hostLocks.mu.Lock()
	defer hostLocks.mu.Unlock()
	return hostLocks.count
}

// SetHostPoll makes waiters look again for a lock held outside the daemon
// only every d, until the test ends.
func SetHostPoll(t interface{ Cleanup(func()) }, d time.Duration) {
	first, most := firstPoll, hostPoll
	firstPoll, hostPoll = d, d
	t.Cleanup(func() { firstPoll, hostPoll = first, most })
}

// LockWaiting is how many lock requests wait.
func LockWaiting() int {
	hostLocks.mu.Lock()
	files := make([]*lockFile, 0, len(hostLocks.files))
	for _, lf := range hostLocks.files {
		files = append(files, lf)
	}
	hostLocks.mu.Unlock()
	n := 0
	for _, lf := range files {
		lf.mu.Lock()
		n += lf.waiting
		lf.mu.Unlock()
	}
	return n
}

// SetMaxLockFiles bounds the descriptions of the accounts with a limit,
// together, to n until the test ends.
func SetMaxLockFiles(t interface{ Cleanup(func()) }, n int) {
	old := hostLocks.max
	hostLocks.max = func() int { return n }
	t.Cleanup(func() { hostLocks.max = old })
}
