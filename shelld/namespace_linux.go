package shelld

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mayUnshareMounts reports whether a session may get a mount namespace
// of its own: that takes CAP_SYS_ADMIN, which root has.
func mayUnshareMounts() bool { return os.Geteuid() == 0 }

// unshareMounts starts cmd in a new mount namespace, its mounts private
// (Go makes / MS_PRIVATE|MS_REC there), so nothing laid in it reaches
// the host.
func unshareMounts(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Unshareflags |= syscall.CLONE_NEWNS
}

// RunInit is the first thing the gsvfs binary does: when it was started
// as a session's program in its own mount namespace (namespaced), it
// binds the tree's directories at their paths, then becomes the program
// the session runs (execve: same pid, terminal and directory). Otherwise
// it returns at once. A bind that cannot be laid is left out: the
// session runs anyway, with the host's path there. A bind is laid by
// descriptor (open_tree, move_mount): its source is the descriptor the
// daemon passed, its place found with openat2, symlinks refused (see
// Bind).
//
// The new namespace starts as a private copy of the host's mounts, other
// gsvfs mounts included: a copy would keep their FUSE connections up
// after their daemons unmount them, so those daemons could not exit
// while the session runs. Those Namespace.Detach names are detached here
// first.
func RunInit() {
	spec, ok := os.LookupEnv(initEnv)
	if !ok || len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	os.Unsetenv(initEnv)
	var ns Namespace
	if err := json.Unmarshal([]byte(spec), &ns); err == nil {
		for _, at := range ns.Detach {
			syscall.Unmount(at, syscall.MNT_DETACH)
		}
		for _, b := range ns.Binds {
			if bindAt(b) == nil {
				detachBelow(b, ns.Detach)
			}
			unix.Close(b.Fd) // not the program's
		}
	}
	if len(os.Args) < 3 { // gsvfs PROGRAM ARGV0 ARGS...
		os.Exit(127)
	}
	err := syscall.Exec(os.Args[1], os.Args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "gsvfs: %s: %v\n", os.Args[1], err)
	os.Exit(127)
}

// detachBelow detaches, at their places below b.Path, the mounts of
// detach that the bind's recursive tree brought along from below b.Dir:
// the tree was cloned in the daemon's namespace, which still has them.
func detachBelow(b Bind, detach []string) {
	for _, at := range detach {
		if rel, ok := strings.CutPrefix(at, b.Dir); ok && (rel == "" || rel[0] == '/') {
			syscall.Unmount(b.Path+rel, syscall.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
	}
}

// beneath is how a bind's place and a source named by path are found: no
// symlink followed anywhere on the way (ELOOP), as kernel binds find
// theirs.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS

// openNoSymlinks opens the directory at the absolute path p (O_PATH),
// following no symlink on the way.
func openNoSymlinks(p string) (*os.File, error) {
	fd, err := openBeneathRoot(p)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openBeneathRoot opens the directory at the absolute path p (O_PATH)
// from /, following no symlink.
func openBeneathRoot(p string) (int, error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	return openDirAt(root, strings.TrimPrefix(filepath.Clean(p), "/"))
}

// openDirAt opens the directory rel beneath dirfd (O_PATH), following no
// symlink; rel "" is dirfd's own.
func openDirAt(dirfd int, rel string) (int, error) {
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
}

// bindAt moves the detached tree b.Fd (detachedTree) to b.Path. A missing Path is made, empty,
// as the place to bind on where b.Make says so: in the directory found
// with no symlink on the way, by its descriptor.
func bindAt(b Bind) error {
	target, err := bindPlace(b)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	if b.IfEmpty {
		if names, err := readNames(target); err != nil || len(names) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	return unix.MoveMount(b.Fd, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// detachedTree makes a detached recursive bind of the directory dir (what
// is mounted inside it comes along), closing dir. It is made here, in the
// daemon's mount namespace, which the kernel clones from only; the
// session's first process moves it into its own. A detached mount goes
// with its last descriptor; once moved, the bind stays.
func detachedTree(dir *os.File) (*os.File, error) {
	defer dir.Close()
	fd, err := unix.OpenTree(int(dir.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, &os.PathError{Op: "open_tree", Path: dir.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), dir.Name()), nil
}

// bindPlace opens b.Path (O_PATH), made first where it is missing and
// b.Make says so.
func bindPlace(b Bind) (int, error) {
	fd, err := openBeneathRoot(b.Path)
	if err != unix.ENOENT || !b.Make {
		return fd, err
	}
	parent, err := openBeneathRoot(filepath.Dir(b.Path))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	name := filepath.Base(b.Path)
	if err := unix.Mkdirat(parent, name, 0o755); err != nil && err != unix.EEXIST {
		return -1, err
	}
	return openDirAt(parent, name)
}

// readNames reads a name or none of the directory dirfd (O_PATH).
func readNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(1)
}
