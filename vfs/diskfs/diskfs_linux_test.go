package diskfs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

func TestConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		return newFS(t, t.TempDir())
	})
}

// TestConformanceOneDirDescriptor runs the conformance suite with room for
// one idle directory descriptor, so nearly every call finds its
// directory's closed and opens it again by name.
func TestConformanceOneDirDescriptor(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		return newFSWith(t, t.TempDir(), 1)
	})
}

// ---- helpers ----

func newFS(t *testing.T, dir string) vfs.Node {
	t.Helper()
	return newFSWith(t, dir, 0)
}

// newFSWith serves dir keeping at most dirFds idle directory descriptors
// (the default if 0).
func newFSWith(t *testing.T, dir string, dirFds int) vfs.Node {
	t.Helper()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatalf("New(%s): %v", dir, err)
	}
	if dirFds > 0 {
		diskfs.SetDirDescriptors(f, dirFds)
	}
	return f.Root()
}

// sandbox is a state directory with a directory beside it that nothing
// done through the tree may touch.
type sandbox struct {
	base, state, outside string
	root                 vfs.Node
	before               map[string]string // snapshot of outside
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	base := t.TempDir()
	s := &sandbox{
		base:    base,
		state:   filepath.Join(base, "state"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{s.state, s.outside, filepath.Join(s.outside, "sub")} {
		must(t, os.Mkdir(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(s.outside, "secret"), []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(s.outside, "sub", "f"), []byte("outside sub/f"), 0o644))
	s.before = snapshot(t, s.outside)
	s.root = newFS(t, s.state)
	return s
}

// checkOutside fails unless the outside directory is exactly as it was.
func (s *sandbox) checkOutside(t *testing.T, after string) {
	t.Helper()
	now := snapshot(t, s.outside)
	for p, want := range s.before {
		if got, ok := now[p]; !ok {
			t.Errorf("after %s: outside/%s is gone", after, p)
		} else if got != want {
			t.Errorf("after %s: outside/%s changed: got %s, want %s", after, p, got, want)
		}
	}
	for p := range now {
		if _, ok := s.before[p]; !ok {
			t.Errorf("after %s: outside/%s appeared", after, p)
		}
	}
}

// snapshot describes every entry under dir: type, mode, owner, size,
// mtime, ctime (which any change to the inode moves), content or target,
// and xattrs.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		desc := fmt.Sprintf("mode=%#o uid=%d gid=%d nlink=%d size=%d mtime=%d.%09d ctime=%d.%09d",
			st.Mode, st.Uid, st.Gid, st.Nlink, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" content=%q", b)
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" target=%q", target)
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil {
			desc += fmt.Sprintf(" xattrs=%q", buf[:n])
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", dir, err)
	}
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: got error %v, want nil", what, err)
	}
}

func wantErrno(t *testing.T, what string, err error, want ...syscall.Errno) {
	t.Helper()
	if got := vfs.Errno(err); !slices.Contains(want, got) {
		t.Errorf("%s: got error %v, want one of %v", what, err, want)
	}
}

func lookup(t *testing.T, dir vfs.Node, names ...string) vfs.Node {
	t.Helper()
	n := dir
	for _, name := range names {
		var err error
		n, err = n.Lookup(t.Context(), name)
		noErr(t, fmt.Sprintf("Lookup(%q)", name), err)
	}
	return n
}

func content(t *testing.T, n vfs.Node) string {
	t.Helper()
	h, err := n.Open(t.Context(), os.O_RDONLY)
	noErr(t, "Open", err)
	defer h.Close()
	var out []byte
	buf := make([]byte, 4096)
	for {
		k, err := h.ReadAt(t.Context(), buf, int64(len(out)))
		out = append(out, buf[:k]...)
		if errors.Is(err, io.EOF) {
			return string(out)
		}
		noErr(t, "ReadAt", err)
	}
}

func create(t *testing.T, dir vfs.Node, name, data string) vfs.Node {
	t.Helper()
	n, h, err := dir.Create(t.Context(), name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	noErr(t, fmt.Sprintf("Create(%q)", name), err)
	defer h.Close()
	if _, err := h.WriteAt(t.Context(), []byte(data), 0); err != nil {
		t.Fatalf("WriteAt: %v", err)
	}
	return n
}

func names(t *testing.T, dir vfs.Node) []string {
	t.Helper()
	h, err := dir.Open(t.Context(), os.O_RDONLY)
	noErr(t, "Open(dir)", err)
	defer h.Close()
	var out []string
	for off := uint64(0); ; {
		es, err := h.(vfs.DirReader).ReadDir(t.Context(), off)
		noErr(t, "ReadDir", err)
		if len(es) == 0 {
			slices.Sort(out)
			return out
		}
		for _, e := range es {
			out = append(out, e.Name)
		}
		off = es[len(es)-1].Next
	}
}

func hostNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func readlink(t *testing.T, n vfs.Node) string {
	t.Helper()
	rl, ok := n.(vfs.Readlinker)
	if !ok {
		t.Fatalf("node %T does not implement vfs.Readlinker", n)
	}
	target, err := rl.Readlink(t.Context())
	noErr(t, "Readlink", err)
	return target
}

func hostStat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t)
}

// ---- escapes ----

// createOp is an op that creates name in dir with flags (and mode 0644),
// closing the handle of a create that succeeds.
func createOp(ctx context.Context, dir vfs.Node, name string, flags int) func() error {
	return func() error {
		_, h, err := dir.Create(ctx, name, flags, 0o644)
		if err == nil {
			h.Close()
		}
		return err
	}
}

