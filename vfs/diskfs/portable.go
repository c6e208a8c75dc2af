package diskfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"weak"

	"github.com/gsvfs/gsvfs/vfs"
)

// Portable serves a host directory through os.Root, on any system Go
// runs on: the disk trees of a device on macOS. os.Root keeps every
// name inside the directory, symlinks and ".." included, as the Linux
// implementation's *at calls do.
//
// What it gives up against the Linux one (which it stands in for
// elsewhere, and which tests run it against on Linux): nodes know their
// paths, and follow renames made through the tree, but not those made
// behind its back; a node whose file was removed or replaced on the host
// answers for whatever the path holds now; and there are no hard links
// (a node per name could not follow a file whose first name went), no
// extended attributes, device nodes or statfs.
type Portable struct {
	r *os.Root

	mu   sync.Mutex
	live map[string]weak.Pointer[pentry] // by path, "." for the root

	hide *Hidden // what the tree never shows (nil: nothing)
}

// pentry is the path a node, and any other node of the same path, stands
// for. Renames through the tree move it; removal marks it gone.
type pentry struct {
	path string
	gone bool
}

type pnode struct {
	fs *Portable
	e  *pentry
}

var (
	_ vfs.Node       = (*pnode)(nil)
	_ vfs.Readlinker = (*pnode)(nil)
	_ vfs.Symlinker  = (*pnode)(nil)
)

// NewPortable serves the host directory dir, which must exist.
func NewPortable(dir string) (*Portable, error) { return NewPortableHiding(dir, nil) }

// NewPortableHiding is NewPortable for a tree that never shows the
// directories hide holds.
func NewPortableHiding(dir string, hide *Hidden) (*Portable, error) {
	if hide != nil {
		if err := hide.checkDir(dir); err != nil {
			return nil, err
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, vfs.Error("open", dir, vfs.Errno(err))
	}
	return &Portable{r: r, live: map[string]weak.Pointer[pentry]{}, hide: hide}, nil
}

// Root returns the tree's root directory.
func (p *Portable) Root() vfs.Node { return &pnode{fs: p, e: p.entry(".")} }

// entry returns the live entry of a path, making one if none is.
func (p *Portable) entry(rel string) *pentry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.live[rel].Value(); e != nil {
		return e
	}
	e := &pentry{path: rel}
	p.live[rel] = weak.Make(e)
	return e
}

// where is the node's path now, or ENOENT once it was removed.
func (n *pnode) where(op string) (string, error) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if n.e.gone {
		return "", vfs.Error(op, n.e.path, syscall.ENOENT)
	}
	return n.e.path, nil
}

// child is the path of name in the node, which must be a directory
// itself, not a symlink to one.
func (n *pnode) child(op, name string) (string, error) {
	if err := vfs.CheckName(op, name); err != nil {
		return "", err
	}
	dir, err := n.where(op)
	if err != nil {
		return "", err
	}
	fi, err := n.fs.r.Lstat(dir)
	if err != nil {
		return "", vfs.Error(op, dir, vfs.Errno(err))
	}
	if !fi.IsDir() {
		return "", vfs.Error(op, dir, syscall.ENOTDIR)
	}
	return path.Join(dir, name), nil
}

func (n *pnode) node(rel string) *pnode { return &pnode{fs: n.fs, e: n.fs.entry(rel)} }

// HostPath reports where the node is on the host now (see the Linux
// tree's), for directories.
func (n *pnode) HostPath() (string, bool) {
	rel, err := n.where("stat")
	if err != nil {
		return "", false
	}
	fi, err := n.fs.r.Lstat(rel)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	return filepath.Join(n.fs.r.Name(), filepath.FromSlash(rel)), true
}

// moved records a rename through the tree: the entries of from and of
// everything below it now stand for to; one replaced at to is gone.
func (p *Portable) moved(from, to string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.live[to].Value(); e != nil {
		e.gone = true
		delete(p.live, to)
	}
	var moved []*pentry
	for key, wp := range p.live {
		e := wp.Value()
		if e == nil {
			delete(p.live, key)
			continue
		}
		if key == from || strings.HasPrefix(key, from+"/") {
			delete(p.live, key)
			e.path = to + strings.TrimPrefix(key, from)
			moved = append(moved, e)
		}
	}
	for _, e := range moved {
		p.live[e.path] = weak.Make(e)
	}
}

