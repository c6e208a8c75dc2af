package diskfs

// MaxEdgeLockFiles is how many lock owners of one edge may hold a
// description at once.
const MaxEdgeLockFiles = maxEdgeFiles

// LockFilesHeld is how many descriptions lock owners hold.
func LockFilesHeld() int {
	hostLocks.mu.Lock()
	defer hostLocks.mu.Unlock()
	return hostLocks.count
}
