package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/internal/client"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// procFlags choose where a client command finds the daemon.
type procFlags struct {
	root, server, mount string
}

func addProcFlags(cmd *cobra.Command, f *procFlags) {
	cmd.Flags().StringVar(&f.root, "root", "", "talk to the daemon serving this state directory, on its socket (default $XDG_DATA_HOME/gsvfs, /var/lib/gsvfs for root)")
	cmd.Flags().StringVar(&f.server, "server", "", "talk to the 9P server at unix:PATH or tcp:HOST:PORT")
	cmd.Flags().StringVar(&f.mount, "mount", "", "use the files of the gsvfs tree mounted at this directory (FUSE or 9P)")
}

// dial reaches /proc the way the flags say: through a mounted tree,
// over 9P to --server, or over 9P to the daemon of the state directory.
func (f procFlags) dial() (client.Proc, error) {
	set := 0
	for _, v := range []string{f.root, f.server, f.mount} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("--root, --server and --mount exclude each other: each names one way to the daemon")
	}
	switch {
	case f.mount != "":
		return client.OpenMount(f.mount)
	case f.server != "":
		a, err := ninep.ParseAddress(f.server)
		if err != nil {
			return nil, err
		}
		return client.Dial(a)
	}
	if f.root != "" {
		return dialRoot(f.root)
	}
	return dialImplied()
}

// dialRoot reaches the daemon of a state directory on its socket. It only
// looks: a client must not create a state directory that no daemon
// serves.
func dialRoot(root string) (client.Proc, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(gsvfsd.Socket(abs))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("no daemon serves %s; start one with gsvfs mount or gsvfs serve, or pass --server/--mount", abs)
	}
	return c, err
}

// dialImplied finds the daemon no flag names: the one of the gsvfs mount
// the command runs in, else the one of the default state directory, else
// the one gsvfs mount there is. Several mounts and none implied is an
// error naming them.
func dialImplied() (client.Proc, error) {
	mounts := gsvfsd.FUSEMounts()
	// The kernel's name of the working directory, not $PWD: mountinfo
	// names mounts by the kernel's path, and $PWD may reach the same
	// directory through a symbolic link (a TMPDIR of /tmp/x -> /var/x),
	// which would find no enclosing mount.
	if wd, err := syscall.Getwd(); err == nil {
		if mnt, ok := enclosingMount(wd, mounts); ok {
			return client.OpenMount(mnt)
		}
	}
	c, err := dialRoot(gsvfsd.DefaultRoot())
	if err == nil || len(mounts) == 0 {
		return c, err
	}
	if len(mounts) == 1 {
		return client.OpenMount(mounts[0])
	}
	return nil, fmt.Errorf("no daemon serves %s and several gsvfs mounts run (%s): pass --mount DIR, or run the command inside one", gsvfsd.DefaultRoot(), strings.Join(mounts, ", "))
}

// enclosingMount is the deepest of mounts that holds dir.
func enclosingMount(dir string, mounts []string) (string, bool) {
	best := ""
	for _, m := range mounts {
		if (dir == m || strings.HasPrefix(dir, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best, best != ""
}