// removed records that rel is gone.
func (p *Portable) removed(rel string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.live[rel].Value(); e != nil {
		e.gone = true
		delete(p.live, rel)
	}
}

func (n *pnode) Attr(context.Context) (vfs.Attr, error) {
	rel, err := n.where("stat")
	if err != nil {
		return vfs.Attr{}, err
	}
	fi, err := n.fs.r.Lstat(rel)
	if err != nil {
		return vfs.Attr{}, vfs.Error("stat", rel, vfs.Errno(err))
	}
	return infoAttr(fi), nil
}

func (n *pnode) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	rel, err := n.where("setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	if err := n.fs.setAttr(rel, s); err != nil {
		return vfs.Attr{}, vfs.Error("setattr", rel, vfs.Errno(err))
	}
	return n.Attr(ctx)
}

// setAttr applies s to the file at rel, in chown, chmod, size, times
// order as the Linux implementation does.
func (p *Portable) setAttr(rel string, s vfs.SetAttr) error {
	fi, err := p.r.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 && s.Valid&^(vfs.SetUid|vfs.SetGid) != 0 {
		// os.Root follows a symlink for everything but its owner: refuse
		// rather than change the file it names.
		return syscall.EOPNOTSUPP
	}
	if s.Valid&(vfs.SetUid|vfs.SetGid) != 0 {
		uid, gid := s.Owner()
		if err := p.r.Lchown(rel, uid, gid); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetMode) {
		if err := p.r.Chmod(rel, fileMode(s.Mode)); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetSize) {
		f, err := p.r.OpenFile(rel, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Truncate(s.Size)
		f.Close()
		if err != nil {
			return err
		}
	}
	if s.Valid&(vfs.SetAtime|vfs.SetMtime|vfs.SetAtimeNow|vfs.SetMtimeNow) != 0 {
		fi, err := p.r.Lstat(rel)
		if err != nil {
			return err
		}
		a := infoAttr(fi)
		at, mt := pickTime(s, vfs.SetAtime, vfs.SetAtimeNow, s.Atime, a.Atime), pickTime(s, vfs.SetMtime, vfs.SetMtimeNow, s.Mtime, a.Mtime)
		return p.r.Chtimes(rel, at, mt)
	}
	return nil
}

func pickTime(s vfs.SetAttr, set, now vfs.SetMask, t, old time.Time) time.Time {
	switch {
	case s.Has(now):
		return time.Now()
	case s.Has(set):
		return t
	}
	return old
}

// fileMode converts permission and set-ID bits of a Unix mode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func (n *pnode) Lookup(_ context.Context, name string) (vfs.Node, error) {
	rel, err := n.child("lookup", name)
	if err != nil {
		return nil, err
	}
	fi, err := n.fs.r.Lstat(rel)
	if err != nil {
		return nil, vfs.Error("lookup", rel, vfs.Errno(err))
	}
	if n.fs.hide.hidesInfo(fi) {
		return nil, vfs.Error("lookup", rel, syscall.ENOENT)
	}
	return n.node(rel), nil
}

func (n *pnode) Open(_ context.Context, flags int) (vfs.Handle, error) {
	rel, err := n.where("open")
	if err != nil {
		return nil, err
	}
	fi, err := n.fs.r.Lstat(rel)
	if err != nil {
		return nil, vfs.Error("open", rel, vfs.Errno(err))
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, vfs.Error("open", rel, syscall.ELOOP) // never followed
	case fi.IsDir():
		if flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0 {
			return nil, vfs.Error("open", rel, syscall.EISDIR)
		}
		return n.fs.listing(rel)
	case !fi.Mode().IsRegular():
		return nil, vfs.Error("open", rel, syscall.EOPNOTSUPP)
	}
	f, err := n.fs.r.OpenFile(rel, flags&portableFlags, 0)
	if err != nil {
		return nil, vfs.Error("open", rel, vfs.Errno(err))
	}
	return &pfile{f: f, n: n, append: flags&os.O_APPEND != 0}, nil
}

