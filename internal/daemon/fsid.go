package daemon

import (
	"fmt"
	"hash/fnv"
	"syscall"
)

// stateFsid is the filesystem id of the tree served from the state
// directory root, as statfs(2) reports it on a 9P mount: a hash of the
// directory's identity, its disk's filesystem id (kept by the disk, such
// as ext4's, from its UUID, where device numbers can change at a boot)
// and its inode number. It stays the same across restarts of the daemon
// for the same state directory, differs for another one, and is never 0,
// which programs take as "no id" (fanotify refuses such a filesystem).
func stateFsid(root string) uint64 {
	var fs, none syscall.Statfs_t
	var st syscall.Stat_t
	h := fnv.New64a()
	// The id's field names differ between systems; its text does not.
	disk := ""
	if syscall.Statfs(root, &fs) == nil && fmt.Sprint(fs.Fsid) != fmt.Sprint(none.Fsid) {
		disk = fmt.Sprint(fs.Fsid)
	}
	if syscall.Stat(root, &st) == nil {
		if disk == "" {
			disk = fmt.Sprint("dev ", st.Dev)
		}
		fmt.Fprintf(h, "gsvfs tree %s inode %d", disk, st.Ino)
	}
	return max(h.Sum64(), 1)
}
