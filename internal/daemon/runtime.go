package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// Invariants of the runtime directory and the claim, each checked by the
// test named:
//
//  1. One process at most serves a state directory: it holds the claim
//     for as long as it runs (TestServeRefusesSecondServer,
//     TestClaimRoot).
//  2. gsvfs umount returns once the mount's daemon has exited, so the
//     state directory is free then (TestLifecycleRemountLoop).
//  3. A daemon stops answering on its socket before it lets go of the
//     claim, and a mount attaches only to a daemon that answers: never to
//     one leaving (TestLifecycleRemountLoop).
//  4. A mount attached to a daemon that is gone serves the state
//     directory itself once the claim is free
//     (TestLifecycleAttachedMountTakesOver).
//  5. Nothing that needs a socket or a lock is in the state directory
//     (TestStateDirOnSSHFS); the runtime directory is its user's alone
//     (TestPrepareRuntime).
//
// The runtime directory holds what lives only as long as a daemon: the
// 9P socket of a state directory, the lock that says which process serves
// it, and each mount's pid. It is a local directory of the user's
// ($XDG_RUNTIME_DIR/gsvfs, /run/gsvfs for root), so the state directory
// itself may be on a file system that has no sockets or locks (sshfs, most
// network file systems). Each state directory and each mount point has a
// directory of its own there, named by a hash of its path: short enough
// for a socket's path whatever the state directory's length.

// RuntimeBase is the user's runtime directory for gsvfs: /run/gsvfs for
// root (/var/run/gsvfs where there is no /run, as on macOS),
// $XDG_RUNTIME_DIR/gsvfs for others. Without XDG_RUNTIME_DIR (su,
// runuser, cron) it is the one systemd makes, /run/user/UID/gsvfs, if
// the user has it, so that a umount or a mount run from cron finds the
// daemon of one run from a login; else gsvfs-UID in the temporary
// directory, as tmux does.
func RuntimeBase() string {
	uid := os.Geteuid()
	if uid == 0 && runtime.GOOS == "linux" {
		return "/run/gsvfs"
	}
	if uid == 0 {
		return "/var/run/gsvfs"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "gsvfs")
	}
	user := filepath.Join("/run/user", strconv.Itoa(uid))
	if fi, err := os.Lstat(user); err == nil && fi.IsDir() && ownedBy(fi, uid) {
		return filepath.Join(user, "gsvfs")
	}
	return filepath.Join(os.TempDir(), "gsvfs-"+strconv.Itoa(uid))
}

// ownedBy reports whether the file of fi is uid's.
func ownedBy(fi fs.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// pathKey names a path in the runtime directory by a hash of it.
func pathKey(kind, p string) string {
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(RuntimeBase(), kind+"-"+hex.EncodeToString(sum[:8]))
}

// resolved is p with its symlinks resolved, so that two spellings of one
// directory meet; p itself where that fails.
func resolved(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// RuntimeDir is the runtime directory of the state directory root.
func RuntimeDir(root string) string { return pathKey("state", resolved(root)) }

// MountRuntimeDir is the runtime directory of the mount at mountpoint.
// Only the parent's symlinks are resolved: looking at the mount point
// itself would ask the mount's daemon, which may be hung or gone.
func MountRuntimeDir(mountpoint string) string {
	return pathKey("mount", filepath.Join(resolved(filepath.Dir(mountpoint)), filepath.Base(mountpoint)))
}

// prepareRuntime makes dir and the runtime directory above it, private
// to this user. A directory there that is another user's, or open to
// others, is refused: whoever made it could put a socket of theirs
// where a mount looks for its daemon.
func prepareRuntime(dir string) error {
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("runtime directory: %w", err)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("runtime directory: %w", err)
		}
		if !fi.IsDir() || !ownedBy(fi, os.Geteuid()) || fi.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("runtime directory %s must be a directory of uid %d's alone (mode 0700)", d, os.Geteuid())
		}
	}
	return nil
}

// socketName is the daemon's 9P socket in the state directory's runtime
// directory: a second `gsvfs mount` of the same state directory attaches
// there.
const socketName = "gsvfs.sock"

// Socket is where the daemon of the state directory root listens for 9P
// unless told otherwise, and where clients find it.
func Socket(root string) ninep.Address {
	return ninep.Address{Network: "unix", Addr: filepath.Join(RuntimeDir(root), socketName)}
}

// ErrServed says that another process serves the state directory.
var ErrServed = errors.New("another daemon serves the state directory")

// Claim is a process's hold on a state directory: the one daemon that
// serves it. It is a lock on a file of the runtime directory, which the
// kernel lets go of when the process ends, however it ends; so a claim is
// free exactly when no daemon serves the directory or is still leaving
// it.
type Claim struct{ f *os.File }

// ClaimRoot claims the state directory root for this process, or fails
// with ErrServed at once.
func ClaimRoot(root string) (*Claim, error) {
	dir := RuntimeDir(root)
	if err := prepareRuntime(dir); err != nil {
		return nil, err
	}
	f, err := lockFile(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", root, err)
	}
	return &Claim{f: f}, nil
}

// Release lets go of the claim.
func (c *Claim) Release() { c.f.Close() }

// lockFile opens path and locks it, failing with ErrServed if another
// process holds it. The descriptor is close-on-exec: no session or
// child inherits the lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrServed
		}
		return nil, err
	}
	return f, nil
}

// PrepareMountRuntime makes the runtime directory of the mount at
// mountpoint, for what it keeps there (a --server mount's log), and
// returns it.
func PrepareMountRuntime(mountpoint string) (string, error) {
	dir := MountRuntimeDir(mountpoint)
	return dir, prepareRuntime(dir)
}

// MountPid records that this process serves the FUSE mount at
// mountpoint, for gsvfs umount, until the process ends; the pid file is
// locked for as long, so a pid in it is trusted only while it is locked.
// The returned file must stay open.
func MountPid(mountpoint string) (*os.File, error) {
	dir := MountRuntimeDir(mountpoint)
	if err := prepareRuntime(dir); err != nil {
		return nil, err
	}
	f, err := lockFile(filepath.Join(dir, "pid"))
	if err != nil {
		return nil, fmt.Errorf("mount point %s: %w", mountpoint, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MountServer is the pid of the process serving the mount at mountpoint,
// and whether one does: its pid file is locked.
func MountServer(mountpoint string) (int, bool) {
	path := filepath.Join(MountRuntimeDir(mountpoint), "pid")
	f, err := lockFile(path)
	if err == nil {
		f.Close()
		return 0, false // nobody holds it
	}
	if !errors.Is(err, ErrServed) {
		return 0, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && pid > 0
}

// WaitMountServer waits, at most within, until no process serves the
// mount at mountpoint (its pid file is unlocked), and reports whether
// none does.
func WaitMountServer(mountpoint string, within time.Duration) bool {
	f, err := os.Open(filepath.Join(MountRuntimeDir(mountpoint), "pid"))
	if err != nil {
		return true // no mount there ever recorded one
	}
	done := make(chan error, 1)
	// The server holds the lock until it exits; a lock of our own
	// comes the moment it does. On a timeout the goroutine stays
	// blocked, with this short-lived command.
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_SH) }()
	select {
	case <-done:
		f.Close()
		return true
	case <-time.After(within):
		return false
	}
}