// portableFlags are the open flags passed on to the host.
const portableFlags = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC | os.O_SYNC

func (n *pnode) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	rel, err := n.child("create", name)
	if err != nil {
		return nil, nil, err
	}
	fi, statErr := n.fs.r.Lstat(rel)
	switch {
	case statErr != nil:
	case flags&os.O_EXCL != 0:
		return nil, nil, vfs.Error("create", rel, syscall.EEXIST)
	case fi.IsDir():
		return nil, nil, vfs.Error("create", rel, syscall.EISDIR)
	case !fi.Mode().IsRegular():
		return nil, nil, vfs.Error("create", rel, syscall.ELOOP) // never followed
	}
	f, err := n.fs.r.OpenFile(rel, flags&(portableFlags|os.O_EXCL)|os.O_CREATE, fileMode(mode))
	if err != nil {
		return nil, nil, vfs.Error("create", rel, vfs.Errno(err))
	}
	if statErr != nil {
		n.fs.giveToCaller(ctx, rel)
	}
	c := n.node(rel)
	return c, &pfile{f: f, n: c, append: flags&os.O_APPEND != 0}, nil
}

// giveToCaller makes a new file the caller's, where the daemon may.
func (p *Portable) giveToCaller(ctx context.Context, rel string) {
	c, ok := vfs.CallerFrom(ctx)
	if !ok || os.Geteuid() != 0 || c.Uid == 0 && c.Gid == 0 {
		return
	}
	p.r.Lchown(rel, int(c.Uid), int(c.Gid))
}

func (n *pnode) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	rel, err := n.child("mkdir", name)
	if err != nil {
		return nil, err
	}
	if err := n.fs.r.Mkdir(rel, fileMode(mode)); err != nil {
		return nil, vfs.Error("mkdir", rel, vfs.Errno(err))
	}
	n.fs.giveToCaller(ctx, rel)
	return n.node(rel), nil
}

func (n *pnode) Remove(_ context.Context, name string, dir bool) error {
	rel, err := n.child("remove", name)
	if err != nil {
		return err
	}
	fi, err := n.fs.r.Lstat(rel)
	if err != nil {
		return vfs.Error("remove", rel, vfs.Errno(err))
	}
	if dir && !fi.IsDir() {
		return vfs.Error("remove", rel, syscall.ENOTDIR)
	}
	if !dir && fi.IsDir() {
		return vfs.Error("remove", rel, syscall.EISDIR)
	}
	if err := n.fs.r.Remove(rel); err != nil {
		return vfs.Error("remove", rel, vfs.Errno(err))
	}
	n.fs.removed(rel)
	return nil
}

func (n *pnode) Rename(_ context.Context, oldName string, newDir vfs.Node, newName string) error {
	from, err := n.child("rename", oldName)
	if err != nil {
		return err
	}
	d, ok := newDir.(*pnode)
	if !ok || d.fs != n.fs {
		return vfs.Error("rename", from, syscall.EXDEV)
	}
	to, err := d.child("rename", newName)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if err := n.fs.replaceable(from, to); err != nil {
		return vfs.Error("rename", from, vfs.Errno(err))
	}
	if err := n.fs.r.Rename(from, to); err != nil {
		return vfs.Error("rename", from, vfs.Errno(err))
	}
	n.fs.moved(from, to)
	return nil
}

// replaceable makes way for renaming from onto to as rename(2) allows:
// os.Root's Rename never replaces a directory, so an empty one at to is
// removed first (a moment in which to does not exist, which rename(2)
// would not show), and a file over a directory is EISDIR.
func (p *Portable) replaceable(from, to string) error {
	dst, err := p.r.Lstat(to)
	if err != nil || !dst.IsDir() {
		return nil
	}
	src, err := p.r.Lstat(from)
	if err != nil {
		return err
	}
	if !src.IsDir() {
		return syscall.EISDIR
	}
	return p.r.Remove(to) // ENOTEMPTY or EEXIST for a full one
}

