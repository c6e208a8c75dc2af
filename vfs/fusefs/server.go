//go:build linux

package fusefs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/internal/bounds"
	"github.com/gsvfs/gsvfs/vfs"
)

// Options tune a mount.
type Options struct {
	// AllowOther lets every user reach the mount (root only). Permissions
	// are always checked by the kernel (default_permissions), as on a
	// local disk.
	AllowOther bool
	// CacheTime is how long the kernel trusts entries and attributes of
	// stored files that are not watched. Zero means one second.
	CacheTime time.Duration
	// WatchedCacheTime is how long the kernel trusts entries (misses
	// included) and attributes of stored files whose changes the tree
	// reports (vfs.Watcher, Attr.Watched): each change drops them at
	// once, so the bound matters only for changes no watch sees (a
	// write through a shared mapping). Zero means one minute.
	WatchedCacheTime time.Duration
	// NoWatch leaves the tree's changes unwatched: every stored file
	// keeps CacheTime (for measurements, and trees where inotify costs
	// too much).
	NoWatch bool
	// NoPassthrough makes stored file data go through the daemon even
	// where the kernel offers passthrough (for measurements).
	NoPassthrough bool
	// Debug logs every FUSE request.
	Debug bool
	// Log receives errors and, with Debug, the request trace.
	Log *slog.Logger
	// MaxOpenPerUser bounds the files and directories one ordinary user
	// holds open through the mount (bounds.OpenLimit if 0); root and the
	// daemon's own user are not bounded.
	MaxOpenPerUser int64
}

// server is the state shared by every node of one mount.
type server struct {
	opts  Options
	log   *slog.Logger
	opens *userOpens
	watch watchState
	// flushOwners carries each FLUSH's lock owner to Flush, and
	// lockers counts the handles that hold locks, by inode (locks.go).
	flushOwners flushOwners
	lockers     lockCounts
	// writeback: the kernel caches writes (writeback.go); pageWriters
	// counts the open handles that may dirty its pages.
	writeback   bool
	pageWriters atomic.Int64
	// life ends when the mount is being taken down (Unmount): the calls
	// an interrupt does not cancel (reqCtx) end then.
	life context.Context
	end  context.CancelFunc
	// The mount's directory and device, once mounted: the daemon
	// reaches its files through it to mend their sizes (mend).
	mountDir string
	mountDev uint64
}

// Mount is a live FUSE mount of a vfs tree.
type Mount struct {
	Dir   string
	fs    *fuse.Server
	srv   *server
	binds kernelBinds
	// The flusher under the writeback cache (writeback.go).
	flushStop chan struct{}
	flushDone chan struct{}
	flushOnce sync.Once
}