// nodeOps are the operations tried on a node that must not reach outside
// the state directory, each with the errno it must fail with (0: any
// outcome is fine as long as outside stays unchanged).
func nodeOps(t *testing.T, n, parent, sibling vfs.Node) []struct {
	name string
	do   func() error
	want syscall.Errno
} {
	ctx := t.Context()
	openOp := func(flags int) func() error {
		return func() error {
			h, err := n.Open(ctx, flags)
			if err == nil {
				h.Close()
			}
			return err
		}
	}
	ops := []struct {
		name string
		do   func() error
		want syscall.Errno
	}{
		{"Open(O_RDONLY)", openOp(os.O_RDONLY), syscall.ELOOP},
		{"Open(O_RDWR)", openOp(os.O_RDWR), syscall.ELOOP},
		{"Open(O_WRONLY|O_TRUNC)", openOp(os.O_WRONLY | os.O_TRUNC), syscall.ELOOP},
		{"Open(O_WRONLY|O_APPEND)", openOp(os.O_WRONLY | os.O_APPEND), syscall.ELOOP},
		{"Lookup(secret)", func() error { _, err := n.Lookup(ctx, "secret"); return err }, syscall.ENOTDIR},
		{"Lookup(sub)", func() error { _, err := n.Lookup(ctx, "sub"); return err }, syscall.ENOTDIR},
		{"Create(x)", createOp(ctx, n, "x", os.O_RDWR|os.O_CREATE), syscall.ENOTDIR},
		{"Create(secret, O_TRUNC)", createOp(ctx, n, "secret", os.O_RDWR|os.O_CREATE|os.O_TRUNC), syscall.ENOTDIR},
		{"Mkdir(x)", func() error { _, err := n.Mkdir(ctx, "x", 0o755); return err }, syscall.ENOTDIR},
		{"Remove(secret)", func() error { return n.Remove(ctx, "secret", false) }, syscall.ENOTDIR},
		{"Remove(sub, dir)", func() error { return n.Remove(ctx, "sub", true) }, syscall.ENOTDIR},
		{"Rename(secret, parent/stolen)", func() error { return n.Rename(ctx, "secret", parent, "stolen") }, syscall.ENOTDIR},
		{"parent.Rename(sibling, node/planted)", func() error { return parent.Rename(ctx, "sibling", n, "planted") }, syscall.ENOTDIR},
		{"Symlink(x)", func() error { _, err := n.(vfs.Symlinker).Symlink(ctx, "x", "y"); return err }, syscall.ENOTDIR},
		{"Link(sibling, x)", func() error { _, err := n.(vfs.Linker).Link(ctx, sibling, "x"); return err }, syscall.ENOTDIR},
		{"Mknod(x)", func() error {
			_, err := n.(vfs.Mknoder).Mknod(ctx, "x", syscall.S_IFIFO|0o644, 0)
			return err
		}, syscall.ENOTDIR},
		{"SetAttr(size 0)", func() error { _, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize}); return err }, syscall.ELOOP},
		{"SetAttr(mode 0700)", func() error {
			_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o700})
			return err
		}, 0},
		{"SetAttr(mtime)", func() error {
			_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtime | vfs.SetAtime,
				Mtime: time.Unix(1e9, 0), Atime: time.Unix(1e9, 0)})
			return err
		}, 0},
		{"SetAttr(now)", func() error {
			_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtimeNow | vfs.SetAtimeNow})
			return err
		}, 0},
		{"SetXattr", func() error { return n.(vfs.Xattrer).SetXattr(ctx, "user.escape", []byte("x"), 0) }, 0},
		{"RemoveXattr", func() error { return n.(vfs.Xattrer).RemoveXattr(ctx, "user.keep") }, 0},
	}
	if os.Geteuid() == 0 {
		ops = append(ops, struct {
			name string
			do   func() error
			want syscall.Errno
		}{"SetAttr(uid, gid)", func() error {
			_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetUid | vfs.SetGid, Uid: 1234, Gid: 5678})
			return err
		}, 0})
	}
	return ops
}

