package shelld

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
// session runs anyway, with the host's path there.
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
			bindAt(b)
		}
	}
	if len(os.Args) < 3 { // gsvfs PROGRAM ARGV0 ARGS...
		os.Exit(127)
	}
	err := syscall.Exec(os.Args[1], os.Args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "gsvfs: %s: %v\n", os.Args[1], err)
	os.Exit(127)
}

// bindAt binds b.Dir at b.Path, recursively (what is mounted inside the
// host directory comes along). A missing Path is made, empty, as the
// place to bind on where b.Make says so.
func bindAt(b Bind) error {
	fi, err := os.Lstat(b.Path)
	switch {
	case os.IsNotExist(err) && b.Make:
		if err := os.Mkdir(b.Path, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	case err != nil:
		return err
	case !fi.IsDir():
		return syscall.ENOTDIR
	case b.IfEmpty:
		if names, err := readNames(b.Path); err != nil || len(names) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	return syscall.Mount(b.Dir, b.Path, "", syscall.MS_BIND|syscall.MS_REC, "")
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(1)
}
