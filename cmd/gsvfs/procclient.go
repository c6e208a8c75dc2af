package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// procClient is how the client commands (attach, ps) reach /proc of a
// running daemon: the files of a mounted tree, or 9P straight to the
// daemon. They use nothing else, so they behave the same either way.
type procClient interface {
	// open opens the file rel of /proc, such as "7/stream": for reading,
	// or write-only with write set. Reads are sequential from offset 0
	// and each is one request, so a read of a stream returns what has
	// come instead of waiting to fill the buffer.
	open(rel string, write bool) (io.ReadWriteCloser, error)
	// sessions lists the names of the session directories in /proc.
	sessions() ([]string, error)
	// close lets the connection go; over 9P, reads blocked in it end.
	close()
}

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
func (f procFlags) dial() (procClient, error) {
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
		return openMountProc(f.mount)
	case f.server != "":
		a, err := ninep.ParseAddress(f.server)
		if err != nil {
			return nil, err
		}
		return dialProc(a)
	}
	if f.root != "" {
		return dialRoot(f.root)
	}
	return dialImplied()
}

// dialRoot reaches the daemon of a state directory on its socket. It only
// looks: a client must not create a state directory that no daemon
// serves.
func dialRoot(root string) (procClient, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c, err := dialProc(defaultSocket(abs))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("no daemon serves %s; start one with gsvfs mount or gsvfs serve, or pass --server/--mount", abs)
	}
	return c, err
}