// TestPlantedSymlink plants symlinks to outside the state directory, as
// another program could, and drives every operation at them.
func TestPlantedSymlink(t *testing.T) {
	targets := []struct {
		name   string
		target func(s *sandbox) string
	}{
		{"AbsDir", func(s *sandbox) string { return s.outside }},
		{"RelDir", func(*sandbox) string { return "../../outside" }},
		{"AbsFile", func(s *sandbox) string { return filepath.Join(s.outside, "secret") }},
		{"RelFile", func(*sandbox) string { return "../../outside/secret" }},
		{"AbsDangling", func(s *sandbox) string { return filepath.Join(s.outside, "new") }},
		{"RelDangling", func(*sandbox) string { return "../../outside/new" }},
		{"RelDanglingDir", func(*sandbox) string { return "../../outside/newdir/" }},
	}
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s := newSandbox(t)
			xerr := unix.Lsetxattr(filepath.Join(s.outside, "secret"), "user.keep", []byte("k"), 0)
			s.before = snapshot(t, s.outside)
			target := tc.target(s)
			must(t, os.Mkdir(filepath.Join(s.state, "a"), 0o755))
			must(t, os.WriteFile(filepath.Join(s.state, "a", "sibling"), []byte("sib"), 0o644))
			must(t, os.Symlink(target, filepath.Join(s.state, "a", "link")))

			a := lookup(t, s.root, "a")
			sibling := lookup(t, a, "sibling")
			n := lookup(t, a, "link")
			if at, err := n.Attr(ctx); err != nil || at.Type() != syscall.S_IFLNK {
				t.Fatalf("Attr of the planted link: got mode %#o, %v; want a symlink", at.Mode, err)
			}
			if got := readlink(t, n); got != target {
				t.Errorf("Readlink: got %q, want %q", got, target)
			}
			for _, op := range nodeOps(t, n, a, sibling) {
				err := op.do()
				if op.want != 0 {
					wantErrno(t, op.name, err, op.want)
				}
				s.checkOutside(t, op.name)
			}
			if xerr == nil {
				v := make([]byte, 8)
				k, err := unix.Lgetxattr(filepath.Join(s.outside, "secret"), "user.keep", v)
				if err != nil || string(v[:k]) != "k" {
					t.Errorf("outside xattr user.keep: got %q, %v; want %q", v[:max(k, 0)], err, "k")
				}
			}

			// Through the parent, by the link's name.
			parentOps := []struct {
				name string
				do   func() error
				want syscall.Errno
			}{
				{"Create(link)", createOp(ctx, a, "link", os.O_RDWR|os.O_CREATE), syscall.ELOOP},
				{"Create(link, O_TRUNC)", createOp(ctx, a, "link", os.O_WRONLY|os.O_CREATE|os.O_TRUNC), syscall.ELOOP},
				{"Create(link, O_EXCL)", createOp(ctx, a, "link", os.O_RDWR|os.O_CREATE|os.O_EXCL), syscall.EEXIST},
				{"Mkdir(link)", func() error { _, err := a.Mkdir(ctx, "link", 0o755); return err }, syscall.EEXIST},
				{"Symlink(link)", func() error { _, err := a.(vfs.Symlinker).Symlink(ctx, "link", "x"); return err }, syscall.EEXIST},
				{"Mknod(link)", func() error {
					_, err := a.(vfs.Mknoder).Mknod(ctx, "link", syscall.S_IFIFO|0o644, 0)
					return err
				}, syscall.EEXIST},
				{"Link(sibling, link)", func() error { _, err := a.(vfs.Linker).Link(ctx, sibling, "link"); return err }, syscall.EEXIST},
				{"Remove(link, dir)", func() error { return a.Remove(ctx, "link", true) }, syscall.ENOTDIR},
				{"Rename(link, a/link2)", func() error { return a.Rename(ctx, "link", a, "link2") }, 0},
				{"Rename(link2, root/link)", func() error { return a.Rename(ctx, "link2", s.root, "link") }, 0},
				{"Rename(sibling, root/link) over the link", func() error { return a.Rename(ctx, "sibling", s.root, "link") }, 0},
			}
			for _, op := range parentOps {
				wantErrno(t, op.name, op.do(), op.want)
				s.checkOutside(t, op.name)
			}
			if got := content(t, lookup(t, s.root, "link")); got != "sib" {
				t.Errorf("root/link after renaming sibling over it: got %q, want %q", got, "sib")
			}
			// A hard link to the symlink is a second symlink, just as inert.
			must(t, os.Symlink(target, filepath.Join(s.state, "a", "link3")))
			l3 := lookup(t, a, "link3")
			hl, err := a.(vfs.Linker).Link(ctx, l3, "hard")
			noErr(t, "Link(link3, hard)", err)
			if got := readlink(t, hl); got != target {
				t.Errorf("Readlink of a hard link to the symlink: got %q, want %q", got, target)
			}
			h, err := lookup(t, a, "hard").Open(ctx, os.O_RDONLY)
			wantErrno(t, "Open(hard link to the symlink)", err, syscall.ELOOP)
			if err == nil {
				h.Close()
			}
			noErr(t, "Remove(link3)", a.Remove(ctx, "link3", false))
			noErr(t, "Remove(hard)", a.Remove(ctx, "hard", false))
			s.checkOutside(t, "removing the links")
			if got, want := hostNames(t, filepath.Join(s.state, "a")), []string(nil); !slices.Equal(got, want) {
				t.Errorf("state/a on the host: got %q, want %q", got, want)
			}
		})
	}
}

