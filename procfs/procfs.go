// Package procfs shows shelld's sessions as files, the /proc of
// gsvfs-proc(7): /proc/clone and /proc/status,
// and in each session's directory stdin, stdout, stream, ctl, status, wait,
// cmds/, tail, cmdline, env and cwd.
//
// It is a thin view: every file reads or drives a shelld.Session, and no
// state lives here but what only files have — the yield time of blocking
// reads, the offsets of readers whose output was dropped, whether a
// cloned session was claimed (hold.go), and the temp files of agents'
// atomic saves (created beside stdin or ctl and renamed over them, which
// then acts as one write of their bytes).
package procfs

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// Options are how the tree behaves around its sessions.
type Options struct {
	// Resolve translates an absolute path a `ctl cwd` names to the host
	// directory a process runs in for it: a path of the tree (such as
	// /workspaces/app) to the host directory that serves it, or an error
	// where none does (/sys); a path of no tree (/tmp) is the host's and
	// comes back as it is. Nil: every path is the host's.
	Resolve func(ctx context.Context, p string) (hostDir string, err error)
	// Yield is how long a blocking read (wait, stream) waits at most,
	// unless a session's `yield` verb says otherwise (5 s).
	Yield time.Duration
	// CloneGrace is how long a session made by reading clone stays
	// after clone is closed when nobody has opened its ctl or stdin
	// (60 s; the idle time, shelld.Config.Idle, where that is shorter).
	CloneGrace time.Duration
}

// DefaultYield is the yield time of a session that set none.
const DefaultYield = 5 * time.Second

// DefaultCloneGrace is the CloneGrace of Options that set none.
const DefaultCloneGrace = time.Minute

// MaxYield bounds the yield verb: no read waits longer than an hour.
const MaxYield = time.Hour

// FS is the /proc tree over one Manager.
type FS struct {
	mgr      *shelld.Manager
	opts     Options
	uid, gid uint32
	root     *rootDir

	mu      sync.Mutex
	views   map[*shelld.Session]*sessionDir
	lastErr string // why the last clone or mkdir failed, for /proc/status
}

// New returns the /proc tree of mgr's sessions. Its files belong to the
// user running the daemon, who is also the user the sessions run as.
func New(mgr *shelld.Manager, opts Options) *FS {
	if opts.Yield <= 0 {
		opts.Yield = DefaultYield
	}
	if opts.CloneGrace <= 0 {
		opts.CloneGrace = DefaultCloneGrace
	}
	if opts.Resolve == nil {
		opts.Resolve = func(_ context.Context, p string) (string, error) { return p, nil }
	}
	f := &FS{mgr: mgr, opts: opts, uid: uint32(os.Geteuid()), gid: uint32(os.Getegid()),
		views: map[*shelld.Session]*sessionDir{}}
	f.root = newRootDir(f)
	return f
}

// Root is the directory mounted at /proc.
func (f *FS) Root() vfs.Node { return f.root }

// Reap forgets the sessions whose retention or idle time has passed,
// and their directories. The Manager never shows an expired session;
// calling Reap now and then (listing /proc does) lets their memory go.
func (f *FS) Reap() {
	f.mgr.Reap()
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.views {
		if cur, ok := f.mgr.Get(s.ID()); !ok || cur != s {
			delete(f.views, s)
		}
	}
}

// view returns the directory of a session, made at first sight so its
// inode numbers stay the same for the session's life.
func (f *FS) view(s *shelld.Session) *sessionDir {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.views[s]
	if !ok {
		d = newSessionDir(f, s)
		f.views[s] = d
	}
	return d
}

func (f *FS) fail(err error) error {
	f.mu.Lock()
	f.lastErr = err.Error()
	f.mu.Unlock()
	return err
}

// meta is what every node here shares in its attributes.
type meta struct {
	ino  uint64
	mode uint32
	uid  uint32
	gid  uint32
	made time.Time
}

func (f *FS) meta(mode uint32) meta {
	return meta{ino: vfs.NewIno(), mode: mode, uid: f.uid, gid: f.gid, made: time.Now()}
}

// attr reports the node as volatile: everything here changes without a
// write, so neither edge may cache its content. Its attributes are
// fixed: a directory's times are when it was made, whatever comes and
// goes in it; a node whose size changes (a link, a temp file) says
// otherwise.
func (m meta) attr() vfs.Attr {
	nlink := uint32(1)
	if m.mode&syscall.S_IFMT == syscall.S_IFDIR {
		nlink = 2
	}
	return vfs.Attr{Ino: m.ino, Mode: m.mode, Nlink: nlink, Uid: m.uid, Gid: m.gid,
		Blksize: 4096, Atime: m.made, Mtime: m.made, Ctime: m.made, Volatile: true, Fixed: true}
}

// shelldErrnos are the errnos of shelld's errors.
var shelldErrnos = map[error]syscall.Errno{
	shelld.ErrStarted: syscall.EBUSY, shelld.ErrExited: syscall.EPIPE,
	shelld.ErrNotRun: syscall.ESRCH, shelld.ErrTooMany: syscall.EAGAIN,
	shelld.ErrExists: syscall.EEXIST, shelld.ErrNoName: syscall.ENOENT,
	shelld.ErrNoCommand: syscall.ENOENT, shelld.ErrNotAShell: syscall.EINVAL,
}

// errorf is an error whose message becomes a session's lastError and
// whose errno is for the edges.
func errorf(errno syscall.Errno, msg string) error { return vfs.Reason(errno, msg) }

// fromShelld gives a shelld error the errno the edges send for it.
func fromShelld(err error) error {
	if err == nil {
		return nil
	}
	errno := vfs.Errno(err)
	for sentinel, e := range shelldErrnos {
		if errors.Is(err, sentinel) {
			errno = e
		}
	}
	return vfs.Reason(errno, err.Error())
}
