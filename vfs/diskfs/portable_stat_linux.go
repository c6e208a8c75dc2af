package diskfs

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// infoAttr converts what os.Lstat found, from its system stat.
func infoAttr(fi fs.FileInfo) vfs.Attr {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return vfs.Attr{Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), Mtime: fi.ModTime()}
	}
	ts := func(t syscall.Timespec) time.Time { return time.Unix(t.Sec, t.Nsec) }
	return vfs.Attr{Ino: st.Ino, Mode: st.Mode, Nlink: uint32(st.Nlink), Uid: st.Uid, Gid: st.Gid,
		Rdev: st.Rdev, Size: st.Size, Blocks: st.Blocks, Blksize: uint32(st.Blksize),
		Atime: ts(st.Atim), Mtime: ts(st.Mtim), Ctime: ts(st.Ctim)}
}
