package procfs

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/shelld"
)

// setCwd checks the directory a cwd line names and returns what moves
// the session there. A directory that cannot be had leaves the session
// without one: it starts nothing until a cwd succeeds, so a later exec
// never runs in a directory it was not given.
func (d *sessionDir) setCwd(arg string, b *batch) (func() error, error) {
	if err := idle(b); err != nil {
		return nil, err
	}
	if arg == "" {
		return nil, errorf(syscall.EINVAL, "needs a directory")
	}
	host, name, err := d.where(arg, b)
	if err == nil {
		err = shelld.CheckWorkdir(host)
	}
	if err != nil {
		d.s.LoseWorkdir(err)
		return nil, err
	}
	b.dir, b.host = name, host
	return func() error {
		if err := d.s.SetWorkdir(host); err != nil {
			return err
		}
		d.mu.Lock()
		d.dir = name
		d.mu.Unlock()
		return nil
	}, nil
}

// where is the host directory of a cwd argument, and the tree path that
// later relative cwds are taken against ("" when it is a host path):
//   - ~ and ~/x are the session user's home (a host path);
//   - an absolute path goes through Options.Resolve (tree or host);
//   - a relative one is taken against the session's current directory,
//     in the tree if that was a tree path, else on the host.
func (d *sessionDir) where(arg string, b *batch) (host, name string, err error) {
	switch {
	case arg == "~" || strings.HasPrefix(arg, "~/"):
		return filepath.Join(d.s.Home(), filepath.FromSlash(arg[1:])), "", nil
	case strings.HasPrefix(arg, "~"):
		return "", "", errorf(syscall.EINVAL, fmt.Sprintf("%q: only ~ and ~/… (the session user's home) are known", arg))
	case path.IsAbs(arg):
		name = path.Clean(arg)
	case b.dir != "":
		name = path.Join(b.dir, arg)
	default:
		return filepath.Join(b.host, filepath.FromSlash(arg)), "", nil
	}
	host, err = d.fs.opts.Resolve(b.ctx, name)
	if errors.Is(err, syscall.EINVAL) {
		err = errorf(syscall.EINVAL, fmt.Sprintf("%s: no host directory serves it (a synthetic tree or another device's), so no process can run there", name))
	}
	return host, name, err
}
