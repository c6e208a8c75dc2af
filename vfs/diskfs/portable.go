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

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// Portable serves a host directory through os.Root, on any system Go
// runs on: the disk trees of a device on macOS. os.Root keeps every
// name inside the directory, symlinks and ".." included, as the Linux
// implementation's *at calls do. It follows a symlink in the middle
// of a path, though, as long as the symlink stays inside: so a node's path
// is walked one name at a time (at), never handed to os.Root whole.
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

// Close lets the tree go: its nodes fail with EBADF from then on, and
// files opened before stay usable until closed. It may be called again.
func (p *Portable) Close() error { return p.r.Close() }

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

// child is the path of name in the node. That the node is a directory
// itself, not a symlink to one, is checked by the walk (at).
func (n *pnode) child(op, name string) (string, error) {
	if err := vfs.CheckName(op, name); err != nil {
		return "", err
	}
	dir, err := n.where(op)
	if err != nil {
		return "", err
	}
	return path.Join(dir, name), nil
}

// at opens the directory that holds rel, one name at a time from the
// tree's root, and returns it with rel's last name; the caller closes
// it. os.Root would follow a symlink in the middle of rel: a directory on
// a node's path swapped for a symlink (on the host, or through a second
// tree of the same directory, which does not see this one's nodes) would
// lead the node into the daemon's state directory. Each step must be a
// directory, not a symlink and not hidden, and once open the very one it
// was when looked at.
func (p *Portable) at(op, rel string) (*os.Root, string, error) {
	d, err := p.r.OpenRoot(".")
	if err != nil {
		return nil, "", vfs.Error(op, rel, vfs.Errno(err))
	}
	names := strings.Split(rel, "/")
	for _, name := range names[:len(names)-1] {
		next, err := p.step(d, name)
		d.Close()
		if err != nil {
			return nil, "", vfs.Error(op, rel, vfs.Errno(err))
		}
		d = next
	}
	return d, names[len(names)-1], nil
}

// step opens the directory name of d: not a symlink, not hidden, and not
// another directory swapped in between the look and the open.
func (p *Portable) step(d *os.Root, name string) (*os.Root, error) {
	fi, err := d.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, syscall.ENOTDIR
	case p.hide.hidesInfo(fi):
		return nil, syscall.ENOENT
	}
	next, err := d.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if got, err := next.Stat("."); err != nil || !os.SameFile(fi, got) {
		next.Close()
		return nil, syscall.ENOENT
	}
	return next, nil
}

// lstat is at, and what os.Lstat finds at the last name.
func (p *Portable) lstat(op, rel string) (*os.Root, string, fs.FileInfo, error) {
	d, name, err := p.at(op, rel)
	if err != nil {
		return nil, "", nil, err
	}
	fi, err := d.Lstat(name)
	if err != nil {
		d.Close()
		return nil, "", nil, vfs.Error(op, rel, vfs.Errno(err))
	}
	return d, name, fi, nil
}