// TestSwappedDir swaps a directory already looked up for a symlink to
// outside: the directory's node keeps referring to the original, and the
// name through the parent is only a symlink.
func TestSwappedDir(t *testing.T) {
	for _, target := range []string{"", "../outside"} {
		name := "Abs"
		if target != "" {
			name = "Rel"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newSandbox(t)
			if target == "" {
				target = s.outside
			}
			d := filepath.Join(s.state, "d")
			must(t, os.Mkdir(d, 0o755))
			must(t, os.WriteFile(filepath.Join(d, "inner"), []byte("inner"), 0o644))
			must(t, os.Mkdir(filepath.Join(d, "kid"), 0o755))
			dn := lookup(t, s.root, "d")
			inner := lookup(t, dn, "inner")
			kid := lookup(t, dn, "kid")
			ino := hostStat(t, d).Ino

			must(t, os.Rename(d, filepath.Join(s.state, "d.real")))
			must(t, os.Symlink(target, d))
			real := filepath.Join(s.state, "d.real")

			// The directory node is still the directory.
			a, err := dn.Attr(ctx)
			noErr(t, "Attr of the swapped directory's node", err)
			if a.Ino != ino || !a.IsDir() {
				t.Errorf("Attr: got Ino %d, mode %#o; want %d, a directory", a.Ino, a.Mode, ino)
			}
			if got := content(t, inner); got != "inner" {
				t.Errorf("file node in the swapped directory: got %q, want %q", got, "inner")
			}
			if got := content(t, lookup(t, dn, "inner")); got != "inner" {
				t.Errorf("Lookup(inner) through the swapped directory's node: got %q, want %q", got, "inner")
			}
			_, err = dn.Lookup(ctx, "secret")
			wantErrno(t, "Lookup(secret) through the swapped directory's node", err, syscall.ENOENT)
			if got, want := names(t, dn), []string{"inner", "kid"}; !slices.Equal(got, want) {
				t.Errorf("listing of the swapped directory's node: got %q, want %q", got, want)
			}
			create(t, dn, "new", "new")
			_, err = dn.Mkdir(ctx, "newdir", 0o755)
			noErr(t, "Mkdir", err)
			_, err = dn.(vfs.Symlinker).Symlink(ctx, "newlink", "x")
			noErr(t, "Symlink", err)
			create(t, kid, "deep", "deep")
			noErr(t, "Remove(inner)", dn.Remove(ctx, "inner", false))
			noErr(t, "Rename(new, kid/new)", dn.Rename(ctx, "new", kid, "new"))
			_, err = dn.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode | vfs.SetMtime, Mode: 0o700, Mtime: time.Unix(1e9, 0)})
			noErr(t, "SetAttr", err)
			if x, ok := dn.(vfs.Xattrer); ok {
				x.SetXattr(ctx, "user.swapped", []byte("x"), 0)
			}
			s.checkOutside(t, "operations through the swapped directory's node")
			if got, want := hostNames(t, real), []string{"kid", "newdir", "newlink"}; !slices.Equal(got, want) {
				t.Errorf("d.real on the host: got %q, want %q", got, want)
			}
			if got, want := hostNames(t, filepath.Join(real, "kid")), []string{"deep", "new"}; !slices.Equal(got, want) {
				t.Errorf("d.real/kid on the host: got %q, want %q", got, want)
			}
			if st := hostStat(t, real); st.Mode&0o7777 != 0o700 || st.Mtim.Sec != 1e9 {
				t.Errorf("d.real on the host: got mode %#o, mtime %d; want 0700, %d", st.Mode&0o7777, st.Mtim.Sec, int(1e9))
			}

			// The name through the parent is now only a symlink.
			n := lookup(t, s.root, "d")
			if got := readlink(t, n); got != target {
				t.Errorf("Readlink(d): got %q, want %q", got, target)
			}
			sibling := create(t, s.root, "sibling", "sib")
			for _, op := range nodeOps(t, n, s.root, sibling) {
				err := op.do()
				if op.want != 0 {
					wantErrno(t, op.name, err, op.want)
				}
				s.checkOutside(t, op.name)
			}
			wantErrno(t, "rmdir(d)", s.root.Remove(ctx, "d", true), syscall.ENOTDIR)
			_, err = s.root.Mkdir(ctx, "d", 0o755)
			wantErrno(t, "Mkdir(d)", err, syscall.EEXIST)
			_, h, err := s.root.Create(ctx, "d", os.O_RDWR|os.O_CREATE, 0o644)
			wantErrno(t, "Create(d)", err, syscall.ELOOP)
			if err == nil {
				h.Close()
			}
			noErr(t, "Remove(d)", s.root.Remove(ctx, "d", false))
			s.checkOutside(t, "removing the symlink d")
			if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("state/d on the host after Remove: got %v, want it gone", err)
			}
		})
	}
}

// TestSwappedFile swaps a file already looked up for a symlink to an
// outside file: its node reaches the symlink, never the outside file.
func TestSwappedFile(t *testing.T) {
	s := newSandbox(t)
	f := filepath.Join(s.state, "f")
	must(t, os.WriteFile(f, []byte("mine"), 0o644))
	n := lookup(t, s.root, "f")
	sibling := create(t, s.root, "sibling", "sib")
	must(t, os.Rename(f, f+".real"))
	must(t, os.Symlink(filepath.Join(s.outside, "secret"), f))

	for _, op := range nodeOps(t, n, s.root, sibling) {
		err := op.do()
		if op.want != 0 {
			// The node's name now reaches another file (the symlink):
			// refused as that file's kind, or as stale.
			wantErrno(t, op.name, err, op.want, syscall.ESTALE)
		}
		s.checkOutside(t, op.name)
	}
	if got, err := os.ReadFile(f + ".real"); err != nil || string(got) != "mine" {
		t.Errorf("f.real: got %q, %v; want %q", got, err, "mine")
	}
}

// TestSwappedRoot swaps the state directory itself for a symlink to
// outside: the tree keeps serving the original directory.
func TestSwappedRoot(t *testing.T) {
	ctx := t.Context()
	s := newSandbox(t)
	must(t, os.WriteFile(filepath.Join(s.state, "mine"), []byte("mine"), 0o644))
	must(t, os.Rename(s.state, s.state+".real"))
	must(t, os.Symlink(s.outside, s.state))

	if got, want := names(t, s.root), []string{"mine"}; !slices.Equal(got, want) {
		t.Errorf("root listing: got %q, want %q", got, want)
	}
	_, err := s.root.Lookup(ctx, "secret")
	wantErrno(t, "Lookup(secret)", err, syscall.ENOENT)
	create(t, s.root, "new", "new")
	_, err = s.root.Mkdir(ctx, "sub", 0o755) // outside has a sub, the state dir none
	noErr(t, "Mkdir(sub)", err)
	s.checkOutside(t, "operations on the swapped root")
	if got, want := hostNames(t, s.state+".real"), []string{"mine", "new", "sub"}; !slices.Equal(got, want) {
		t.Errorf("state.real on the host: got %q, want %q", got, want)
	}
}

// ---- host interplay ----