// New mounts root at dir and returns once the kernel has the mount.
func New(dir string, root vfs.Node, opts Options) (*Mount, error) {
	if opts.CacheTime == 0 {
		opts.CacheTime = time.Second
	}
	if opts.WatchedCacheTime == 0 {
		opts.WatchedCacheTime = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxOpenPerUser == 0 {
		opts.MaxOpenPerUser = bounds.OpenLimit()
	}
	srv := &server{opts: opts, log: opts.Log, writeback: writebackWanted(opts),
		opens: newUserOpens(opts.MaxOpenPerUser, bounds.NewRateLog(opts.Log, 10*time.Second))}
	srv.life, srv.end = context.WithCancel(context.Background())
	a, err := root.Attr(context.Background())
	if err != nil {
		return nil, fmt.Errorf("stat the tree's root: %w", err)
	}
	rootNode := &node{vn: root, srv: srv, volatile: a.Volatile}
	rootNode.noteAttr(a, true)
	srv.willWatch(root)
	srv.track(a.Ino, rootNode)
	caps := uint64(fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_HANDLE_KILLPRIV_V2 |
		fuse.CAP_READDIRPLUS_AUTO | fuse.CAP_DONT_MASK | fuse.CAP_DIRECT_IO_ALLOW_MMAP)
	if srv.writeback {
		caps |= fuse.CAP_WRITEBACK_CACHE
	}
	goLog := slog.NewLogLogger(opts.Log.Handler(), slog.LevelDebug)
	mo := &gofs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:   opts.AllowOther,
			Options:      []string{"default_permissions"},
			FsName:       "gsvfs",
			Name:         "gsvfs",
			MaxWrite:     1 << 20,
			MaxReadAhead: 1 << 20,
			// Many requests in flight: a slow one never queues the rest.
			MaxBackground: 64,
			DirectMount:   os.Geteuid() == 0,
			// open(O_TRUNC) arrives as one request instead of open+setattr.
			// HANDLE_KILLPRIV_V2 lets the kernel skip asking for
			// security.capability before every write (one GETXATTR round
			// trip per write otherwise: 4 KiB writes ran at 1/8 of disk
			// speed); the daemon clears set-ID bits itself (clearSetID).
			//
			// READDIRPLUS_AUTO: the kernel asks for attributes with a
			// listing only where its callers go on to stat the entries
			// (ls -l), not for a plain ls, which otherwise made a node
			// per entry: 4.6 s and 254 MB for 200,000 entries, 0.35 s
			// and 18 MB with it. DONT_MASK: see umaskFS.
			// CAP_WRITEBACK_CACHE where passthrough is not in use:
			// see writeback.go. DIRECT_IO_ALLOW_MMAP: a file served
			// with direct I/O may still be mapped shared
			// (pageguard.go's shared files).
			ExtraCapabilities: caps,
			// POSIX ACLs: the kernel enforces the stored files' access
			// ACLs (read through getxattr) along with their modes, as
			// on the disk; without it an ACL's deny entry let users in.
			EnableAcl: true,
			Debug:     opts.Debug,
			Logger:    goLog,
			PanicHandler: func(v any) fuse.Status {
				opts.Log.Error("panic in FUSE request; returning EIO", "panic", v,
					"stack", string(debug.Stack()))
				return fuse.EIO
			},
			// Locks reach the tree, so they are the backing file's
			// (locks.go) rather than the kernel's for this mount alone.
			EnableLocks: true,
		},
		// Cache times are set per reply (zero for volatile nodes), and
		// so are misses': one that should not be cached goes back with
		// a timeout set, which go-fuse sends as a plain ENOENT.
		NegativeTimeout: &opts.WatchedCacheTime,
		NullPermissions: true,
		RootStableAttr:  &gofs.StableAttr{Ino: a.Ino, Gen: a.Gen, Mode: a.Type()},
		Logger:          goLog,
	}
	fsrv, err := fuse.NewServer(umaskFS{flushOwnerFS{gofs.NewNodeFS(rootNode, mo), &srv.flushOwners}}, dir, &mo.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	go fsrv.Serve()
	if err := fsrv.WaitMount(); err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m := &Mount{Dir: dir, fs: fsrv, srv: srv}
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) == nil {
		srv.mountDir, srv.mountDev = dir, st.Dev
	}
	m.binds.ownMount(dir) // at once: the one mount kernel binds go on
	if err := closeFuseOnExec(); err != nil {
		fsrv.Unmount()
		return nil, err
	}
	srv.startWatch(root)
	m.startFlusher()
	return m, nil
}

// closeFuseOnExec marks this process's descriptors of /dev/fuse
// close-on-exec. go-fuse opens the device without the flag, and the
// daemon starts programs (the shells of /proc): a program holding the
// descriptor could read the kernel's requests meant for the daemon, or
// keep a dead daemon's mount alive.
func closeFuseOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("find the FUSE descriptor: %w", err)
	}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || target != "/dev/fuse" {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, syscall.FD_CLOEXEC); errno != 0 {
			return fmt.Errorf("mark the FUSE descriptor close-on-exec: %w", errno)
		}
	}
	return nil
}

// Wait blocks until the mount is gone (unmounted by anyone).
func (m *Mount) Wait() {
	m.fs.Wait()
	m.stopFlusher()
	m.srv.stopWatch()
}

// Unmount detaches the mount, and first any kernel binds laid over it; it
// fails while files on it are open.
func (m *Mount) Unmount() error {
	m.srv.end() // calls still waiting would hold the unmount up
	m.dropKernelBinds()
	m.stopFlusher()
	return m.fs.Unmount()
}
