package mounts

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// A union directory shows several directories (layers) as one, as Plan
// 9's bind -a/-b does: a name is found in the first layer that has it,
// a listing merges the layers without duplicates, and subdirectories of
// the same name are unions again. New names go to the layer marked for
// creation (bind -c); with none, nothing can be created. Changing a file
// found only in another layer copies it into the creation layer first,
// as overlayfs does, so the other layers are never written through the
// union: the agent skills case, an agent's own files over global ones.
// A copy up is made with the caller's rights and keeps the file's owner
// (rights.go). Removing and renaming work in the creation layer only;
// removing a name that a later layer also has leaves that one visible.

// Layer is one directory of a union.
type Layer struct {
	Dir    vfs.Node // nil: the creation layer has no such directory yet
	Create bool     // new names and copies go here
	// Name is the layer's path as the namespace file names it (the
	// OLD of its bind line), which its files report in LayerXattr.
	Name string
}

// LayerXattr is the extended attribute of a file found in a union that
// names the layer it came from (Layer.Name), as a tool that resolves a
// name over several directories reports where it found it.
const LayerXattr = "user.gsvfs.layer"

// unionDir is a union directory: the top of a bind, or a subdirectory
// found in several layers. parent is nil at the top.
type unionDir struct {
	layers []Layer
	parent *unionDir
	name   string
}

// NewUnion returns the union of layers, the first one first.
func NewUnion(layers []Layer) vfs.Node { return &unionDir{layers: layers} }

func (u *unionDir) first() vfs.Node {
	for _, l := range u.layers {
		if l.Dir != nil {
			return l.Dir
		}
	}
	return nil
}

// creationName is the name of the creation layer.
func (u *unionDir) creationName() string {
	for _, l := range u.layers {
		if l.Create {
			return l.Name
		}
	}
	return ""
}

// created is the creation layer's directory, or nil where it has none.
func (u *unionDir) created() (dir vfs.Node, ok bool) {
	for _, l := range u.layers {
		if l.Create {
			return l.Dir, true
		}
	}
	return nil, false
}

// target is the creation layer's directory, made (with its parents)
// where only other layers have it so far.
func (u *unionDir) target(ctx context.Context) (vfs.Node, error) {
	i := -1
	for j, l := range u.layers {
		if l.Create {
			i = j
			break
		}
	}
	if i < 0 {
		return nil, vfs.Error("create", u.name, syscall.EROFS)
	}
	if u.layers[i].Dir != nil {
		return u.layers[i].Dir, nil
	}
	if u.parent == nil {
		return nil, vfs.Error("create", u.name, syscall.ENOENT)
	}
	up, err := u.parent.target(ctx)
	if err != nil {
		return nil, err
	}
	if err := mayWriteIn(ctx, up, "mkdir", u.name); err != nil {
		return nil, err
	}
	a, err := u.Attr(ctx)
	if err != nil {
		return nil, err
	}
	n, err := up.Mkdir(ctx, u.name, a.Mode&0o7777)
	if vfs.Errno(err) == syscall.EEXIST {
		n, err = up.Lookup(ctx, u.name)
	}
	if err != nil {
		return nil, err
	}
	u.layers[i].Dir = n
	return n, nil
}

// writeTarget is target where the caller may make and remove names:
// the kernel checked the caller's rights on the union's attributes, the
// first layer's, not on the creation layer's directory written here.
func (u *unionDir) writeTarget(ctx context.Context, op, name string) (vfs.Node, error) {
	dir, err := u.target(ctx)
	if err != nil {
		return nil, err
	}
	if err := mayWriteIn(ctx, dir, op, name); err != nil {
		return nil, err
	}
	return dir, nil
}

func (u *unionDir) Attr(ctx context.Context) (vfs.Attr, error) {
	if d := u.first(); d != nil {
		return unwatched(d.Attr(ctx))
	}
	return vfs.Attr{}, vfs.Error("stat", u.name, syscall.ENOENT)
}

func (u *unionDir) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	d, err := u.target(ctx)
	if err != nil {
		return vfs.Attr{}, err
	}
	return unwatched(d.SetAttr(ctx, s))
}

// unwatched marks a union's attributes as not watched: a change in a
// layer is reported in the layer's inode numbers, not the union's, and
// what a name leads to depends on every layer.
func unwatched(a vfs.Attr, err error) (vfs.Attr, error) {
	a.Watched = false
	return a, err
}

// Lookup finds name in the first layer that has it. A directory found
// there is merged with the same name's directories in the later layers.
func (u *unionDir) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	var sub []Layer
	for _, l := range u.layers {
		var n vfs.Node
		if l.Dir != nil {
			n, _ = l.Dir.Lookup(ctx, name)
		}
		if n == nil {
			if l.Create {
				sub = append(sub, Layer{Create: true, Name: l.Name}) // made on a change
			}
			continue
		}
		a, err := n.Attr(ctx)
		if err != nil {
			return nil, err
		}
		if a.IsDir() {
			sub = append(sub, Layer{Dir: n, Create: l.Create, Name: l.Name})
			continue
		}
		if len(sub) == 0 || !hasDir(sub) {
			return &unionFile{Node: n, dir: u, name: name, layer: l.Name, copied: l.Create}, nil
		}
	}
	if !hasDir(sub) {
		return nil, vfs.Error("lookup", name, syscall.ENOENT)
	}
	return &unionDir{layers: sub, parent: u, name: name}, nil
}

