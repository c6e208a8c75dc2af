package diskfs

// SetDirDescriptors sets how many directory descriptors f keeps open while
// idle, so tests can run the whole package with the cache under pressure.
func SetDirDescriptors(f *FS, n int) {
	f.fds.mu.Lock()
	defer f.fds.mu.Unlock()
	f.fds.max = n
	f.fds.trimLocked()
}

// OpenDirDescriptors is how many evictable directory descriptors f has open.
func OpenDirDescriptors(f *FS) int {
	f.fds.mu.Lock()
	defer f.fds.mu.Unlock()
	return f.fds.open
}