func TestHostChangesShow(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, "host.txt"), []byte("from the host"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "hd", "deeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "hd", "deeper", "x"), []byte("x"), 0o600))

	if got := content(t, lookup(t, root, "host.txt")); got != "from the host" {
		t.Errorf("host.txt: got %q, want %q", got, "from the host")
	}
	if got := content(t, lookup(t, root, "hd", "deeper", "x")); got != "x" {
		t.Errorf("hd/deeper/x: got %q, want %q", got, "x")
	}
	if got, want := names(t, root), []string{"hd", "host.txt"}; !slices.Equal(got, want) {
		t.Errorf("root listing: got %q, want %q", got, want)
	}

	n := lookup(t, root, "host.txt")
	must(t, os.WriteFile(filepath.Join(dir, "host.txt"), []byte("changed on the host"), 0o644))
	a, err := n.Attr(ctx)
	noErr(t, "Attr", err)
	if a.Size != int64(len("changed on the host")) {
		t.Errorf("Size after a host write: got %d, want %d", a.Size, len("changed on the host"))
	}
	if got := content(t, n); got != "changed on the host" {
		t.Errorf("content after a host write: got %q, want %q", got, "changed on the host")
	}

	create(t, root, "mine", "written through the tree")
	if got, err := os.ReadFile(filepath.Join(dir, "mine")); err != nil || string(got) != "written through the tree" {
		t.Errorf("mine on the host: got %q, %v; want %q", got, err, "written through the tree")
	}

	must(t, os.Remove(filepath.Join(dir, "host.txt")))
	_, err = root.Lookup(ctx, "host.txt")
	wantErrno(t, "Lookup after a host remove", err, syscall.ENOENT)
	if got, want := names(t, root), []string{"hd", "mine"}; !slices.Equal(got, want) {
		t.Errorf("root listing: got %q, want %q", got, want)
	}
}

// TestOneNodePerFile checks the node table: walks and hard links reach
// one node per host file.
func TestOneNodePerFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	a := create(t, root, "a", "A")
	if b := lookup(t, root, "a"); b != a {
		t.Errorf("Lookup(a): got node %p, want the created node %p", b, a)
	}
	d, err := root.Mkdir(ctx, "d", 0o755)
	noErr(t, "Mkdir", err)
	if got := lookup(t, root, "d"); got != d {
		t.Errorf("Lookup(d): got node %p, want the made node %p", got, d)
	}
	must(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "d", "b")))
	if got := lookup(t, d, "b"); got != a {
		t.Errorf("Lookup(d/b), a host hard link to a: got node %p, want a's node %p", got, a)
	}
	// Removing the name the node was first reached by leaves it working
	// through the other.
	noErr(t, "Remove(a)", root.Remove(ctx, "a", false))
	if got := content(t, a); got != "A" {
		t.Errorf("a's node after Remove(a): got %q, want %q", got, "A")
	}
}

// TestStaleNameNotFollowed checks that a node never reaches another file
// through a name it knew, once that name was given to another file behind
// the tree's back.
func TestStaleNameNotFollowed(t *testing.T) {
	dir := t.TempDir()
	root := newFS(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("the first file"), 0o644))
	n := lookup(t, root, "a")
	ino := hostStat(t, filepath.Join(dir, "a")).Ino
	// Another program makes a second name for the file, then saves a new
	// file over the first name (as an editor's atomic save does).
	must(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "c")))
	must(t, os.WriteFile(filepath.Join(dir, "b"), []byte("the second file"), 0o644))
	must(t, os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "a")))

	c := lookup(t, root, "c")
	a, err := c.Attr(t.Context())
	noErr(t, "Attr(c)", err)
	if a.Ino != ino {
		t.Errorf("Attr(c): got Ino %d, want %d", a.Ino, ino)
	}
	if got := content(t, c); got != "the first file" {
		t.Errorf("c: got %q, want %q", got, "the first file")
	}
	if got := content(t, lookup(t, root, "a")); got != "the second file" {
		t.Errorf("a: got %q, want %q", got, "the second file")
	}
	runtime.KeepAlive(n) // a's node stays in the table throughout
}

// TestCrossTree checks that a node of one tree cannot be linked or moved
// into another, even when both trees are on one host filesystem.
func TestCrossTree(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	must(t, os.Mkdir(filepath.Join(base, "a"), 0o755))
	must(t, os.Mkdir(filepath.Join(base, "b"), 0o755))
	a, b := newFS(t, filepath.Join(base, "a")), newFS(t, filepath.Join(base, "b"))
	f := create(t, a, "f", "in a")
	_, err := b.(vfs.Linker).Link(ctx, f, "stolen")
	wantErrno(t, "Link of another tree's node", err, syscall.EXDEV)
	wantErrno(t, "Rename into another tree", a.Rename(ctx, "f", b, "stolen"), syscall.EXDEV)
	if got := hostNames(t, filepath.Join(base, "b")); len(got) != 0 {
		t.Errorf("tree b on the host: got %q, want it empty", got)
	}
	if got := content(t, f); got != "in a" {
		t.Errorf("f: got %q, want %q", got, "in a")
	}
}

func TestUnlinkedNodeKeepsWorking(t *testing.T) {
	ctx := t.Context()
	root := newFS(t, t.TempDir())
	n := create(t, root, "f", "data")
	h, err := n.Open(ctx, os.O_RDWR)
	noErr(t, "Open", err)
	defer h.Close()
	noErr(t, "Remove", root.Remove(ctx, "f", false))
	a, err := n.Attr(ctx)
	noErr(t, "Attr of the unlinked node", err)
	if a.Nlink != 0 || a.Size != 4 {
		t.Errorf("Attr of the unlinked node: got Nlink %d, Size %d; want 0, 4", a.Nlink, a.Size)
	}
	a, err = n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize, Size: 2})
	noErr(t, "SetAttr of the unlinked node", err)
	if a.Size != 2 {
		t.Errorf("Size: got %d, want 2", a.Size)
	}
	_, err = root.(vfs.Linker).Link(ctx, n, "back")
	wantErrno(t, "Link of an unlinked file", err, syscall.ENOENT)
}

