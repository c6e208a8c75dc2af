package diskfs

import "golang.org/x/sys/unix"

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

// LimitWatches makes f's watch (started by a subscriber) run out of room
// after n more directories, as at fs.inotify.max_user_watches.
func LimitWatches(f *FS, n int) {
	tw := f.watch.Load()
	add := tw.place
	tw.place = func(p string) error {
		if n <= 0 {
			return unix.ENOSPC
		}
		n--
		return add(p)
	}
}