// openSame opens the file name of d that os.Lstat found as fi, and only
// it: os.Root follows a symlink at the last name, so the name swapped for
// one meanwhile would open another file. O_TRUNC waits for that check,
// and a file the tree hides (a hard link to one) is not there.
func (p *Portable) openSame(d *os.Root, name string, fi fs.FileInfo, flags int) (*os.File, error) {
	f, err := d.OpenFile(name, flags&portableFlags&^os.O_TRUNC, 0)
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	switch {
	case err != nil:
	case !os.SameFile(fi, got), p.hide.hidesInfo(got):
		err = syscall.ENOENT
	case flags&os.O_TRUNC != 0:
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (n *pnode) node(rel string) *pnode { return &pnode{fs: n.fs, e: n.fs.entry(rel)} }

// HostPath reports where the node is on the host now (see the Linux
// tree's), for directories.
func (n *pnode) HostPath() (string, bool) {
	rel, err := n.where("stat")
	if err != nil {
		return "", false
	}
	d, _, fi, err := n.fs.lstat("stat", rel)
	if err != nil {
		return "", false
	}
	d.Close()
	if !fi.IsDir() {
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
	d, _, fi, err := n.fs.lstat("stat", rel)
	if err != nil {
		return vfs.Attr{}, err
	}
	d.Close()
	return infoAttr(fi), nil
}

func (n *pnode) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	rel, err := n.where("setattr")
	if err != nil {
		return vfs.Attr{}, err
	}
	d, name, fi, err := n.fs.lstat("setattr", rel)
	if err != nil {
		return vfs.Attr{}, err
	}
	err = n.fs.setAttr(d, name, fi, s)
	d.Close()
	if err != nil {
		return vfs.Attr{}, vfs.Error("setattr", rel, vfs.Errno(err))
	}
	return n.Attr(ctx)
}

// setAttr applies s to the file name of d, which os.Lstat found as fi,
// in chown, chmod, size, times order as the Linux implementation does.
func (p *Portable) setAttr(d *os.Root, name string, fi fs.FileInfo, s vfs.SetAttr) error {
	if fi.Mode()&fs.ModeSymlink != 0 && s.Valid&^(vfs.SetUid|vfs.SetGid) != 0 {
		// os.Root follows a symlink for everything but its owner: refuse
		// rather than change the file it names.
		return syscall.EOPNOTSUPP
	}
	if s.Valid&(vfs.SetUid|vfs.SetGid) != 0 {
		uid, gid := s.Owner()
		if err := d.Lchown(name, uid, gid); err != nil {
			return err
		}
	}
	if s.Has(vfs.SetMode) {
		err := dirFd(d, func(fd int) error { return unix.Fchmodat(fd, name, s.Mode&0o7777, unix.AT_SYMLINK_NOFOLLOW) })
		if err != nil {
			return err
		}
	}
	if s.Has(vfs.SetSize) {
		f, err := p.openSame(d, name, fi, os.O_WRONLY)
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
		fi, err := d.Lstat(name)
		if err != nil {
			return err
		}
		a := infoAttr(fi)
		at, mt := pickTime(s, vfs.SetAtime, vfs.SetAtimeNow, s.Atime, a.Atime), pickTime(s, vfs.SetMtime, vfs.SetMtimeNow, s.Mtime, a.Mtime)
		ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
		return dirFd(d, func(fd int) error { return unix.UtimesNanoAt(fd, name, ts, unix.AT_SYMLINK_NOFOLLOW) })
	}
	return nil
}

// dirFd calls fn with a descriptor of the directory d, for what os.Root
// does only after following a symlink at the last name (chmod, times),
// which a name swapped for one after the look would lead anywhere in d,
// and what it has no form of between two directories (rename). With
// AT_SYMLINK_NOFOLLOW these never follow one. (Linux needs fchmodat2,
// 6.6, for chmod here; macOS has always had it.)
func dirFd(d *os.Root, fn func(fd int) error) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(int(f.Fd()))
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
	d, _, fi, err := n.fs.lstat("lookup", rel)
	if err != nil {
		return nil, err
	}
	d.Close()
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
	d, name, fi, err := n.fs.lstat("open", rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, vfs.Error("open", rel, syscall.ELOOP) // never followed
	case fi.IsDir():
		if flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC) != 0 {
			return nil, vfs.Error("open", rel, syscall.EISDIR)
		}
		return n.fs.listing(d, name, fi, rel)
	case !fi.Mode().IsRegular():
		return nil, vfs.Error("open", rel, syscall.EOPNOTSUPP)
	}
	f, err := n.fs.openSame(d, name, fi, flags)
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
	d, last, err := n.fs.at("create", rel)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	f, made, err := n.fs.create(d, last, flags, mode)
	if err != nil {
		return nil, nil, vfs.Error("create", rel, vfs.Errno(err))
	}
	if made {
		n.fs.giveToCaller(ctx, d, last)
	}
	c := n.node(rel)
	return c, &pfile{f: f, n: c, append: flags&os.O_APPEND != 0}, nil
}

// create opens the file name of d, making it if it is not there (made).
// A new file is made with O_EXCL, which follows no symlink; an existing
// one must be a regular file, opened as openSame does.
func (p *Portable) create(d *os.Root, name string, flags int, mode uint32) (f *os.File, made bool, err error) {
	for range 2 { // once more if a file came between the look and the make
		fi, err := d.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f, err := d.OpenFile(name, flags&portableFlags|os.O_CREATE|os.O_EXCL, fileMode(mode))
			if errors.Is(err, fs.ErrExist) && flags&os.O_EXCL == 0 {
				continue
			}
			return f, err == nil, err
		case err != nil:
			return nil, false, err
		case flags&os.O_EXCL != 0:
			return nil, false, syscall.EEXIST
		case fi.IsDir():
			return nil, false, syscall.EISDIR
		case !fi.Mode().IsRegular() || p.hide.hidesInfo(fi):
			return nil, false, syscall.ELOOP // never followed, nor shown
		}
		f, err := p.openSame(d, name, fi, flags)
		return f, false, err
	}
	return nil, false, syscall.EEXIST
}

