package client

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

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// Proc is how the client commands (attach, ps) reach /proc of a
// running daemon: the files of a mounted tree, or 9P straight to the
// daemon. They use nothing else, so they behave the same either way.
type Proc interface {
	// Open opens the file rel of /proc, such as "7/stream": for reading,
	// or write-only with write set. Reads are sequential from offset 0
	// and each is one request, so a read of a stream returns what has
	// come instead of waiting to fill the buffer.
	Open(rel string, write bool) (io.ReadWriteCloser, error)
	// Sessions lists the names of the session directories in /proc.
	Sessions() ([]string, error)
	// Close lets the connection go; over 9P, reads blocked in it end.
	Close()
}

// mountProc is /proc of a mounted tree: plain files.
type mountProc struct{ dir string }

// OpenMount reaches /proc through the files of the gsvfs tree mounted at
// mnt (with FUSE or 9P), after checking that it is one.
func OpenMount(mnt string) (Proc, error) {
	dir := filepath.Join(mnt, "proc")
	if _, err := os.Stat(filepath.Join(dir, "clone")); err != nil {
		return nil, fmt.Errorf("%s is not a gsvfs mount: %w", mnt, err)
	}
	return mountProc{dir}, nil
}

func (m mountProc) Open(rel string, write bool) (io.ReadWriteCloser, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	return os.OpenFile(filepath.Join(m.dir, filepath.FromSlash(rel)), flag, 0)
}

func (m mountProc) Sessions() ([]string, error) {
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

func (mountProc) Close() {}

// ninepProc is /proc over our own 9P client.
type ninepProc struct {
	c    *ninep.Client
	proc vfs.Node
	// ctx ends at close, which flushes the requests still waiting.
	ctx    context.Context
	cancel context.CancelFunc
}

// Dial reaches /proc of the gsvfs 9P server at a.
func Dial(a ninep.Address) (Proc, error) {
	c, root, err := DialTree(a)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &ninepProc{c: c, ctx: ctx, cancel: cancel}
	if p.proc, err = p.walk(root, "proc"); err != nil {
		p.Close()
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

func (p *ninepProc) Open(rel string, write bool) (io.ReadWriteCloser, error) {
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

func (p *ninepProc) Sessions() ([]string, error) {
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

func (p *ninepProc) Close() {
	p.cancel()
	p.c.Close()
}

// MaxRead bounds one read well below any msize, so a read is always a
// single Tread: a second one could block at a stream's end (up to the
// yield time) while the first one's bytes wait to be shown. A reader of
// a stream needs no larger buffer.
const MaxRead = 32 << 10

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
	n, err := f.h.ReadAt(f.ctx, p[:min(len(p), MaxRead)], f.off)
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

// maxSmallFile bounds what ReadFile takes: status and clone are one
// line each.
const maxSmallFile = 1 << 20

// ReadFile reads a small file of /proc whole, such as "clone".
func ReadFile(c Proc, rel string) ([]byte, error) {
	f, err := c.Open(rel, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSmallFile))
}

// SessionStatus is /proc/ID/status: decoded, and as the daemon sent it
// (Raw), which ps --json prints unchanged.
type SessionStatus struct {
	shelld.Status
	Raw json.RawMessage
}

// ErrNoSession says a session is not (or no longer) in /proc.
var ErrNoSession = errors.New("no such session")

// ReadStatus reads a session's status. A session that is not there is
// ErrNoSession, with the name, whichever way /proc is reached.
func ReadStatus(c Proc, id string) (SessionStatus, error) {
	data, err := ReadFile(c, id+"/status")
	if errors.Is(err, fs.ErrNotExist) {
		return SessionStatus{}, fmt.Errorf("%w %q (gsvfs ps lists them)", ErrNoSession, id)
	}
	if err != nil {
		return SessionStatus{}, err
	}
	st := SessionStatus{Raw: json.RawMessage(strings.TrimSpace(string(data)))}
	if err := json.Unmarshal(data, &st.Status); err != nil {
		return SessionStatus{}, fmt.Errorf("session %s: bad status %q: %w", id, data, err)
	}
	return st, nil
}

// ValidSessionName refuses a name that is not one directory of /proc, so
// a name such as "../etc" cannot lead a client elsewhere in the tree.
func ValidSessionName(id string) error {
	if !vfs.ValidName(id) || id == "clone" || id == "status" {
		return fmt.Errorf("%q is not a session name", id)
	}
	return nil
}