// O_TMPFILE files made one after another, each closed and forgotten by
// the edge before the next while its node lives on (as a FUSE inode may):
// the disk gives the next the inode number, and within a clock tick the
// birth time, of the one before, and each must still be a file of its
// own. The steps are FUSE's (stat, close, forget): a write or link in
// between makes ext4 stamp the next birth finer, and hides the case.
func TestCreateTempBackToBack(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	var kept []vfs.Node // the earlier nodes, still referenced
	for i := range 20 {
		n, h, err := root.(vfs.TempCreator).CreateTemp(ctx, os.O_RDWR, 0o600)
		noErr(t, fmt.Sprintf("CreateTemp %d", i), err)
		_, err = n.Attr(ctx)
		noErr(t, fmt.Sprintf("Attr of tmpfile %d", i), err)
		h.Close()
		n.(vfs.Forgetter).Forget()
		kept = append(kept, n)
	}
	runtime.KeepAlive(kept)
	n, h, err := root.(vfs.TempCreator).CreateTemp(ctx, os.O_RDWR, 0o600)
	noErr(t, "CreateTemp", err)
	defer h.Close()
	h.WriteAt(ctx, []byte("last"), 0)
	_, err = root.(vfs.Linker).Link(ctx, n, "linked")
	noErr(t, "Link of the last tmpfile", err)
	if b, err := os.ReadFile(filepath.Join(dir, "linked")); err != nil || string(b) != "last" {
		t.Errorf("the linked tmpfile on the disk: %q, %v", b, err)
	}
}

// ---- abilities ----

func TestXattrHost(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	f := create(t, root, "f", "")
	x := f.(vfs.Xattrer)
	err := x.SetXattr(ctx, "user.gsvfs", []byte("through the tree"), 0)
	if errors.Is(err, syscall.ENOTSUP) {
		t.Skipf("the temporary directory's filesystem has no user xattrs: %v", err)
	}
	noErr(t, "SetXattr", err)
	buf := make([]byte, 100)
	k, err := unix.Getxattr(filepath.Join(dir, "f"), "user.gsvfs", buf)
	if err != nil || string(buf[:k]) != "through the tree" {
		t.Errorf("host getxattr: got %q, %v; want %q", buf[:max(k, 0)], err, "through the tree")
	}
	must(t, unix.Setxattr(filepath.Join(dir, "f"), "user.host", []byte("from the host"), 0))
	v, err := x.GetXattr(ctx, "user.host")
	noErr(t, "GetXattr", err)
	if string(v) != "from the host" {
		t.Errorf("GetXattr(user.host): got %q, want %q", v, "from the host")
	}
	list, err := x.ListXattr(ctx)
	noErr(t, "ListXattr", err)
	slices.Sort(list)
	if want := []string{"user.gsvfs", "user.host"}; !slices.Equal(list, want) {
		t.Errorf("ListXattr: got %q, want %q", list, want)
	}
	// Large values exceed any first guess at a buffer size.
	big := strings.Repeat("v", 3000)
	noErr(t, "SetXattr(big)", x.SetXattr(ctx, "user.big", []byte(big), 0))
	v, err = x.GetXattr(ctx, "user.big")
	if err != nil || string(v) != big {
		t.Errorf("GetXattr(user.big): got %d bytes, %v; want %d", len(v), err, len(big))
	}
}

func TestStatFS(t *testing.T) {
	st, err := newFS(t, t.TempDir()).(vfs.StatFSer).StatFS(t.Context())
	noErr(t, "StatFS", err)
	if st.Blocks == 0 || st.Bsize == 0 || st.NameLen == 0 {
		t.Errorf("StatFS: got Blocks %d, Bsize %d, NameLen %d; want all nonzero", st.Blocks, st.Bsize, st.NameLen)
	}
}

