package shelld

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
)

// Namespace is how a session's process sees the tree's paths.
//
// Where the daemon may (root: CAP_SYS_ADMIN), a session runs in a private
// mount namespace of its own in which each Bind's host directory is bound
// at its path of the tree, so `make -C /workspaces/app` in a command
// finds what the tree shows there. Everything else (/etc, /home, /proc,
// /sys, /dev) stays the host's. Elsewhere a command sees the host's paths
// only, and the tree's reach it through `ctl cwd` and TreeEnv.
type Namespace struct {
	Binds []Bind `json:"binds"`
	// Tree is where the whole tree is mounted on this machine ("" where
	// it is not), given to sessions as TreeEnv.
	Tree string `json:"tree"`
	// Detach are mounts the session's namespace must not keep a copy of
	// (other daemons' FUSE mounts, which a copy would keep up after they
	// unmount them, so that they could not exit).
	Detach []string `json:"detach"`
}

// Bind is a host directory bound at a path of the tree.
//
// The bind is laid by descriptor, never by a path a user could redirect:
// its source is the host directory as Open opens it (the tree's own hold
// on it), and its place is found with no symlink followed on the way, so
// that a user's symlink on the way (a 1777 /workspaces) makes the bind
// fail, not land on a directory of the host's.
type Bind struct {
	Path string `json:"path"` // where, such as /workspaces
	Dir  string `json:"dir"`  // the host directory that serves it
	// Open opens the host directory to bind from the tree's own hold on
	// it; nil: Dir is opened with no symlink followed.
	Open func() (*os.File, error) `json:"-"`
	// Fd is the source's descriptor in the re-executed daemon.
	Fd int `json:"fd"`
	// IfEmpty binds it only where the host has nothing at Path but an
	// empty directory (/mnt).
	IfEmpty bool `json:"ifEmpty,omitempty"`
	// Make makes a missing Path (an empty directory) to bind on: for the
	// top of the tree (/workspaces) and for mount points in the daemon's
	// own state directory, never in a host directory of someone's.
	Make bool `json:"make,omitempty"`
}

// TreeEnv names, in a session's environment, where the whole tree is
// mounted on this machine.
const TreeEnv = "GSVFS_TREE"

// Paths, in Status: what paths a session's commands see.
const (
	PathsTree = "tree" // the tree's paths are bound where the tree has them
	PathsHost = "host" // the host's only: the tree's reach only `ctl cwd`
)

// initEnv carries the binds to the re-executed daemon that lays them in
// the session's new mount namespace before it becomes the session's
// program (RunInit), started with initArg0 as its name. It never reaches
// the session's program.
const (
	initEnv  = "GSVFS_SESSION_BINDS"
	initArg0 = "gsvfs-session"
)

// nsRefused is set once the system refused a mount namespace: later
// sessions do not try again.
var nsRefused atomic.Bool

// namespaced makes cmd the re-executed daemon that lays binds in a
// private mount namespace and then runs cmd's program (RunInit), where
// the system allows it; it reports whether it did, and the start must
// then unshare the mount namespace (ptyOptions.unshare). Each bind's
// source is opened here and passed to the child as a detached tree's
// descriptor; a bind whose source cannot be opened is left out. done closes this process's
// copies once the child has started.
func namespaced(cmd *exec.Cmd, ns Namespace) (ok bool, done func()) {
	done = func() {}
	if len(ns.Binds) == 0 || nsRefused.Load() || !mayUnshareMounts() {
		return false, done
	}
	// The daemon's own binary, even if replaced on disk since.
	const self = "/proc/self/exe"
	var laid []Bind
	var files []*os.File
	for _, b := range ns.Binds {
		open := b.Open
		if open == nil {
			open = func() (*os.File, error) { return openNoSymlinks(b.Dir) }
		}
		f, err := open()
		if err == nil {
			f, err = detachedTree(f)
		}
		if err != nil {
			continue
		}
		b.Fd = 3 + len(files) // ExtraFiles start at 3
		files, laid = append(files, f), append(laid, b)
	}
	done = func() {
		for _, f := range files {
			f.Close()
		}
	}
	ns.Binds = laid
	spec, err := json.Marshal(ns)
	if err != nil {
		return false, done
	}
	cmd.Args = append([]string{initArg0, cmd.Path}, cmd.Args...)
	cmd.Path = self
	cmd.Env = append(cmd.Env, initEnv+"="+string(spec))
	cmd.ExtraFiles = files
	return true, done
}

// hostPath is where the host has p, a path a process in a namespace with
// binds sees (its cwd, /workspaces/app): under the deepest bind that
// holds it, the bound host directory.
func hostPath(p string, binds []Bind) string {
	host, depth := p, -1
	for _, b := range binds {
		rest, ok := strings.CutPrefix(p, b.Path)
		if ok && (rest == "" || rest[0] == '/') && len(b.Path) > depth {
			host, depth = b.Dir+rest, len(b.Path)
		}
	}
	return host
}
