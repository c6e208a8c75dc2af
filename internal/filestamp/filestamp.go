// Package filestamp tells when a small file that people and programs edit
// or replace (the namespace file, the crontab, a gateway's device store)
// has changed, from its stat alone: its inode, size and modification
// time. Reading such a file on every tick would cost more than the stat;
// an edit in place moves the time or the size, and a replacement by
// rename, which may keep both, moves the inode.
//
// The daemon's watch of the state directory is not used for this: these
// files are also edited where nothing watches (a bound directory), and
// the stat costs a few microseconds a second.
package filestamp

import (
	"context"
	"os"
	"syscall"
	"time"
)

// Stamp is one version of a file. The zero Stamp is no file.
type Stamp struct {
	ino   uint64
	mtime time.Time
	size  int64
	found bool
}

// Of is the stamp of a file's stat.
func Of(fi os.FileInfo) Stamp {
	st := Stamp{mtime: fi.ModTime(), size: fi.Size(), found: true}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(sys.Ino)
	}
	return st
}

// Read stats path: its stamp, or the zero Stamp and the error where there
// is no file to stat.
func Read(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	return Of(fi), nil
}

// Exists says whether the stamp is of a file.
func (s Stamp) Exists() bool { return s.found }

// File follows one file's versions.
type File struct {
	path string
	last Stamp
	seen bool // last was read at least once
}

// New follows path; its first Changed reports a change.
func New(path string) *File { return &File{path: path} }

// Changed stats the file and says whether it differs from the version
// the previous call saw (the first call always does). A file that cannot
// be stat'ed counts as none: its going is a change, and so is its coming
// back.
func (f *File) Changed() (changed bool, now Stamp) {
	now, _ = Read(f.path)
	changed = !f.seen || now != f.last
	f.last, f.seen = now, true
	return changed, now
}

// Forget makes the next Changed report a change, for a caller that could
// not read the version Changed reported.
func (f *File) Forget() { f.seen = false }

// Poll calls fn at once and then within every of each change of path,
// with whether the file exists, until ctx ends. A value on kick (nil: no
// kicks) makes it look at once, for a writer that can say it wrote.
func Poll(ctx context.Context, path string, every time.Duration, kick <-chan struct{}, fn func(exists bool)) {
	f := New(path)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if changed, now := f.Changed(); changed {
			fn(now.Exists())
		}
		select {
		case <-tick.C:
		case <-kick:
		case <-ctx.Done():
			return
		}
	}
}