// TestOwnership checks that entries made for a caller belong to the
// caller, and to a set-group-ID directory's group inside one.
func TestOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("NOT TESTED: ownership of new files needs root (chown); run the tests as root to cover it")
	}
	const uid, gid, dirGid = 1234, 5678, 4321
	caller := vfs.Caller{Uid: uid, Gid: gid}
	type maker struct {
		name string
		make func(t *testing.T, dir vfs.Node, ctx context.Context, name string)
	}
	makers := []maker{
		{"Create", func(t *testing.T, dir vfs.Node, ctx context.Context, name string) {
			_, h, err := dir.Create(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			noErr(t, "Create", err)
			h.Close()
		}},
		{"Mkdir", func(t *testing.T, dir vfs.Node, ctx context.Context, name string) {
			_, err := dir.Mkdir(ctx, name, 0o755)
			noErr(t, "Mkdir", err)
		}},
		{"Symlink", func(t *testing.T, dir vfs.Node, ctx context.Context, name string) {
			_, err := dir.(vfs.Symlinker).Symlink(ctx, name, "/nowhere")
			noErr(t, "Symlink", err)
		}},
		{"Mknod", func(t *testing.T, dir vfs.Node, ctx context.Context, name string) {
			_, err := dir.(vfs.Mknoder).Mknod(ctx, name, syscall.S_IFIFO|0o644, 0)
			noErr(t, "Mknod", err)
		}},
	}
	dir := t.TempDir()
	root := newFS(t, dir)
	sg := filepath.Join(dir, "setgid")
	must(t, os.Mkdir(sg, 0o775))
	must(t, os.Chown(sg, 0, dirGid))
	must(t, unix.Chmod(sg, 0o2775)) // os.Chmod would drop the bit
	sgNode := lookup(t, root, "setgid")

	cases := []struct {
		name               string
		dir                vfs.Node
		hostDir            string
		withCaller         bool
		caller             vfs.Caller
		wantUid, wantGid   uint32
		wantSetgidOnSubdir bool
	}{
		{"Caller", root, dir, true, caller, uid, gid, false},
		{"NoCaller", root, dir, false, vfs.Caller{}, 0, 0, false},
		{"CallerIsDaemon", root, dir, true, vfs.Caller{Uid: 0, Gid: 0}, 0, 0, false},
		{"CallerOnlyGroup", root, dir, true, vfs.Caller{Uid: 0, Gid: gid}, 0, gid, false},
		{"SetgidDir", sgNode, sg, true, caller, uid, dirGid, true},
		{"SetgidDirNoCaller", sgNode, sg, false, vfs.Caller{}, 0, dirGid, true},
	}
	for _, tc := range cases {
		for _, m := range makers {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				ctx := t.Context()
				if tc.withCaller {
					ctx = vfs.WithCaller(ctx, tc.caller)
				}
				name := tc.name + "-" + m.name
				m.make(t, tc.dir, ctx, name)
				st := hostStat(t, filepath.Join(tc.hostDir, name))
				if st.Uid != tc.wantUid || st.Gid != tc.wantGid {
					t.Errorf("owner on the host: got %d:%d, want %d:%d", st.Uid, st.Gid, tc.wantUid, tc.wantGid)
				}
				a, err := lookup(t, tc.dir, name).Attr(ctx)
				noErr(t, "Attr", err)
				if a.Uid != tc.wantUid || a.Gid != tc.wantGid {
					t.Errorf("owner in Attr: got %d:%d, want %d:%d", a.Uid, a.Gid, tc.wantUid, tc.wantGid)
				}
				if m.name == "Mkdir" && (st.Mode&syscall.S_ISGID != 0) != tc.wantSetgidOnSubdir {
					t.Errorf("set-group-ID bit of the new directory: got %v, want %v", st.Mode&syscall.S_ISGID != 0, tc.wantSetgidOnSubdir)
				}
			})
		}
	}

	// Opening an existing file with O_CREAT leaves its owner alone.
	t.Run("CreateExisting", func(t *testing.T) {
		p := filepath.Join(dir, "existing")
		must(t, os.WriteFile(p, []byte("theirs"), 0o644))
		must(t, os.Chown(p, 4444, 4444))
		ctx := vfs.WithCaller(t.Context(), caller)
		for _, flags := range []int{os.O_RDWR | os.O_CREATE, os.O_RDONLY | os.O_CREATE, os.O_WRONLY | os.O_CREATE | os.O_TRUNC} {
			_, h, err := root.Create(ctx, "existing", flags, 0o644)
			noErr(t, fmt.Sprintf("Create(existing, %#o)", flags), err)
			h.Close()
			if st := hostStat(t, p); st.Uid != 4444 || st.Gid != 4444 {
				t.Errorf("owner after Create(existing, %#o): got %d:%d, want 4444:4444", flags, st.Uid, st.Gid)
			}
		}
		_, h, err := root.Create(ctx, "setgid", os.O_RDONLY|os.O_CREATE, 0o644)
		wantErrno(t, "Create on an existing directory", err, syscall.EISDIR)
		if err == nil {
			h.Close()
		}
		if st := hostStat(t, sg); st.Uid != 0 || st.Gid != dirGid {
			t.Errorf("owner of the directory after Create on its name: got %d:%d, want 0:%d", st.Uid, st.Gid, dirGid)
		}
	})
}

// ---- limits ----

// TestDeepTree builds a tree whose paths are about twice PATH_MAX long: every
// operation names one element relative to a held directory, so depth is
// no limit.
func TestDeepTree(t *testing.T) {
	for _, dirFds := range []int{0, 2} {
		t.Run(fmt.Sprintf("dirFds=%d", dirFds), func(t *testing.T) { testDeepTree(t, dirFds) })
	}
}

func testDeepTree(t *testing.T, dirFds int) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFSWith(t, dir, dirFds)
	const depth = 40
	elem := func(i int) string { return fmt.Sprintf("%03d-%s", i, strings.Repeat("d", 196)) }
	cur := root
	var path []string
	for i := range depth {
		n, err := cur.Mkdir(ctx, elem(i), 0o755)
		noErr(t, fmt.Sprintf("Mkdir at depth %d", i), err)
		cur = n
		path = append(path, elem(i))
	}
	if total := len(strings.Join(path, "/")); total < 8000 {
		t.Fatalf("path length: got %d, want over 8000", total)
	}
	create(t, cur, "leaf", "at the bottom")
	leaf := lookup(t, root, append(path, "leaf")...)
	if got := content(t, leaf); got != "at the bottom" {
		t.Errorf("leaf: got %q, want %q", got, "at the bottom")
	}
	if got, want := names(t, lookup(t, root, path...)), []string{"leaf"}; !slices.Equal(got, want) {
		t.Errorf("bottom listing: got %q, want %q", got, want)
	}
	_, err := cur.(vfs.Symlinker).Symlink(ctx, "up", strings.Repeat("../", depth))
	noErr(t, "Symlink at the bottom", err)
	_, err = leaf.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode | vfs.SetSize, Mode: 0o600, Size: 2})
	noErr(t, "SetAttr at the bottom", err)
	if got := content(t, leaf); got != "at" {
		t.Errorf("leaf after truncation: got %q, want %q", got, "at")
	}

	// Moving the top of the tree moves everything under it.
	noErr(t, "Rename(top)", root.Rename(ctx, elem(0), root, "top"))
	path[0] = "top"
	if got := content(t, lookup(t, root, append(path, "leaf")...)); got != "at" {
		t.Errorf("leaf after renaming the top: got %q, want %q", got, "at")
	}
	if got := content(t, leaf); got != "at" {
		t.Errorf("leaf's node after renaming the top: got %q, want %q", got, "at")
	}

	// And it comes down again, bottom up.
	noErr(t, "Remove(leaf)", cur.Remove(ctx, "leaf", false))
	noErr(t, "Remove(up)", cur.Remove(ctx, "up", false))
	for i := depth - 1; i >= 0; i-- {
		parent := root
		if i > 0 {
			parent = lookup(t, root, path[:i]...)
		}
		noErr(t, fmt.Sprintf("rmdir at depth %d", i), parent.Remove(ctx, path[i], true))
	}
	if got := hostNames(t, dir); len(got) != 0 {
		t.Errorf("state dir after removing the tree: got %q, want it empty", got)
	}
}