func (n *pnode) Readlink(context.Context) (string, error) {
	rel, err := n.where("readlink")
	if err != nil {
		return "", err
	}
	target, err := n.fs.r.Readlink(rel)
	if err != nil {
		return "", vfs.Error("readlink", rel, vfs.Errno(err))
	}
	return target, nil
}

func (n *pnode) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	rel, err := n.child("symlink", name)
	if err != nil {
		return nil, err
	}
	if err := n.fs.r.Symlink(target, rel); err != nil {
		return nil, vfs.Error("symlink", rel, vfs.Errno(err))
	}
	n.fs.giveToCaller(ctx, rel)
	return n.node(rel), nil
}

// listing snapshots a directory at open: offsets are positions in it, so
// they keep their meaning however the directory changes meanwhile.
func (p *Portable) listing(rel string) (vfs.Handle, error) {
	f, err := p.r.Open(rel)
	if err != nil {
		return nil, vfs.Error("open", rel, vfs.Errno(err))
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, vfs.Error("readdir", rel, vfs.Errno(err))
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make(vfs.ListHandle, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || p.hide.hidesInfo(fi) {
			continue // gone meanwhile, or never shown
		}
		a := infoAttr(fi)
		out = append(out, vfs.DirEntry{Name: e.Name(), Ino: a.Ino, Type: a.Type(), Next: uint64(len(out) + 1)})
	}
	return out, nil
}

// infoAttr converts what os.Lstat found, from its system stat.
func infoAttr(fi fs.FileInfo) vfs.Attr {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return vfs.Attr{Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), Mtime: fi.ModTime()}
	}
	at, mt, ct, born := statTimes(st)
	ts := func(t syscall.Timespec) time.Time { return time.Unix(t.Unix()) }
	return vfs.Attr{Ino: st.Ino, Gen: born, Mode: uint32(st.Mode), Nlink: uint32(st.Nlink),
		Uid: st.Uid, Gid: st.Gid, Rdev: uint64(st.Rdev), Size: st.Size, Blocks: st.Blocks,
		Blksize: uint32(st.Blksize), Atime: ts(at), Mtime: ts(mt), Ctime: ts(ct)}
}

// pfile is an open host file of node n.
type pfile struct {
	f      *os.File
	n      *pnode
	append bool // writes go to the end, wherever they say
}

func (h *pfile) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	n, err := h.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		return n, io.EOF
	}
	if err != nil {
		return n, vfs.Error("read", "", vfs.Errno(err))
	}
	return n, nil
}

func (h *pfile) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	var n int
	var err error
	if h.append {
		n, err = h.f.Write(p) // os refuses WriteAt here; pwrite appends too
	} else {
		n, err = h.f.WriteAt(p, off)
	}
	if err != nil {
		return n, vfs.Error("write", "", vfs.Errno(err))
	}
	return n, nil
}

func (h *pfile) Close() error { return h.f.Close() }

func (h *pfile) Sync(context.Context) error { return h.f.Sync() }

func (h *pfile) Attr(context.Context) (vfs.Attr, error) {
	fi, err := h.f.Stat()
	if err != nil {
		return vfs.Attr{}, vfs.Error("stat", "", vfs.Errno(err))
	}
	return infoAttr(fi), nil
}

// SetAttr changes size and mode through the open file, which works
// after it was removed; the rest goes by the node's path.
func (h *pfile) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if s.Has(vfs.SetSize) {
		if err := h.f.Truncate(s.Size); err != nil {
			return vfs.Attr{}, vfs.Error("truncate", "", vfs.Errno(err))
		}
	}
	if s.Has(vfs.SetMode) {
		if err := h.f.Chmod(fileMode(s.Mode)); err != nil {
			return vfs.Attr{}, vfs.Error("chmod", "", vfs.Errno(err))
		}
	}
	if rest := s.Valid &^ (vfs.SetSize | vfs.SetMode); rest != 0 {
		s.Valid = rest
		if _, err := h.n.SetAttr(ctx, s); err != nil {
			return vfs.Attr{}, err
		}
	}
	return h.Attr(ctx)
}