// giveToCaller makes a new file the caller's, where the daemon may.
func (p *Portable) giveToCaller(ctx context.Context, d *os.Root, name string) {
	c, ok := vfs.CallerFrom(ctx)
	if !ok || os.Geteuid() != 0 || c.Uid == 0 && c.Gid == 0 {
		return
	}
	d.Lchown(name, int(c.Uid), int(c.Gid))
}

// makeEntry makes the entry name in n with mk, given the directory that holds
// it and its last name, gives it to the caller, and returns its node; op
// names the call in errors.
func (n *pnode) makeEntry(ctx context.Context, op, name string, mk func(d *os.Root, last string) error) (vfs.Node, error) {
	rel, err := n.child(op, name)
	if err != nil {
		return nil, err
	}
	d, last, err := n.fs.at(op, rel)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := mk(d, last); err != nil {
		return nil, vfs.Error(op, rel, vfs.Errno(err))
	}
	n.fs.giveToCaller(ctx, d, last)
	return n.node(rel), nil
}

func (n *pnode) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	return n.makeEntry(ctx, "mkdir", name, func(d *os.Root, last string) error { return d.Mkdir(last, fileMode(mode)) })
}

func (n *pnode) Remove(_ context.Context, name string, dir bool) error {
	rel, err := n.child("remove", name)
	if err != nil {
		return err
	}
	d, last, fi, err := n.fs.lstat("remove", rel)
	if err != nil {
		return err
	}
	defer d.Close()
	switch {
	case dir && !fi.IsDir():
		return vfs.Error("remove", rel, syscall.ENOTDIR)
	case !dir && fi.IsDir():
		return vfs.Error("remove", rel, syscall.EISDIR)
	}
	if err := n.fs.hide.guardInfo("remove", rel, fi); err != nil {
		return err
	}
	if err := d.Remove(last); err != nil {
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
	to, ok := newDir.(*pnode)
	if !ok || to.fs != n.fs {
		return vfs.Error("rename", from, syscall.EXDEV)
	}
	dest, err := to.child("rename", newName)
	if err != nil {
		return err
	}
	if from == dest {
		return nil
	}
	if err := n.fs.rename(from, dest); err != nil {
		return err
	}
	n.fs.moved(from, dest)
	return nil
}

// rename moves from to to, as rename(2) does (an empty directory at to
// is replaced), between the directories the walk opened: os.Root's
// Rename takes paths, which it would walk through symlinks. Neither may
// be a hidden directory or hold one.
func (p *Portable) rename(from, to string) error {
	src, oldName, fi, err := p.lstat("rename", from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, newName, err := p.at("rename", to)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := p.hide.guardInfo("rename", from, fi); err != nil {
		return err
	}
	if over, err := dst.Lstat(newName); err == nil {
		if err := p.hide.guardInfo("rename", to, over); err != nil {
			return err
		}
	}
	err = dirFd(src, func(sfd int) error {
		return dirFd(dst, func(dfd int) error { return unix.Renameat(sfd, oldName, dfd, newName) })
	})
	if err != nil {
		return vfs.Error("rename", from, vfs.Errno(err))
	}
	return nil
}

func (n *pnode) Readlink(context.Context) (string, error) {
	rel, err := n.where("readlink")
	if err != nil {
		return "", err
	}
	d, name, err := n.fs.at("readlink", rel)
	if err != nil {
		return "", err
	}
	defer d.Close()
	target, err := d.Readlink(name)
	if err != nil {
		return "", vfs.Error("readlink", rel, vfs.Errno(err))
	}
	return target, nil
}

func (n *pnode) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	return n.makeEntry(ctx, "symlink", name, func(d *os.Root, last string) error { return d.Symlink(target, last) })
}

// listing snapshots the directory name of d, which os.Lstat found as fi,
// at open: offsets are positions in it, so they keep their meaning
// however the directory changes meanwhile.
func (p *Portable) listing(d *os.Root, name string, fi fs.FileInfo, rel string) (vfs.Handle, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, vfs.Error("open", rel, vfs.Errno(err))
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		return nil, vfs.Error("open", rel, syscall.ENOENT) // swapped for a symlink meanwhile
	}
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