// deletedFds counts this process's descriptors of deleted files in dir
// (other tests' nodes may be collected meanwhile; they do not count).
func deletedFds(t *testing.T, dir string) int {
	t.Helper()
	return testenv.SelfFds(t, func(target string) bool {
		return strings.HasPrefix(target, dir+"/") && strings.HasSuffix(target, " (deleted)")
	})
}

// TestUnlinkFreesSpace checks that a removed file keeps no descriptor once
// no edge refers to its node and no handle is open (its space is freed),
// whichever of the two ends last; and that until then the node still
// answers stat, as a local disk does for a file removed while in use.
func TestUnlinkFreesSpace(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	wantDeleted := func(what string, want int) {
		t.Helper()
		if got := deletedFds(t, dir); got != want {
			t.Errorf("%s: %d descriptors of deleted files, want %d", what, got, want)
		}
	}

	closed := create(t, root, "closed", "x")
	noErr(t, "Remove(closed)", root.Remove(ctx, "closed", false))
	if _, err := closed.Attr(ctx); err != nil {
		t.Errorf("Attr of a removed file still referenced: %v, want it to work", err)
	}
	closed.(vfs.Forgetter).Forget()
	wantDeleted("after forgetting a removed file", 0)

	open := create(t, root, "open", "y")
	h, err := open.Open(ctx, os.O_RDONLY)
	noErr(t, "Open(open)", err)
	noErr(t, "Remove(open)", root.Remove(ctx, "open", false))
	open.(vfs.Forgetter).Forget()
	if _, err := open.Attr(ctx); err != nil {
		t.Errorf("Attr of a removed file still open: %v, want it to work", err)
	}
	wantDeleted("while a removed file is open (its handle and its pin)", 2)
	noErr(t, "Close", h.Close())
	wantDeleted("after the last close of a removed, forgotten file", 0)
}

// TestReusedInodeNumberIsAnotherFile removes a file behind the tree's back
// while its node is held, then makes files on the host until one gets the
// same inode number (ext4 reuses them at once): that file must be a node of
// its own, told apart by its birth time, never the held one.
func TestReusedInodeNumberIsAnotherFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	root := newFS(t, dir)
	old := create(t, root, "old", "old content")
	oldAttr, err := old.Attr(ctx)
	noErr(t, "Attr(old)", err)
	must(t, os.Remove(filepath.Join(dir, "old")))
	for i := range 200 {
		name := fmt.Sprintf("new%d", i)
		must(t, os.WriteFile(filepath.Join(dir, name), []byte("new content"), 0o644))
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(dir, name), &st))
		if st.Ino != oldAttr.Ino {
			continue
		}
		n := lookup(t, root, name)
		if n == old {
			t.Fatalf("the file that reused inode %d is served as the removed file's node", st.Ino)
		}
		a, err := n.Attr(ctx)
		noErr(t, "Attr(new)", err)
		if a.Gen == oldAttr.Gen {
			t.Errorf("both files have generation %d; want them told apart", a.Gen)
		}
		if got := content(t, n); got != "new content" {
			t.Errorf("new file reads %q, want %q", got, "new content")
		}
		return
	}
	t.Skip("SKIPPED: the filesystem did not reuse the inode number in 200 tries; nothing to check here")
}

// A file open through the tree is changed through its open descriptor: a
// chmod, a touch and an xattr call work after another program removed its
// last name, as fchmod(2) does on an open file, and calls racing the
// handle's close never act on a descriptor number given to another file.
func TestSetAttrThroughOpenHandle(t *testing.T) {
	dir := t.TempDir()
	root := newFS(t, dir)
	ctx := t.Context()
	f, h, err := root.(interface {
		Create(context.Context, string, int, uint32) (vfs.Node, vfs.Handle, error)
	}).Create(ctx, "f", os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	a, err := f.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600})
	if err != nil || a.Mode&0o777 != 0o600 {
		t.Errorf("chmod of an open file with no name: mode %o, %v; want 600", a.Mode&0o777, err)
	}
	if _, err := f.(vfs.Xattrer).GetXattr(ctx, "user.none"); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("getxattr of an open file with no name: %v, want ENODATA", err)
	}
	h.Close()

	// Closes racing setattrs: every setattr reaches "g" or fails, and
	// the other file never changes.
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	g, _, err := root.(interface {
		Create(context.Context, string, int, uint32) (vfs.Node, vfs.Handle, error)
	}).Create(ctx, "g", os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			g.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o640})
		}
	}()
	for i := 0; i < 200; i++ {
		hh, err := g.Open(ctx, os.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		// Another file opened while the number is free takes it.
		o, _ := os.Open(filepath.Join(dir, "other"))
		hh.Close()
		if o != nil {
			o.Close()
		}
	}
	<-done
	if st, err := os.Stat(filepath.Join(dir, "other")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the other file: %v, %v; want mode 644 untouched", st.Mode(), err)
	}
}