// dialImplied finds the daemon no flag names: the one of the gsvfs mount
// the command runs in, else the one of the default state directory, else
// the one gsvfs mount there is. Several mounts and none implied is an
// error naming them.
func dialImplied() (procClient, error) {
	mounts := gsvfsMounts()
	// The kernel's name of the working directory, not $PWD: mountinfo
	// names mounts by the kernel's path, and $PWD may reach the same
	// directory through a symbolic link (a TMPDIR of /tmp/x -> /var/x),
	// which would find no enclosing mount.
	if wd, err := syscall.Getwd(); err == nil {
		if mnt, ok := enclosingMount(wd, mounts); ok {
			return openMountProc(mnt)
		}
	}
	c, err := dialRoot(defaultRoot())
	if err == nil || len(mounts) == 0 {
		return c, err
	}
	if len(mounts) == 1 {
		return openMountProc(mounts[0])
	}
	return nil, fmt.Errorf("no daemon serves %s and several gsvfs mounts run (%s): pass --mount DIR, or run the command inside one", defaultRoot(), strings.Join(mounts, ", "))
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

// mountProc is /proc of a mounted tree: plain files.
type mountProc struct{ dir string }

func openMountProc(mnt string) (procClient, error) {
	dir := filepath.Join(mnt, "proc")
	if _, err := os.Stat(filepath.Join(dir, "clone")); err != nil {
		return nil, fmt.Errorf("%s is not a gsvfs mount: %w", mnt, err)
	}
	return mountProc{dir}, nil
}

func (m mountProc) open(rel string, write bool) (io.ReadWriteCloser, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	return os.OpenFile(filepath.Join(m.dir, filepath.FromSlash(rel)), flag, 0)
}

func (m mountProc) sessions() ([]string, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (mountProc) close() {}

// ninepProc is /proc over our own 9P client.
type ninepProc struct {
	c    *ninep.Client
	proc vfs.Node
	// ctx ends at close, which flushes the requests still waiting.
	ctx    context.Context
	cancel context.CancelFunc
}

func dialProc(a ninep.Address) (procClient, error) {
	c, root, err := dialTree(a)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &ninepProc{c: c, ctx: ctx, cancel: cancel}
	if p.proc, err = p.walk(root, "proc"); err != nil {
		p.close()
		return nil, fmt.Errorf("%s serves no /proc: %w", a, err)
	}
	return p, nil
}

// walk looks up rel from n one name at a time, giving back the fids of
// the directories passed on the way (the tree's root too, which is
// needed only to reach /proc; /proc itself is kept).
func (p *ninepProc) walk(n vfs.Node, rel string) (vfs.Node, error) {
	for name := range strings.SplitSeq(path.Clean(rel), "/") {
		next, err := n.Lookup(p.ctx, name)
		if n != p.proc {
			forget(n)
		}
		if err != nil {
			return nil, err
		}
		n = next
	}
	return n, nil
}

// forget gives back a node's fid now rather than at garbage collection.
func forget(n vfs.Node) {
	if f, ok := n.(vfs.Forgetter); ok {
		f.Forget()
	}
}

// pathError names the file of /proc an operation failed on, as the
// errors of a mounted tree's files do. The client's own errors name only
// the 9P operation, which is dropped for the file's.
func pathError(op, rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: path.Join("/proc", rel), Err: err}
}

func (p *ninepProc) open(rel string, write bool) (io.ReadWriteCloser, error) {
	n, err := p.walk(p.proc, rel)
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	defer forget(n) // an open handle has a fid of its own
	flags := os.O_RDONLY
	if write {
		flags = os.O_WRONLY
	}
	h, err := n.Open(p.ctx, flags)
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	return &ninepFile{ctx: p.ctx, h: h}, nil
}

func (p *ninepProc) sessions() ([]string, error) {
	h, err := p.proc.Open(p.ctx, os.O_RDONLY)
	if err != nil {
		return nil, pathError("open", "", err)
	}
	defer h.Close()
	dr, ok := h.(vfs.DirReader)
	if !ok {
		return nil, pathError("readdir", "", syscall.ENOTDIR)
	}
	var names []string
	for off := uint64(0); ; {
		ents, err := dr.ReadDir(p.ctx, off)
		if err != nil {
			return nil, pathError("readdir", "", err)
		}
		if len(ents) == 0 {
			return names, nil
		}
		for _, e := range ents {
			if e.Type == syscall.S_IFDIR {
				names = append(names, e.Name)
			}
		}
		off = ents[len(ents)-1].Next
	}
}

func (p *ninepProc) close() {
	p.cancel()
	p.c.Close()
}

// maxRead bounds one read well below any msize, so a read is always a
// single Tread: a second one could block at a stream's end (up to the
// yield time) while the first one's bytes wait to be shown.
const maxRead = 32 << 10

// ninepFile reads and writes an open 9P file at a running offset.
type ninepFile struct {
	ctx context.Context
	h   vfs.Handle
	mu  sync.Mutex
	off int64
}

func (f *ninepFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.h.ReadAt(f.ctx, p[:min(len(p), maxRead)], f.off)
	f.off += int64(n)
	return n, err
}

func (f *ninepFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.h.WriteAt(f.ctx, p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *ninepFile) Close() error { return f.h.Close() }

// maxSmallFile bounds what readProcFile takes: status and clone are one
// line each.
const maxSmallFile = 1 << 20

// readProcFile reads a small file of /proc whole.
func readProcFile(c procClient, rel string) ([]byte, error) {
	f, err := c.open(rel, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSmallFile))
}

// sessionStatus is /proc/ID/status: decoded, and as the daemon sent it.
type sessionStatus struct {
	shelld.Status
	raw json.RawMessage
}

// errNoSession says a session is not (or no longer) in /proc.
var errNoSession = errors.New("no such session")

// readStatus reads a session's status. A session that is not there is
// errNoSession, with the name, whichever way /proc is reached.
func readStatus(c procClient, id string) (sessionStatus, error) {
	data, err := readProcFile(c, id+"/status")
	if errors.Is(err, fs.ErrNotExist) {
		return sessionStatus{}, fmt.Errorf("%w %q (gsvfs ps lists them)", errNoSession, id)
	}
	if err != nil {
		return sessionStatus{}, err
	}
	st := sessionStatus{raw: json.RawMessage(strings.TrimSpace(string(data)))}
	if err := json.Unmarshal(data, &st.Status); err != nil {
		return sessionStatus{}, fmt.Errorf("session %s: bad status %q: %w", id, data, err)
	}
	return st, nil
}

// validSessionName refuses a name that is not one directory of /proc, so
// a name such as "../etc" cannot lead a client elsewhere in the tree.
func validSessionName(id string) error {
	if !vfs.ValidName(id) || id == "clone" || id == "status" {
		return fmt.Errorf("%q is not a session name", id)
	}
	return nil
}