func hasDir(layers []Layer) bool {
	for _, l := range layers {
		if l.Dir != nil {
			return true
		}
	}
	return false
}

// Open lists the union: every layer's names, the first of each.
func (u *unionDir) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if flags&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, vfs.Error("open", u.name, syscall.EISDIR)
	}
	var out vfs.ListHandle
	seen := map[string]bool{}
	for _, l := range u.layers {
		if l.Dir == nil {
			continue
		}
		ents, err := vfs.ReadDirAll(ctx, l.Dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !seen[e.Name] {
				seen[e.Name] = true
				e.Next = uint64(len(out) + 1)
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// Create makes name in the creation layer; an existing name of any
// layer is opened as it is found (copied up if it is to be written).
func (u *unionDir) Create(ctx context.Context, name string, flags int, mode uint32) (vfs.Node, vfs.Handle, error) {
	if n, err := u.Lookup(ctx, name); err == nil {
		if flags&os.O_EXCL != 0 {
			return nil, nil, vfs.Error("create", name, syscall.EEXIST)
		}
		h, err := n.Open(ctx, flags&^os.O_CREATE)
		return n, h, err
	}
	dir, err := u.writeTarget(ctx, "create", name)
	if err != nil {
		return nil, nil, err
	}
	n, h, err := dir.Create(ctx, name, flags, mode)
	if err != nil {
		return nil, nil, err
	}
	return &unionFile{Node: n, dir: u, name: name, layer: u.creationName(), copied: true}, h, nil
}

func (u *unionDir) Mkdir(ctx context.Context, name string, mode uint32) (vfs.Node, error) {
	if _, err := u.Lookup(ctx, name); err == nil {
		return nil, vfs.Error("mkdir", name, syscall.EEXIST)
	}
	dir, err := u.writeTarget(ctx, "mkdir", name)
	if err != nil {
		return nil, err
	}
	if _, err := dir.Mkdir(ctx, name, mode); err != nil {
		return nil, err
	}
	return u.Lookup(ctx, name)
}

// Symlink makes a symbolic link in the creation layer.
func (u *unionDir) Symlink(ctx context.Context, name, target string) (vfs.Node, error) {
	if _, err := u.Lookup(ctx, name); err == nil {
		return nil, vfs.Error("symlink", name, syscall.EEXIST)
	}
	dir, err := u.writeTarget(ctx, "symlink", name)
	if err != nil {
		return nil, err
	}
	n, err := vfs.Symlink(ctx, dir, name, target)
	if err != nil {
		return nil, err
	}
	return &unionFile{Node: n, dir: u, name: name, layer: u.creationName(), copied: true}, nil
}

// Remove removes name from the creation layer; a name only other layers
// have cannot be removed through the union (EACCES).
func (u *unionDir) Remove(ctx context.Context, name string, dir bool) error {
	own, ok := u.created()
	if !ok {
		return vfs.Error("remove", name, syscall.EROFS)
	}
	err := vfs.Error("remove", name, syscall.ENOENT)
	if own != nil {
		if err := mayWriteIn(ctx, own, "remove", name); err != nil {
			return err
		}
		err = own.Remove(ctx, name, dir)
	}
	if vfs.Errno(err) == syscall.ENOENT {
		if _, found := u.Lookup(ctx, name); found == nil {
			return vfs.Error("remove", name, syscall.EACCES)
		}
	}
	return err
}

// Rename renames within the creation layer; a name of another layer, or
// a directory outside the union, is EXDEV, as across file systems.
func (u *unionDir) Rename(ctx context.Context, oldName string, newDir vfs.Node, newName string) error {
	to, ok := newDir.(*unionDir)
	own, hasOwn := u.created()
	if !ok || !hasOwn {
		return vfs.Error("rename", oldName, syscall.EXDEV)
	}
	if own == nil {
		return vfs.Error("rename", oldName, syscall.EXDEV) // only other layers have it
	}
	if err := mayWriteIn(ctx, own, "rename", oldName); err != nil {
		return err
	}
	dst, err := to.target(ctx)
	if err != nil {
		return vfs.Error("rename", oldName, syscall.EXDEV)
	}
	if err := mayWriteIn(ctx, dst, "rename", newName); err != nil {
		return err
	}
	err = own.Rename(ctx, oldName, dst, newName)
	if vfs.Errno(err) == syscall.ENOENT {
		if _, found := u.Lookup(ctx, oldName); found == nil {
			return vfs.Error("rename", oldName, syscall.EXDEV)
		}
	}
	return err
}

// unionFile is a file found in a union: changes to it land in the
// creation layer, copied there first if it was found in another.
type unionFile struct {
	vfs.Node
	dir    *unionDir
	name   string
	layer  string // the Name of the layer it is in
	copied bool   // the file is the creation layer's
}

// Readlink reads a symlink found in a layer.
func (f *unionFile) Readlink(ctx context.Context) (string, error) {
	r, ok := f.Node.(vfs.Readlinker)
	if !ok {
		return "", vfs.Error("readlink", f.name, syscall.EINVAL)
	}
	return r.Readlink(ctx)
}

func (f *unionFile) Open(ctx context.Context, flags int) (vfs.Handle, error) {
	if flags&(os.O_WRONLY|os.O_RDWR|os.O_TRUNC|os.O_APPEND) != 0 {
		if err := f.copyUp(ctx); err != nil {
			return nil, err
		}
	}
	return f.Node.Open(ctx, flags)
}

func (f *unionFile) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if err := f.copyUp(ctx); err != nil {
		return vfs.Attr{}, err
	}
	return unwatched(f.Node.SetAttr(ctx, s))
}

func (f *unionFile) Attr(ctx context.Context) (vfs.Attr, error) {
	return unwatched(f.Node.Attr(ctx))
}

// copyUp copies the file into the creation layer, once, with the
// caller's rights, as overlayfs does: the caller must be able to read the
// file and to make names in the layer's directory (EACCES, and nothing
// made, otherwise). The copy keeps the file's owner, mode and times; it
// is made as its owner's, so the caller never holds a copy it could not
// have read.
func (f *unionFile) copyUp(ctx context.Context) error {
	if f.copied {
		return nil
	}
	a, err := f.Node.Attr(ctx)
	if err != nil {
		return err
	}
	if a.Type() != syscall.S_IFREG {
		return vfs.Error("copy up", f.name, syscall.EOPNOTSUPP)
	}
	if !permitted(ctx, a, mayRead) {
		return vfs.Error("copy up", f.name, syscall.EACCES)
	}
	dir, err := f.dir.writeTarget(ctx, "copy up", f.name)
	if err != nil {
		return err
	}
	n, err := copyFile(asOwner(ctx, a), f.Node, dir, f.name, a)
	if err != nil {
		return err
	}
	f.Node, f.copied, f.layer = n, true, f.dir.creationName()
	return nil
}

// copyFile copies src, of attributes a, to name in dir with its mode and
// times, and removes what it made if it fails.
func copyFile(ctx context.Context, src vfs.Node, dir vfs.Node, name string, a vfs.Attr) (vfs.Node, error) {
	in, err := src.Open(ctx, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	n, out, err := dir.Create(ctx, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, a.Mode&0o7777)
	if err != nil {
		return nil, err
	}
	err = copyHandle(ctx, out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Last, as the writes moved the times; the mode as it was, the
		// umask and a chown's clearing of set-ID bits undone.
		_, err = n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode | vfs.SetAtime | vfs.SetMtime,
			Mode: a.Mode & 0o7777, Atime: a.Atime, Mtime: a.Mtime})
	}
	if err != nil {
		dir.Remove(ctx, name, false)
		return nil, err
	}
	return n, nil
}

func copyHandle(ctx context.Context, dst, src vfs.Handle) error {
	buf := make([]byte, 256<<10)
	for off := int64(0); ; {
		n, err := src.ReadAt(ctx, buf, off)
		if n > 0 {
			if _, werr := dst.WriteAt(ctx, buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if errors.Is(err, io.EOF) || n == 0 && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// GetXattr answers LayerXattr with the file's layer, and reads any other
// attribute from the layer's file.
func (f *unionFile) GetXattr(ctx context.Context, name string) ([]byte, error) {
	if name == LayerXattr {
		return []byte(f.layer), nil
	}
	if x, ok := f.Node.(vfs.Xattrer); ok {
		return x.GetXattr(ctx, name)
	}
	return nil, vfs.Error("getxattr", f.name, syscall.ENODATA)
}

// ListXattr lists the layer's file's attributes and LayerXattr.
func (f *unionFile) ListXattr(ctx context.Context) ([]string, error) {
	var names []string
	if x, ok := f.Node.(vfs.Xattrer); ok {
		got, err := x.ListXattr(ctx)
		if err != nil {
			return nil, err
		}
		names = append(names, got...)
	}
	return append(names, LayerXattr), nil
}

// SetXattr refuses LayerXattr, which the union keeps (EPERM). Other
// attributes are not changed through a union (ENOTSUP): a copy up does
// not carry them.
func (f *unionFile) SetXattr(_ context.Context, name string, _ []byte, _ int) error {
	return xattrRefused("setxattr", f.name, name)
}

// RemoveXattr refuses as SetXattr does.
func (f *unionFile) RemoveXattr(_ context.Context, name string) error {
	return xattrRefused("removexattr", f.name, name)
}

func xattrRefused(op, file, name string) error {
	if name == LayerXattr {
		return vfs.Error(op, file, syscall.EPERM)
	}
	return vfs.Error(op, file, syscall.ENOTSUP)
}
