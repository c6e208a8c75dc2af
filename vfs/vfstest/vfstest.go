// Package vfstest is the conformance suite of gsvfs: every writable backend,
// and the namespace that composes them, passes Run on a fresh empty root.
//
// The suite speaks only the vfs interfaces, so it holds a backend to the
// contract the edges rely on rather than to its implementation: files
// created, written and read back with io.EOF at the end; O_EXCL, O_TRUNC
// and O_APPEND; names that could climb out of a directory refused before
// they reach anything; mkdir, rmdir and unlink with Linux's errnos;
// rename within and across directories, over existing targets, and nodes
// that follow renames; directory listings that are exact and resume from
// any entry's Next on the same or a fresh handle, even while entries come
// and go; SetAttr reflected in Attr; stable, unique inode numbers; files
// that stay usable through an open handle after their name is gone; and
// ENOTDIR for directory operations on a file.
//
// Optional abilities (vfs.Linker, vfs.Symlinker, vfs.Readlinker,
// vfs.Xattrer, vfs.StatFSer, vfs.HandleAttrer, vfs.Syncer, vfs.Mknoder) are
// tested when the root, or the node or handle at hand, implements them;
// otherwise their subtests are skipped with the reason.
//
// A backend's test is one line:
//
//	func TestConformance(t *testing.T) {
//		vfstest.Run(t, func(t *testing.T) vfs.Node { return newEmptyTree(t) })
//	}
package vfstest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// Run runs the conformance suite. newRoot returns the root directory of a
// fresh, empty, writable tree; it is called once for every subtest.
func Run(t *testing.T, newRoot func(t *testing.T) vfs.Node) {
	tests := []struct {
		name string
		fn   func(t *testing.T, root vfs.Node)
	}{
		{"RootAttr", testRootAttr},
		{"CreateWriteRead", testCreateWriteRead},
		{"CreateExisting", testCreateExisting},
		{"CreateReadOnlyMode", testCreateReadOnlyMode},
		{"OpenFlags", testOpenFlags},
		{"LookupMissing", testLookupMissing},
		{"BadNames", testBadNames},
		{"Mkdir", testMkdir},
		{"Remove", testRemove},
		{"Rename", testRename},
		{"RenameErrors", testRenameErrors},
		{"RenameFollowsNodes", testRenameFollowsNodes},
		{"RenameFlags", testRenameFlags},
		{"ReadDir", testReadDir},
		{"ReadDirResume", testReadDirResume},
		{"ReadDirResumeWhileChanging", testReadDirChanging},
		{"SetAttr", testSetAttr},
		{"SetAttrDir", testSetAttrDir},
		{"Ino", testIno},
		{"NotDir", testNotDir},
		{"UnlinkWhileOpen", testUnlinkWhileOpen},
		{"HandleAttr", testHandleAttr},
		{"Link", testLink},
		{"Symlink", testSymlink},
		{"SymlinkNotFollowed", testSymlinkNotFollowed},
		{"Xattr", testXattr},
		{"StatFS", testStatFS},
		{"Sync", testSync},
		{"Mknod", testMknod},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			if root == nil {
				t.Fatal("newRoot returned nil")
			}
			tc.fn(t, root)
		})
	}
}

// Flags of SetXattr, as in setxattr(2).
const (
	xattrCreate  = 0x1
	xattrReplace = 0x2
)

// ---- helpers ----

// wantErrno fails unless err maps to one of want.
func wantErrno(t *testing.T, what string, err error, want ...syscall.Errno) {
	t.Helper()
	got := vfs.Errno(err)
	if slices.Contains(want, got) {
		return
	}
	t.Errorf("%s: got error %v (errno %d), want %s", what, err, int(got), errnoList(want))
}

func errnoList(want []syscall.Errno) string {
	s := make([]string, len(want))
	for i, e := range want {
		s[i] = fmt.Sprintf("%q (errno %d)", e.Error(), int(e))
	}
	return strings.Join(s, " or ")
}

// noErr fails the test now when err is not nil.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: got error %v, want nil", what, err)
	}
}

// implements returns v as the optional interface T, or skips the test
// when v (named what in the message) lacks it: an optional ability is
// checked only where the tree offers it.
func implements[T any](t *testing.T, what string, v any) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		t.Skipf("%s %T does not implement %s", what, v, reflect.TypeFor[T]())
	}
	return x
}

// createRW creates the new file name in dir, open for reading and
// writing; the caller closes the handle.
func createRW(t *testing.T, dir vfs.Node, name string, mode uint32) (vfs.Node, vfs.Handle) {
	t.Helper()
	n, h, err := dir.Create(t.Context(), name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
	noErr(t, fmt.Sprintf("Create(%q)", name), err)
	return n, h
}

func mkfile(t *testing.T, dir vfs.Node, name, data string) vfs.Node {
	t.Helper()
	n, h := createRW(t, dir, name, 0o644)
	if data != "" {
		writeAt(t, h, data, 0)
	}
	closeHandle(t, h)
	return n
}

func mkdir(t *testing.T, dir vfs.Node, name string) vfs.Node {
	t.Helper()
	n, err := dir.Mkdir(t.Context(), name, 0o755)
	noErr(t, fmt.Sprintf("Mkdir(%q)", name), err)
	return n
}

// mkpaths makes the entries named by slash-separated paths under dir; a
// path ending in "/" is a directory, any other a file holding its path.
func mkpaths(t *testing.T, dir vfs.Node, paths ...string) {
	t.Helper()
	for _, p := range paths {
		isDir := strings.HasSuffix(p, "/")
		elems := strings.Split(strings.TrimSuffix(p, "/"), "/")
		parent := lookup(t, dir, elems[:len(elems)-1]...)
		if isDir {
			mkdir(t, parent, elems[len(elems)-1])
		} else {
			mkfile(t, parent, elems[len(elems)-1], p)
		}
	}
}

// lookup walks names from dir.
func lookup(t *testing.T, dir vfs.Node, names ...string) vfs.Node {
	t.Helper()
	n := dir
	for i, name := range names {
		var err error
		n, err = n.Lookup(t.Context(), name)
		noErr(t, fmt.Sprintf("Lookup(%q)", strings.Join(names[:i+1], "/")), err)
	}
	return n
}

func attr(t *testing.T, n vfs.Node) vfs.Attr {
	t.Helper()
	a, err := n.Attr(t.Context())
	noErr(t, "Attr", err)
	return a
}

func open(t *testing.T, n vfs.Node, flags int) vfs.Handle {
	t.Helper()
	h, err := n.Open(t.Context(), flags)
	noErr(t, fmt.Sprintf("Open(%#o)", flags), err)
	return h
}

func closeHandle(t *testing.T, h vfs.Handle) {
	t.Helper()
	noErr(t, "Close", h.Close())
}

func writeAt(t *testing.T, h vfs.Handle, data string, off int64) {
	t.Helper()
	n, err := h.WriteAt(t.Context(), []byte(data), off)
	if err != nil || n != len(data) {
		t.Fatalf("WriteAt(%d bytes at %d): got %d, %v; want %d, nil", len(data), off, n, err, len(data))
	}
}

// readHandle reads h from offset 0 to its end, which must be marked with
// io.EOF.
func readHandle(t *testing.T, h vfs.Handle) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 1000)
	for off := int64(0); ; {
		n, err := h.ReadAt(t.Context(), buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return string(out)
		}
		noErr(t, fmt.Sprintf("ReadAt(%d)", off), err)
		if n == 0 {
			t.Fatalf("ReadAt(%d): got 0 bytes and a nil error, want io.EOF at the end", off)
		}
	}
}

// content opens n read-only and reads all of it.
func content(t *testing.T, n vfs.Node) string {
	t.Helper()
	h := open(t, n, os.O_RDONLY)
	defer closeHandle(t, h)
	return readHandle(t, h)
}

func wantContent(t *testing.T, what string, n vfs.Node, want string) {
	t.Helper()
	if got := content(t, n); got != want {
		t.Errorf("%s: got content %q, want %q", what, got, want)
	}
}

func dirReader(t *testing.T, h vfs.Handle) vfs.DirReader {
	t.Helper()
	dr, ok := h.(vfs.DirReader)
	if !ok {
		t.Fatalf("directory handle %T does not implement vfs.DirReader", h)
	}
	return dr
}

// readDirFrom lists an open directory from offset off to its end.
func readDirFrom(t *testing.T, h vfs.Handle, off uint64) []vfs.DirEntry {
	t.Helper()
	dr := dirReader(t, h)
	var out []vfs.DirEntry
	for {
		es, err := dr.ReadDir(t.Context(), off)
		noErr(t, fmt.Sprintf("ReadDir(%d)", off), err)
		if len(es) == 0 {
			return out
		}
		out = append(out, es...)
		if len(out) > 100000 {
			t.Fatalf("ReadDir: more than 100000 entries, the listing does not end (last Next %d)", off)
		}
		off = es[len(es)-1].Next
	}
}

// list returns the entries of dir.
func list(t *testing.T, dir vfs.Node) []vfs.DirEntry {
	t.Helper()
	h := open(t, dir, os.O_RDONLY)
	defer closeHandle(t, h)
	return readDirFrom(t, h, 0)
}

func entryNames(es []vfs.DirEntry) []string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	return names
}

func sorted(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return names
}

// wantNames fails unless dir lists exactly the names want.
func wantNames(t *testing.T, what string, dir vfs.Node, want ...string) {
	t.Helper()
	got := sorted(entryNames(list(t, dir)))
	want = sorted(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: got entries %q, want %q", what, got, want)
	}
}

func wantMissing(t *testing.T, dir vfs.Node, name string) {
	t.Helper()
	n, err := dir.Lookup(t.Context(), name)
	wantErrno(t, fmt.Sprintf("Lookup(%q)", name), err, syscall.ENOENT)
	if n != nil {
		t.Errorf("Lookup(%q): got node %T with error, want nil", name, n)
	}
}

func perm(a vfs.Attr) uint32 { return a.Mode & 0o7777 }

// ---- tests ----

func testRootAttr(t *testing.T, root vfs.Node) {
	a := attr(t, root)
	if !a.IsDir() {
		t.Errorf("root mode: got %#o, want a directory", a.Mode)
	}
	if a.Ino == 0 {
		t.Error("root Ino: got 0, want nonzero")
	}
	wantNames(t, "empty root", root)
}

func testCreateWriteRead(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	n, h := createRW(t, root, "f", 0o644)
	const data = "hello, world\n"
	writeAt(t, h, data, 0)
	if got := readHandle(t, h); got != data {
		t.Errorf("read back on the creating handle: got %q, want %q", got, data)
	}
	buf := make([]byte, 8)
	for _, off := range []int64{int64(len(data)), int64(len(data)) + 100} {
		k, err := h.ReadAt(ctx, buf, off)
		if k != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("ReadAt(%d) of a %d-byte file: got %d, %v; want 0, io.EOF", off, len(data), k, err)
		}
	}
	k, err := h.ReadAt(ctx, buf, 7)
	if k != 6 || (err != nil && !errors.Is(err, io.EOF)) || string(buf[:k]) != "world\n" {
		t.Errorf("ReadAt(7) across the end: got %d, %q, %v; want 6, %q", k, buf[:k], err, "world\n")
	}
	// A write past the end leaves a hole of zeros.
	writeAt(t, h, "!", 20)
	closeHandle(t, h)

	want := data + "\x00\x00\x00\x00\x00\x00\x00!"
	wantContent(t, "created node", n, want)
	wantContent(t, "looked-up node", lookup(t, root, "f"), want)
	a := attr(t, n)
	if a.Type() != syscall.S_IFREG {
		t.Errorf("mode: got %#o, want a regular file", a.Mode)
	}
	if a.Size != int64(len(want)) {
		t.Errorf("Size: got %d, want %d", a.Size, len(want))
	}
	if a.Nlink != 1 {
		t.Errorf("Nlink: got %d, want 1", a.Nlink)
	}
	wantNames(t, "root", root, "f")

	// Larger than any one buffer, at unaligned offsets.
	big := strings.Repeat("0123456789abcdef", 10000)
	h = open(t, n, os.O_RDWR|os.O_TRUNC)
	writeAt(t, h, big[:77777], 0)
	writeAt(t, h, big[77777:], 77777)
	closeHandle(t, h)
	if got := content(t, n); got != big {
		t.Errorf("160000-byte file: got %d bytes (equal: %v), want %d", len(got), got == big, len(big))
	}
}

func testCreateExisting(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	mkfile(t, root, "f", "old")
	mkdir(t, root, "d")
	cases := []struct {
		name  string
		flags int
		want  []syscall.Errno // nil: success
		after string          // the content of f afterwards
	}{
		{"f", os.O_RDWR | os.O_CREATE | os.O_EXCL, []syscall.Errno{syscall.EEXIST}, "old"},
		{"f", os.O_WRONLY | os.O_CREATE | os.O_EXCL | os.O_TRUNC, []syscall.Errno{syscall.EEXIST}, "old"},
		{"d", os.O_RDONLY | os.O_CREATE | os.O_EXCL, []syscall.Errno{syscall.EEXIST}, "old"},
		{"d", os.O_RDWR | os.O_CREATE, []syscall.Errno{syscall.EISDIR}, "old"},
		{"f", os.O_RDWR | os.O_CREATE, nil, "old"},
		{"f", os.O_RDWR | os.O_CREATE | os.O_TRUNC, nil, ""},
	}
	for _, tc := range cases {
		what := fmt.Sprintf("Create(%q, %#o)", tc.name, tc.flags)
		n, h, err := root.Create(ctx, tc.name, tc.flags, 0o600)
		if tc.want != nil {
			wantErrno(t, what, err, tc.want...)
			if h != nil {
				h.Close()
			}
		} else {
			noErr(t, what, err)
			closeHandle(t, h)
			if got, want := attr(t, n).Ino, attr(t, lookup(t, root, "f")).Ino; got != want {
				t.Errorf("%s: got node of Ino %d, want the existing file's %d", what, got, want)
			}
		}
		if got := content(t, lookup(t, root, "f")); got != tc.after {
			t.Errorf("after %s: got content %q, want %q", what, got, tc.after)
		}
	}
	if !attr(t, lookup(t, root, "d")).IsDir() {
		t.Error("d: got a non-directory after Create on its name, want a directory")
	}
	wantNames(t, "root", root, "f", "d")
}

func testCreateReadOnlyMode(t *testing.T, root vfs.Node) {
	n, h, err := root.Create(t.Context(), "ro", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o444)
	noErr(t, "Create(mode 0444)", err)
	writeAt(t, h, "written anyway", 0)
	if got := readHandle(t, h); got != "written anyway" {
		t.Errorf("read back: got %q, want %q", got, "written anyway")
	}
	closeHandle(t, h)
	if got := perm(attr(t, n)); got != 0o444 {
		t.Errorf("mode: got %#o, want %#o", got, 0o444)
	}
	wantContent(t, "ro", n, "written anyway")
}

func testOpenFlags(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	t.Run("Trunc", func(t *testing.T) {
		n := mkfile(t, root, "trunc", "abcdef")
		h := open(t, n, os.O_WRONLY|os.O_TRUNC)
		closeHandle(t, h)
		if got := attr(t, n).Size; got != 0 {
			t.Errorf("Size after O_TRUNC: got %d, want 0", got)
		}
	})
	t.Run("Append", func(t *testing.T) {
		n := mkfile(t, root, "append", "abc")
		h := open(t, n, os.O_WRONLY|os.O_APPEND)
		writeAt(t, h, "de", 0)
		writeAt(t, h, "fg", 1)
		closeHandle(t, h)
		wantContent(t, "after O_APPEND writes at 0 and 1", n, "abcdefg")
	})
	t.Run("RDWR", func(t *testing.T) {
		n := mkfile(t, root, "rdwr", "abcdef")
		h := open(t, n, os.O_RDWR)
		writeAt(t, h, "XY", 2)
		if got := readHandle(t, h); got != "abXYef" {
			t.Errorf("read after overwrite: got %q, want %q", got, "abXYef")
		}
		closeHandle(t, h)
	})
	t.Run("ReadOnlyHandle", func(t *testing.T) {
		n := mkfile(t, root, "rdonly", "abc")
		h := open(t, n, os.O_RDONLY)
		if k, err := h.WriteAt(ctx, []byte("x"), 0); err == nil {
			t.Errorf("WriteAt on an O_RDONLY handle: got %d, nil; want an error", k)
		}
		closeHandle(t, h)
		wantContent(t, "rdonly", n, "abc")
	})
	t.Run("WriteOnlyHandle", func(t *testing.T) {
		n := mkfile(t, root, "wronly", "abc")
		h := open(t, n, os.O_WRONLY)
		if k, err := h.ReadAt(ctx, make([]byte, 3), 0); err == nil {
			t.Errorf("ReadAt on an O_WRONLY handle: got %d, nil; want an error", k)
		}
		closeHandle(t, h)
	})
	t.Run("Dir", func(t *testing.T) {
		d := mkdir(t, root, "dir")
		for _, flags := range []int{os.O_WRONLY, os.O_RDWR} {
			h, err := d.Open(ctx, flags)
			wantErrno(t, fmt.Sprintf("Open(dir, %#o)", flags), err, syscall.EISDIR)
			if h != nil {
				h.Close()
			}
		}
		h := open(t, d, os.O_RDONLY)
		dirReader(t, h)
		if k, err := h.ReadAt(ctx, make([]byte, 10), 0); err == nil {
			t.Errorf("ReadAt on a directory handle: got %d, nil; want an error", k)
		}
		closeHandle(t, h)
	})
}

func testLookupMissing(t *testing.T, root vfs.Node) {
	wantMissing(t, root, "nope")
	d := mkdir(t, root, "d")
	wantMissing(t, d, "nope")
	mkfile(t, root, "f", "")
	wantMissing(t, d, "f")

	_, err := root.Lookup(t.Context(), "nope")
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("Lookup error: got %T (%v), want a *fs.PathError", err, err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lookup error: got %v, want one matching fs.ErrNotExist", err)
	}
}

// testBadNames hands every directory method names that are not one path
// element and checks each is refused and nothing changed.
func testBadNames(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	mkpaths(t, root, "top", "sub/", "sub/inner", "sub/deeper/")
	sub := lookup(t, root, "sub")
	inner := lookup(t, sub, "inner")
	names := []struct {
		name string
		want syscall.Errno
	}{
		{"..", syscall.EACCES},
		{".", syscall.EINVAL},
		{"", syscall.EINVAL},
		{"a/b", syscall.EINVAL},
		{"deeper/x", syscall.EINVAL},
		{"../top", syscall.EINVAL},
		{"/", syscall.EINVAL},
		{"/etc", syscall.EINVAL},
		{"inner/", syscall.EINVAL},
		{"a\x00b", syscall.EINVAL},
		{strings.Repeat("n", 256), syscall.ENAMETOOLONG},
	}
	type op struct {
		name string
		do   func(name string) (vfs.Node, error)
	}
	ops := []op{
		{"Lookup", func(name string) (vfs.Node, error) { return sub.Lookup(ctx, name) }},
		{"Create", func(name string) (vfs.Node, error) {
			n, h, err := sub.Create(ctx, name, os.O_RDWR|os.O_CREATE, 0o644)
			if h != nil {
				h.Close()
			}
			return n, err
		}},
		{"CreateExcl", func(name string) (vfs.Node, error) {
			n, h, err := sub.Create(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			if h != nil {
				h.Close()
			}
			return n, err
		}},
		{"Mkdir", func(name string) (vfs.Node, error) { return sub.Mkdir(ctx, name, 0o755) }},
		{"RemoveFile", func(name string) (vfs.Node, error) { return nil, sub.Remove(ctx, name, false) }},
		{"RemoveDir", func(name string) (vfs.Node, error) { return nil, sub.Remove(ctx, name, true) }},
		{"RenameFrom", func(name string) (vfs.Node, error) { return nil, sub.Rename(ctx, name, sub, "renamed") }},
		{"RenameTo", func(name string) (vfs.Node, error) { return nil, sub.Rename(ctx, "inner", sub, name) }},
		{"RenameToOtherDir", func(name string) (vfs.Node, error) { return nil, sub.Rename(ctx, "inner", root, name) }},
	}
	if s, ok := sub.(vfs.Symlinker); ok {
		ops = append(ops, op{"Symlink", func(name string) (vfs.Node, error) { return s.Symlink(ctx, name, "target") }})
	}
	if l, ok := sub.(vfs.Linker); ok {
		ops = append(ops, op{"Link", func(name string) (vfs.Node, error) { return l.Link(ctx, inner, name) }})
	}
	if m, ok := sub.(vfs.Mknoder); ok {
		ops = append(ops, op{"Mknod", func(name string) (vfs.Node, error) {
			return m.Mknod(ctx, name, syscall.S_IFIFO|0o644, 0)
		}})
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			for _, nm := range names {
				n, err := o.do(nm.name)
				wantErrno(t, fmt.Sprintf("%s(%q)", o.name, nm.name), err, nm.want)
				if err != nil && n != nil {
					t.Errorf("%s(%q): got node %T with the error, want nil", o.name, nm.name, n)
				}
			}
		})
	}
	wantNames(t, "root after bad names", root, "top", "sub")
	wantNames(t, "sub after bad names", sub, "inner", "deeper")
	wantNames(t, "sub/deeper after bad names", lookup(t, sub, "deeper"))
	wantContent(t, "top", lookup(t, root, "top"), "top")
	wantContent(t, "sub/inner", inner, "sub/inner")
}

func testMkdir(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	d, err := root.Mkdir(ctx, "d", 0o750)
	noErr(t, "Mkdir", err)
	a := attr(t, d)
	if !a.IsDir() {
		t.Errorf("mode: got %#o, want a directory", a.Mode)
	}
	if got := perm(a); got != 0o750 {
		t.Errorf("permissions: got %#o, want %#o", got, 0o750)
	}
	if got := attr(t, lookup(t, root, "d")).Ino; got != a.Ino {
		t.Errorf("Ino of looked-up d: got %d, want %d", got, a.Ino)
	}
	_, err = root.Mkdir(ctx, "d", 0o755)
	wantErrno(t, "Mkdir of an existing directory", err, syscall.EEXIST)
	mkfile(t, root, "f", "")
	_, err = root.Mkdir(ctx, "f", 0o755)
	wantErrno(t, "Mkdir over a file", err, syscall.EEXIST)

	e := mkdir(t, d, "e")
	mkfile(t, e, "leaf", "deep")
	wantContent(t, "d/e/leaf", lookup(t, root, "d", "e", "leaf"), "deep")
	wantNames(t, "root", root, "d", "f")
	wantNames(t, "d", d, "e")
	wantNames(t, "new empty dir", mkdir(t, root, "empty"))
}

func testRemove(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	mkpaths(t, root, "f", "empty/", "full/", "full/x", "hasdir/", "hasdir/sub/")

	err := root.Remove(ctx, "full", true)
	wantErrno(t, "rmdir of a directory holding a file", err, syscall.ENOTEMPTY)
	err = root.Remove(ctx, "hasdir", true)
	wantErrno(t, "rmdir of a directory holding a directory", err, syscall.ENOTEMPTY)
	err = root.Remove(ctx, "empty", false)
	wantErrno(t, "unlink of a directory", err, syscall.EISDIR, syscall.EPERM)
	err = root.Remove(ctx, "f", true)
	wantErrno(t, "rmdir of a file", err, syscall.ENOTDIR)
	err = root.Remove(ctx, "nope", false)
	wantErrno(t, "unlink of a missing name", err, syscall.ENOENT)
	err = root.Remove(ctx, "nope", true)
	wantErrno(t, "rmdir of a missing name", err, syscall.ENOENT)
	wantNames(t, "root after failed removes", root, "f", "empty", "full", "hasdir")

	empty := lookup(t, root, "empty")
	noErr(t, "rmdir empty", root.Remove(ctx, "empty", true))
	noErr(t, "unlink f", root.Remove(ctx, "f", false))
	wantMissing(t, root, "empty")
	wantMissing(t, root, "f")
	n, h, err := empty.Create(ctx, "x", os.O_RDWR|os.O_CREATE, 0o644)
	wantErrno(t, "Create in a removed directory", err, syscall.ENOENT)
	if h != nil {
		h.Close()
	}
	if err == nil && n != nil {
		t.Error("Create in a removed directory made a file")
	}

	full := lookup(t, root, "full")
	noErr(t, "unlink full/x", full.Remove(ctx, "x", false))
	noErr(t, "rmdir full", root.Remove(ctx, "full", true))
	wantNames(t, "root", root, "hasdir")

	// A removed name can be made again, as a file or a directory.
	mkfile(t, root, "f", "again")
	mkdir(t, root, "empty")
	wantNames(t, "root", root, "hasdir", "f", "empty")
	wantContent(t, "recreated f", lookup(t, root, "f"), "again")
}

func testRename(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	t.Run("SameDir", func(t *testing.T) {
		d := mkdir(t, root, "same")
		a := mkfile(t, d, "a", "A")
		renameInDir(t, d, "a", "b", a, "A")
		wantContent(t, "the node of a, renamed", a, "A")
		wantNames(t, "dir", d, "b")
	})
	t.Run("AcrossDirs", func(t *testing.T) {
		d1 := mkdir(t, root, "d1")
		d2 := mkdir(t, root, "d2")
		a := mkfile(t, d1, "a", "A")
		sub := mkdir(t, d1, "sub")
		mkfile(t, sub, "x", "X")
		noErr(t, "Rename(d1/a, d2/b)", d1.Rename(ctx, "a", d2, "b"))
		noErr(t, "Rename(d1/sub, d2/sub2)", d1.Rename(ctx, "sub", d2, "sub2"))
		wantNames(t, "d1", d1)
		wantNames(t, "d2", d2, "b", "sub2")
		wantContent(t, "d2/b", lookup(t, d2, "b"), "A")
		wantContent(t, "d2/sub2/x", lookup(t, d2, "sub2", "x"), "X")
		wantContent(t, "the node of d1/a, moved", a, "A")
		wantNames(t, "the node of d1/sub, moved", sub, "x")
	})
	t.Run("ReplaceFile", func(t *testing.T) {
		d := mkdir(t, root, "replace")
		a := mkfile(t, d, "a", "new content")
		mkfile(t, d, "b", "old content")
		renameInDir(t, d, "a", "b", a, "new content")
		wantNames(t, "dir", d, "b")
	})
	t.Run("ReplaceFileAcrossDirs", func(t *testing.T) {
		d1 := mkdir(t, root, "r1")
		d2 := mkdir(t, root, "r2")
		mkfile(t, d1, "a", "new")
		mkfile(t, d2, "a", "old")
		noErr(t, "Rename(r1/a, r2/a)", d1.Rename(ctx, "a", d2, "a"))
		wantNames(t, "r1", d1)
		wantNames(t, "r2", d2, "a")
		wantContent(t, "r2/a", lookup(t, d2, "a"), "new")
	})
	t.Run("ReplaceEmptyDir", func(t *testing.T) {
		d := mkdir(t, root, "dirs")
		x := mkdir(t, d, "x")
		mkfile(t, x, "kid", "K")
		mkdir(t, d, "y")
		noErr(t, "Rename(x, y) over an empty directory", d.Rename(ctx, "x", d, "y"))
		wantNames(t, "dir", d, "y")
		wantContent(t, "y/kid", lookup(t, d, "y", "kid"), "K")
	})
	t.Run("SameName", func(t *testing.T) {
		d := mkdir(t, root, "samename")
		mkfile(t, d, "a", "A")
		noErr(t, "Rename(a, a)", d.Rename(ctx, "a", d, "a"))
		wantNames(t, "dir", d, "a")
		wantContent(t, "a", lookup(t, d, "a"), "A")
	})
}

// renameInDir renames from to to in d and checks that to is now the file
// a was, by content and inode, and that from is gone.
func renameInDir(t *testing.T, d vfs.Node, from, to string, a vfs.Node, content string) {
	t.Helper()
	ino := attr(t, a).Ino
	noErr(t, fmt.Sprintf("Rename(%s, %s)", from, to), d.Rename(t.Context(), from, d, to))
	wantMissing(t, d, from)
	b := lookup(t, d, to)
	wantContent(t, to, b, content)
	if got := attr(t, b).Ino; got != ino {
		t.Errorf("Ino of %s after the rename: got %d, want %d (the renamed file's)", to, got, ino)
	}
}

func testRenameErrors(t *testing.T, root vfs.Node) {
	cases := []struct {
		name     string
		setup    []string
		from     string
		toDir    string // "" for the same directory
		to       string
		want     []syscall.Errno
		wantList []string // the case's directory afterwards
	}{
		{"Missing", []string{"a"}, "nope", "", "b",
			[]syscall.Errno{syscall.ENOENT}, []string{"a"}},
		{"DirOverNonEmptyDir", []string{"x/", "y/", "y/kid"}, "x", "", "y",
			[]syscall.Errno{syscall.ENOTEMPTY, syscall.EEXIST}, []string{"x", "y"}},
		{"FileOverDir", []string{"f", "d/"}, "f", "", "d",
			[]syscall.Errno{syscall.EISDIR}, []string{"f", "d"}},
		{"DirOverFile", []string{"f", "d/"}, "d", "", "f",
			[]syscall.Errno{syscall.ENOTDIR}, []string{"f", "d"}},
		{"DirIntoItself", []string{"d/", "d/sub/"}, "d", "d/sub", "d2",
			[]syscall.Errno{syscall.EINVAL}, []string{"d"}},
		{"DirOntoItsChild", []string{"d/", "d/sub/"}, "d", "d", "sub",
			[]syscall.Errno{syscall.EINVAL, syscall.ENOTEMPTY, syscall.EEXIST}, []string{"d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := mkdir(t, root, tc.name)
			mkpaths(t, d, tc.setup...)
			to := d
			if tc.toDir != "" {
				to = lookup(t, d, strings.Split(tc.toDir, "/")...)
			}
			err := d.Rename(t.Context(), tc.from, to, tc.to)
			wantErrno(t, fmt.Sprintf("Rename(%q, %q/%q)", tc.from, tc.toDir, tc.to), err, tc.want...)
			wantNames(t, "dir after the failed rename", d, tc.wantList...)
		})
	}
}

// testRenameFollowsNodes renames a directory away under nodes already
// looked up inside it: they keep working, and reach the moved files.
func testRenameFollowsNodes(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	mkpaths(t, root, "d/", "d/sub/", "d/sub/f", "other/")
	d := lookup(t, root, "d")
	sub := lookup(t, d, "sub")
	f := lookup(t, sub, "f")
	ino := attr(t, f).Ino

	noErr(t, "Rename(d, other/d2)", root.Rename(ctx, "d", lookup(t, root, "other"), "d2"))
	wantMissing(t, root, "d")

	a := attr(t, f)
	if a.Ino != ino {
		t.Errorf("Ino of the moved child: got %d, want %d", a.Ino, ino)
	}
	wantContent(t, "child node after its grandparent moved", f, "d/sub/f")
	h := open(t, f, os.O_WRONLY|os.O_TRUNC)
	writeAt(t, h, "written through the old node", 0)
	closeHandle(t, h)
	wantContent(t, "other/d2/sub/f", lookup(t, root, "other", "d2", "sub", "f"), "written through the old node")

	mkfile(t, sub, "g", "G")
	wantContent(t, "other/d2/sub/g", lookup(t, root, "other", "d2", "sub", "g"), "G")
	wantContent(t, "d node, Lookup(sub/f)", lookup(t, d, "sub", "f"), "written through the old node")
	wantNames(t, "other/d2/sub", lookup(t, root, "other", "d2", "sub"), "f", "g")

	// And a file renamed, then its directory renamed too.
	noErr(t, "Rename(sub/f, sub/h)", sub.Rename(ctx, "f", sub, "h"))
	noErr(t, "Rename(other/d2, root/d3)", lookup(t, root, "other").Rename(ctx, "d2", root, "d3"))
	wantContent(t, "node of f after both renames", f, "written through the old node")
	if got := attr(t, lookup(t, root, "d3", "sub", "h")).Ino; got != ino {
		t.Errorf("Ino of d3/sub/h: got %d, want %d", got, ino)
	}
}

func testReadDir(t *testing.T, root vfs.Node) {
	mkpaths(t, root, "a", "b", "dir/", "dir/inside", "dir/sub/")
	want := map[string]uint32{"a": syscall.S_IFREG, "b": syscall.S_IFREG, "dir": syscall.S_IFDIR}
	if s, ok := root.(vfs.Symlinker); ok {
		_, err := s.Symlink(t.Context(), "link", "a")
		noErr(t, "Symlink", err)
		want["link"] = syscall.S_IFLNK
	}
	es := list(t, root)
	var names []string
	nexts := map[uint64]string{}
	for _, e := range es {
		names = append(names, e.Name)
		wantType, ok := want[e.Name]
		if !ok {
			t.Errorf("unexpected entry %q", e.Name)
			continue
		}
		a := attr(t, lookup(t, root, e.Name))
		if e.Type != 0 && e.Type != wantType {
			t.Errorf("%s: got Type %#o, want %#o", e.Name, e.Type, wantType)
		}
		if a.Type() != wantType {
			t.Errorf("%s: got Attr type %#o, want %#o", e.Name, a.Type(), wantType)
		}
		if e.Ino != 0 && e.Ino != a.Ino {
			t.Errorf("%s: got entry Ino %d, want Attr's %d", e.Name, e.Ino, a.Ino)
		}
		if e.Next == 0 {
			t.Errorf("%s: got Next 0, want a resume offset (0 is the start)", e.Name)
		}
		if prev, dup := nexts[e.Next]; dup {
			t.Errorf("%s and %s: got the same Next %d", prev, e.Name, e.Next)
		}
		nexts[e.Next] = e.Name
	}
	wantList := slices.Sorted(maps.Keys(want))
	if got := sorted(names); !slices.Equal(got, wantList) {
		t.Errorf("root: got entries %q, want %q (no . or ..)", got, wantList)
	}
	wantNames(t, "dir", lookup(t, root, "dir"), "inside", "sub")
	wantNames(t, "dir/sub", lookup(t, root, "dir", "sub"))

	// Reading on after the end stays at the end.
	h := open(t, root, os.O_RDONLY)
	defer closeHandle(t, h)
	all := readDirFrom(t, h, 0)
	last := all[len(all)-1].Next
	for range 2 {
		es, err := dirReader(t, h).ReadDir(t.Context(), last)
		if err != nil || len(es) != 0 {
			t.Errorf("ReadDir(Next of the last entry): got %q, %v; want no entries, nil", entryNames(es), err)
		}
	}
	// And 0 starts over on the same handle.
	if got := sorted(entryNames(readDirFrom(t, h, 0))); !slices.Equal(got, wantList) {
		t.Errorf("ReadDir(0) again: got %q, want %q", got, wantList)
	}
}

// bigDir fills a new directory with n entries whose names are long enough
// that a listing takes more than one batch of a typical getdents buffer.
func bigDir(t *testing.T, root vfs.Node, name string, n int) (vfs.Node, []string) {
	t.Helper()
	d := mkdir(t, root, name)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("entry-%03d-%s", i, strings.Repeat("x", 120))
		if i%10 == 0 {
			mkdir(t, d, names[i])
		} else {
			_, h, err := d.Create(t.Context(), names[i], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			noErr(t, "Create", err)
			closeHandle(t, h)
		}
	}
	return d, names
}

// checkRest fails unless got holds each of want exactly once, and nothing
// else.
func checkRest(t *testing.T, what string, got []vfs.DirEntry, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.Name] {
			t.Errorf("%s: got %q twice", what, e.Name)
		}
		seen[e.Name] = true
	}
	g, w := sorted(entryNames(got)), sorted(want)
	if !slices.Equal(g, w) {
		missing, extra := diff(w, g), diff(g, w)
		t.Errorf("%s: got %d entries, want %d; missing %q, extra %q", what, len(got), len(want), short(missing), short(extra))
	}
}

// diff returns the names in a that are not in b.
func diff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// short abbreviates bigDir's long names for messages.
func short(names []string) []string {
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = strings.TrimRight(s, "x")
	}
	return out
}

// listBigDir makes bigDir's directory of n entries, opens it and reads
// the whole listing (all), and ends the test unless the listing has
// every name; the caller closes h.
func listBigDir(t *testing.T, root vfs.Node, name string, n int) (d vfs.Node, h vfs.Handle, names []string, all []vfs.DirEntry) {
	t.Helper()
	d, names = bigDir(t, root, name, n)
	h = open(t, d, os.O_RDONLY)
	all = readDirFrom(t, h, 0)
	checkRest(t, "full listing", all, names)
	if len(all) != n {
		closeHandle(t, h)
		t.FailNow()
	}
	return d, h, names, all
}

func testReadDirResume(t *testing.T, root vfs.Node) {
	const n = 300
	d, h, names, all := listBigDir(t, root, "big", n)
	defer closeHandle(t, h)
	// Out of order, so that the handle seeks backwards as well as forwards.
	for _, k := range []int{150, 0, n - 1, 1, n - 2, 99, 200, 2} {
		want := entryNames(all[k+1:])
		got := readDirFrom(t, h, all[k].Next)
		checkRest(t, fmt.Sprintf("same handle, from Next of entry %d", k), got, want)

		fresh := open(t, d, os.O_RDONLY)
		got = readDirFrom(t, fresh, all[k].Next)
		closeHandle(t, fresh)
		checkRest(t, fmt.Sprintf("fresh handle, from Next of entry %d", k), got, want)
	}
	checkRest(t, "same handle from 0 again", readDirFrom(t, h, 0), names)

	// Resuming one batch at a time, as an edge with a small buffer does.
	var got []vfs.DirEntry
	dr := dirReader(t, h)
	for off := uint64(0); len(got) <= n; {
		es, err := dr.ReadDir(t.Context(), off)
		noErr(t, "ReadDir", err)
		if len(es) == 0 {
			break
		}
		take := min(len(es), 7)
		got = append(got, es[:take]...)
		off = es[take-1].Next
	}
	checkRest(t, "seven entries at a time", got, names)
}

func testReadDirChanging(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	const n = 300
	d, h, _, all := listBigDir(t, root, "changing", n)
	defer closeHandle(t, h)
	const k = 149 // the last entry the reader has seen
	seen := entryNames(all[:k+1])
	removed := map[string]bool{}
	for _, i := range []int{10, 11, 12, 13, 14, 200, 201, 202, 203, 204, 298, 299} {
		name := all[i].Name
		isDir := attr(t, lookup(t, d, name)).IsDir()
		noErr(t, "Remove", d.Remove(ctx, name, isDir))
		removed[name] = true
	}
	for i := range 20 {
		mkfile(t, d, fmt.Sprintf("new-%02d", i), "")
	}
	rest := readDirFrom(t, h, all[k].Next)
	count := map[string]int{}
	for _, e := range rest {
		count[e.Name]++
	}
	for _, e := range all[k+1:] {
		if !removed[e.Name] && count[e.Name] != 1 {
			t.Errorf("unseen entry %q present throughout: got it %d times, want once", short([]string{e.Name}), count[e.Name])
		}
	}
	for _, name := range seen {
		if count[name] != 0 {
			t.Errorf("entry %q already listed before the resume point: got it again %d times", short([]string{name}), count[name])
		}
	}
	for name, c := range count {
		if c > 1 {
			t.Errorf("entry %q: got %d times, want at most once", short([]string{name}), c)
		}
	}
}

func testSetAttr(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	at := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
	const data = "hello world"
	cases := []struct {
		name  string
		set   vfs.SetAttr
		check func(t *testing.T, a vfs.Attr, content string)
	}{
		{"Shrink", vfs.SetAttr{Valid: vfs.SetSize, Size: 5}, func(t *testing.T, a vfs.Attr, c string) {
			if a.Size != 5 || c != "hello" {
				t.Errorf("got Size %d, content %q; want 5, %q", a.Size, c, "hello")
			}
		}},
		{"Grow", vfs.SetAttr{Valid: vfs.SetSize, Size: 16}, func(t *testing.T, a vfs.Attr, c string) {
			if want := data + "\x00\x00\x00\x00\x00"; a.Size != 16 || c != want {
				t.Errorf("got Size %d, content %q; want 16, %q", a.Size, c, want)
			}
		}},
		{"Empty", vfs.SetAttr{Valid: vfs.SetSize, Size: 0}, func(t *testing.T, a vfs.Attr, c string) {
			if a.Size != 0 || c != "" {
				t.Errorf("got Size %d, content %q; want 0, empty", a.Size, c)
			}
		}},
		{"Mode0600", vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600}, func(t *testing.T, a vfs.Attr, c string) {
			if perm(a) != 0o600 || a.Type() != syscall.S_IFREG || c != data {
				t.Errorf("got mode %#o, content %q; want %#o, %q", a.Mode, c, syscall.S_IFREG|0o600, data)
			}
		}},
		{"Mode0755", vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o755}, func(t *testing.T, a vfs.Attr, c string) {
			if perm(a) != 0o755 || a.Type() != syscall.S_IFREG {
				t.Errorf("got mode %#o, want %#o", a.Mode, syscall.S_IFREG|0o755)
			}
		}},
		{"Mode0400", vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o400}, func(t *testing.T, a vfs.Attr, c string) {
			if perm(a) != 0o400 || a.Type() != syscall.S_IFREG {
				t.Errorf("got mode %#o, want %#o", a.Mode, syscall.S_IFREG|0o400)
			}
		}},
		{"Mtime", vfs.SetAttr{Valid: vfs.SetMtime, Mtime: mt}, func(t *testing.T, a vfs.Attr, c string) {
			if !a.Mtime.Equal(mt) || c != data {
				t.Errorf("got Mtime %v, want %v", a.Mtime, mt)
			}
		}},
		{"Atime", vfs.SetAttr{Valid: vfs.SetAtime, Atime: at}, func(t *testing.T, a vfs.Attr, c string) {
			// Reading the content afterwards may move atime on; check
			// only that it was set, not left at the creation time.
			if a.Atime.Before(at) || a.Atime.Year() < 2002 {
				t.Errorf("got Atime %v, want %v or later", a.Atime, at)
			}
		}},
		{"Both", vfs.SetAttr{Valid: vfs.SetSize | vfs.SetMode | vfs.SetMtime, Size: 3, Mode: 0o640, Mtime: mt},
			func(t *testing.T, a vfs.Attr, c string) {
				if a.Size != 3 || c != "hel" || perm(a) != 0o640 || !a.Mtime.Equal(mt) {
					t.Errorf("got Size %d, content %q, mode %#o, Mtime %v; want 3, %q, %#o, %v",
						a.Size, c, perm(a), a.Mtime, "hel", 0o640, mt)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := mkfile(t, root, tc.name, data)
			got, err := n.SetAttr(ctx, tc.set)
			noErr(t, "SetAttr", err)
			if tc.set.Has(vfs.SetSize) && got.Size != tc.set.Size {
				t.Errorf("Size returned by SetAttr: got %d, want %d", got.Size, tc.set.Size)
			}
			if tc.set.Has(vfs.SetMode) && perm(got) != tc.set.Mode {
				t.Errorf("mode returned by SetAttr: got %#o, want %#o", perm(got), tc.set.Mode)
			}
			if tc.set.Has(vfs.SetMtime) && !got.Mtime.Equal(tc.set.Mtime) {
				t.Errorf("Mtime returned by SetAttr: got %v, want %v", got.Mtime, tc.set.Mtime)
			}
			c := content(t, n)
			tc.check(t, attr(t, n), c)
			tc.check(t, attr(t, lookup(t, root, tc.name)), c)
		})
	}
	t.Run("MtimeNow", func(t *testing.T) {
		n := mkfile(t, root, "now", data)
		_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtime, Mtime: mt})
		noErr(t, "SetAttr(Mtime)", err)
		before := time.Now().Add(-time.Minute)
		_, err = n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtimeNow | vfs.SetAtimeNow})
		noErr(t, "SetAttr(MtimeNow)", err)
		if a := attr(t, n); a.Mtime.Before(before) || a.Atime.Before(before) {
			t.Errorf("got Mtime %v, Atime %v; want both after %v", a.Mtime, a.Atime, before)
		}
	})
	t.Run("WriteMovesMtime", func(t *testing.T) {
		n := mkfile(t, root, "written", data)
		_, err := n.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtime, Mtime: mt})
		noErr(t, "SetAttr(Mtime)", err)
		h := open(t, n, os.O_WRONLY)
		writeAt(t, h, "J", 0)
		closeHandle(t, h)
		if a := attr(t, n); !a.Mtime.After(mt) || a.Size != int64(len(data)) {
			t.Errorf("after a write: got Mtime %v, Size %d; want later than %v, %d", a.Mtime, a.Size, mt, len(data))
		}
	})
}

func testSetAttrDir(t *testing.T, root vfs.Node) {
	d := mkdir(t, root, "d")
	mt := time.Date(2003, 4, 5, 6, 7, 8, 0, time.UTC)
	_, err := d.SetAttr(t.Context(), vfs.SetAttr{Valid: vfs.SetMode | vfs.SetMtime, Mode: 0o700, Mtime: mt})
	noErr(t, "SetAttr on a directory", err)
	a := attr(t, lookup(t, root, "d"))
	if !a.IsDir() || perm(a) != 0o700 || !a.Mtime.Equal(mt) {
		t.Errorf("got mode %#o, Mtime %v; want %#o, %v", a.Mode, a.Mtime, syscall.S_IFDIR|0o700, mt)
	}
}

func testIno(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	a := mkfile(t, root, "a", "")
	mkfile(t, root, "b", "")
	d := mkdir(t, root, "d")
	mkfile(t, d, "c", "")
	inos := map[uint64]string{}
	for _, p := range [][]string{{}, {"a"}, {"b"}, {"d"}, {"d", "c"}} {
		name := "/" + strings.Join(p, "/")
		first := attr(t, lookup(t, root, p...)).Ino
		second := attr(t, lookup(t, root, p...)).Ino
		if first == 0 {
			t.Errorf("%s: got Ino 0, want nonzero", name)
		}
		if first != second {
			t.Errorf("%s: got Ino %d, then %d on a second lookup; want it stable", name, first, second)
		}
		if other, dup := inos[first]; dup {
			t.Errorf("%s and %s: got the same Ino %d, want unique", other, name, first)
		}
		inos[first] = name
	}
	if got, want := attr(t, a).Ino, attr(t, lookup(t, root, "a")).Ino; got != want {
		t.Errorf("Ino of the created node: got %d, want the looked-up %d", got, want)
	}
	want := attr(t, a).Ino
	noErr(t, "Rename", root.Rename(ctx, "a", d, "moved"))
	if got := attr(t, lookup(t, d, "moved")).Ino; got != want {
		t.Errorf("Ino after rename: got %d, want %d", got, want)
	}
}

func testNotDir(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	f := mkfile(t, root, "f", "data")
	g := mkfile(t, root, "g", "g")
	type op struct {
		name string
		do   func() (vfs.Node, error)
	}
	ops := []op{
		{"Lookup", func() (vfs.Node, error) { return f.Lookup(ctx, "x") }},
		{"Create", func() (vfs.Node, error) {
			n, h, err := f.Create(ctx, "x", os.O_RDWR|os.O_CREATE, 0o644)
			if h != nil {
				h.Close()
			}
			return n, err
		}},
		{"Mkdir", func() (vfs.Node, error) { return f.Mkdir(ctx, "x", 0o755) }},
		{"RemoveFile", func() (vfs.Node, error) { return nil, f.Remove(ctx, "x", false) }},
		{"RemoveDir", func() (vfs.Node, error) { return nil, f.Remove(ctx, "x", true) }},
		{"RenameFrom", func() (vfs.Node, error) { return nil, f.Rename(ctx, "x", root, "y") }},
		{"RenameInto", func() (vfs.Node, error) { return nil, root.Rename(ctx, "g", f, "y") }},
	}
	if s, ok := f.(vfs.Symlinker); ok {
		ops = append(ops, op{"Symlink", func() (vfs.Node, error) { return s.Symlink(ctx, "x", "target") }})
	}
	if l, ok := f.(vfs.Linker); ok {
		ops = append(ops, op{"Link", func() (vfs.Node, error) { return l.Link(ctx, g, "x") }})
	}
	if m, ok := f.(vfs.Mknoder); ok {
		ops = append(ops, op{"Mknod", func() (vfs.Node, error) { return m.Mknod(ctx, "x", syscall.S_IFIFO|0o644, 0) }})
	}
	for _, o := range ops {
		n, err := o.do()
		wantErrno(t, o.name+" on a file", err, syscall.ENOTDIR)
		if err != nil && n != nil {
			t.Errorf("%s on a file: got node %T with the error, want nil", o.name, n)
		}
	}
	wantNames(t, "root", root, "f", "g")
	wantContent(t, "f", f, "data")
	wantContent(t, "g", g, "g")
}

func testUnlinkWhileOpen(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	_, h := createRW(t, root, "f", 0o644)
	defer closeHandle(t, h)
	writeAt(t, h, "abc", 0)
	noErr(t, "Remove", root.Remove(ctx, "f", false))
	wantMissing(t, root, "f")
	wantNames(t, "root", root)

	if got := readHandle(t, h); got != "abc" {
		t.Errorf("read after unlink: got %q, want %q", got, "abc")
	}
	writeAt(t, h, "def", 3)
	if got := readHandle(t, h); got != "abcdef" {
		t.Errorf("read after a write after unlink: got %q, want %q", got, "abcdef")
	}
	if ha, ok := h.(vfs.HandleAttrer); ok {
		a, err := ha.Attr(ctx)
		noErr(t, "HandleAttrer.Attr after unlink", err)
		if a.Size != 6 || a.Nlink != 0 {
			t.Errorf("HandleAttrer.Attr after unlink: got Size %d, Nlink %d; want 6, 0", a.Size, a.Nlink)
		}
		a, err = ha.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize, Size: 2})
		noErr(t, "HandleAttrer.SetAttr after unlink", err)
		if a.Size != 2 {
			t.Errorf("Size after ftruncate of an unlinked file: got %d, want 2", a.Size)
		}
		if got := readHandle(t, h); got != "ab" {
			t.Errorf("read after ftruncate: got %q, want %q", got, "ab")
		}
	}

	// A new file of the same name is another file.
	mkfile(t, root, "f", "new")
	wantContent(t, "new f", lookup(t, root, "f"), "new")
	if got := readHandle(t, h); got != "ab" && got != "abcdef" {
		t.Errorf("old handle after the name was reused: got %q, want the old file's content", got)
	}
}

func testHandleAttr(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	n, h := createRW(t, root, "f", 0o444)
	defer closeHandle(t, h)
	ha := implements[vfs.HandleAttrer](t, "file handle", h)
	writeAt(t, h, "0123456789", 0)
	a, err := ha.Attr(ctx)
	noErr(t, "HandleAttrer.Attr", err)
	if want := attr(t, n); a.Ino != want.Ino || a.Size != 10 {
		t.Errorf("HandleAttrer.Attr: got Ino %d, Size %d; want %d, 10", a.Ino, a.Size, want.Ino)
	}
	// ftruncate on a handle open for writing works whatever the mode.
	a, err = ha.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize, Size: 4})
	noErr(t, "HandleAttrer.SetAttr(Size) on a mode-0444 file", err)
	if a.Size != 4 {
		t.Errorf("Size returned: got %d, want 4", a.Size)
	}
	if got := attr(t, n).Size; got != 4 {
		t.Errorf("node Size: got %d, want 4", got)
	}
	mt := time.Date(2004, 5, 6, 7, 8, 9, 0, time.UTC)
	a, err = ha.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode | vfs.SetMtime, Mode: 0o640, Mtime: mt})
	noErr(t, "HandleAttrer.SetAttr(mode, mtime)", err)
	if perm(a) != 0o640 || !a.Mtime.Equal(mt) {
		t.Errorf("got mode %#o, Mtime %v; want %#o, %v", perm(a), a.Mtime, 0o640, mt)
	}
	if a := attr(t, n); perm(a) != 0o640 || !a.Mtime.Equal(mt) {
		t.Errorf("node: got mode %#o, Mtime %v; want %#o, %v", perm(a), a.Mtime, 0o640, mt)
	}
}

func testLink(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	l := implements[vfs.Linker](t, "root", root)
	a := mkfile(t, root, "a", "shared")
	d := mkdir(t, root, "d")
	b, err := l.Link(ctx, a, "b")
	noErr(t, "Link(a, b)", err)
	aa, ba := attr(t, a), attr(t, b)
	if aa.Ino != ba.Ino {
		t.Errorf("Ino: got %d for a and %d for b, want the same", aa.Ino, ba.Ino)
	}
	if aa.Nlink != 2 || ba.Nlink != 2 {
		t.Errorf("Nlink: got %d for a and %d for b, want 2", aa.Nlink, ba.Nlink)
	}
	if got := attr(t, lookup(t, root, "b")).Ino; got != aa.Ino {
		t.Errorf("Ino of looked-up b: got %d, want %d", got, aa.Ino)
	}
	// A write through one name shows through the other.
	h := open(t, lookup(t, root, "b"), os.O_WRONLY|os.O_APPEND)
	writeAt(t, h, "+", 0)
	closeHandle(t, h)
	wantContent(t, "a after a write through b", lookup(t, root, "a"), "shared+")

	_, err = l.Link(ctx, a, "b")
	wantErrno(t, "Link over an existing name", err, syscall.EEXIST)
	_, err = l.Link(ctx, d, "dirlink")
	wantErrno(t, "Link of a directory", err, syscall.EPERM)
	if dl, ok := d.(vfs.Linker); ok {
		_, err = dl.Link(ctx, a, "c")
		noErr(t, "Link(a, d/c)", err)
		if got := attr(t, a).Nlink; got != 3 {
			t.Errorf("Nlink after a third link: got %d, want 3", got)
		}
		noErr(t, "Remove(d/c)", d.Remove(ctx, "c", false))
	}

	noErr(t, "Remove(a)", root.Remove(ctx, "a", false))
	wantMissing(t, root, "a")
	aa, err = a.Attr(ctx)
	noErr(t, "Attr of the node after its first name is gone", err)
	if aa.Nlink != 1 || aa.Size != int64(len("shared+")) {
		t.Errorf("Attr of the node: got Nlink %d, Size %d; want 1, %d", aa.Nlink, aa.Size, len("shared+"))
	}
	wantContent(t, "b after a is gone", lookup(t, root, "b"), "shared+")
	wantContent(t, "the node of a after a is gone", a, "shared+")
	wantNames(t, "root", root, "b", "d")

	t.Run("RenameOntoOtherLink", func(t *testing.T) {
		// rename(2) between two links of one file does nothing: both
		// names stay.
		d := mkdir(t, root, "same")
		x := mkfile(t, d, "x", "X")
		_, err := d.(vfs.Linker).Link(ctx, x, "y")
		noErr(t, "Link(x, y)", err)
		noErr(t, "Rename(x, y)", d.Rename(ctx, "x", d, "y"))
		wantNames(t, "dir after renaming a link onto its twin", d, "x", "y")
		noErr(t, "Remove(y)", d.Remove(ctx, "y", false))
		wantNames(t, "dir", d, "x")
		a, err := x.Attr(ctx)
		noErr(t, "Attr of the node after y is gone", err)
		if a.Nlink != 1 {
			t.Errorf("Nlink: got %d, want 1", a.Nlink)
		}
		wantContent(t, "the node of x", x, "X")
		wantContent(t, "x", lookup(t, d, "x"), "X")
	})
	t.Run("RenameOverLink", func(t *testing.T) {
		// Renaming another file over one link leaves the other intact.
		d := mkdir(t, root, "over")
		x := mkfile(t, d, "x", "X")
		_, err := d.(vfs.Linker).Link(ctx, x, "y")
		noErr(t, "Link(x, y)", err)
		mkfile(t, d, "z", "Z")
		noErr(t, "Rename(z, x)", d.Rename(ctx, "z", d, "x"))
		wantContent(t, "x", lookup(t, d, "x"), "Z")
		wantContent(t, "y", lookup(t, d, "y"), "X")
		wantContent(t, "the node of the old x", x, "X")
		if a := attr(t, x); a.Nlink != 1 {
			t.Errorf("Nlink of the old x: got %d, want 1", a.Nlink)
		}
	})
}

func testSymlink(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	s := implements[vfs.Symlinker](t, "root", root)
	mkpaths(t, root, "f", "dir/", "dir/x")
	targets := []string{
		"f",
		"dir",
		"/etc/passwd",
		"/",
		"../../etc/shadow",
		"..",
		"../../../../../../../../../../..",
		"./dir/../f",
		"dir/",
		"nowhere/at/all",
		"with space and ünïcödé",
		strings.Repeat("long/", 800) + "end", // 4003 bytes
	}
	for i, target := range targets {
		name := fmt.Sprintf("link%d", i)
		n, err := s.Symlink(ctx, name, target)
		noErr(t, fmt.Sprintf("Symlink(%q, %.40q)", name, target), err)
		rl, ok := n.(vfs.Readlinker)
		if !ok {
			t.Fatalf("symlink node %T does not implement vfs.Readlinker", n)
		}
		got, err := rl.Readlink(ctx)
		noErr(t, "Readlink", err)
		if got != target {
			t.Errorf("Readlink of %s: got %.60q, want %.60q", name, got, target)
		}
		looked := lookup(t, root, name)
		got, err = looked.(vfs.Readlinker).Readlink(ctx)
		noErr(t, "Readlink of the looked-up node", err)
		if got != target {
			t.Errorf("Readlink of looked-up %s: got %.60q, want %.60q", name, got, target)
		}
		a := attr(t, looked)
		if a.Type() != syscall.S_IFLNK {
			t.Errorf("%s: got mode %#o, want a symlink", name, a.Mode)
		}
		if a.Size != int64(len(target)) {
			t.Errorf("%s: got Size %d, want %d (the target's length)", name, a.Size, len(target))
		}
	}
	// Readlink of anything but a symlink fails as readlink(2) does.
	for _, name := range []string{"f", "dir"} {
		if rl, ok := lookup(t, root, name).(vfs.Readlinker); ok {
			got, err := rl.Readlink(ctx)
			wantErrno(t, fmt.Sprintf("Readlink(%s), not a symlink", name), err, syscall.EINVAL)
			if got != "" {
				t.Errorf("Readlink(%s): got %q, want empty", name, got)
			}
		}
	}
	if rl, ok := root.(vfs.Readlinker); ok {
		_, err := rl.Readlink(ctx)
		wantErrno(t, "Readlink(root)", err, syscall.EINVAL)
	}

	_, err := s.Symlink(ctx, "f", "x")
	wantErrno(t, "Symlink over a file", err, syscall.EEXIST)
	_, err = s.Symlink(ctx, "link0", "x")
	wantErrno(t, "Symlink over a symlink", err, syscall.EEXIST)
	if got, _ := lookup(t, root, "link0").(vfs.Readlinker).Readlink(ctx); got != "f" {
		t.Errorf("link0 after a failed Symlink over it: got target %q, want %q", got, "f")
	}

	// Rename and hard links keep the target; removing a link leaves its
	// target alone.
	noErr(t, "Rename(link0, dir/moved)", root.Rename(ctx, "link0", lookup(t, root, "dir"), "moved"))
	if got, _ := lookup(t, root, "dir", "moved").(vfs.Readlinker).Readlink(ctx); got != "f" {
		t.Errorf("renamed link: got target %q, want %q", got, "f")
	}
	noErr(t, "Remove(dir/moved)", lookup(t, root, "dir").Remove(ctx, "moved", false))
	wantContent(t, "f after removing a link to it", lookup(t, root, "f"), "f")
	err = root.Remove(ctx, "link1", true)
	wantErrno(t, "rmdir of a symlink to a directory", err, syscall.ENOTDIR)
	noErr(t, "Remove(link1)", root.Remove(ctx, "link1", false))
	wantNames(t, "dir after removing a link to it", lookup(t, root, "dir"), "x")
}

// testSymlinkNotFollowed checks that no operation on a symlink's node or
// name reaches the symlink's target: symlinks are resolved, if at all, by
// the client.
func testSymlinkNotFollowed(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	s := implements[vfs.Symlinker](t, "root", root)
	f := mkfile(t, root, "f", "secret")
	mkpaths(t, root, "dir/", "dir/x")
	mkSym := func(name, target string) vfs.Node {
		n, err := s.Symlink(ctx, name, target)
		noErr(t, "Symlink", err)
		return n
	}
	toFile := mkSym("tofile", "f")
	toDir := mkSym("todir", "dir")
	mkSym("dangling", "created-by-following")
	fileAttr := attr(t, f)

	for _, flags := range []int{os.O_RDONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND} {
		h, err := toFile.Open(ctx, flags)
		if err == nil {
			got := readHandle(t, h)
			h.Close()
			t.Errorf("Open(symlink to f, %#o): got a handle (content %q), want an error", flags, got)
		}
	}
	h, err := toDir.Open(ctx, os.O_RDONLY)
	if err == nil {
		h.Close()
		t.Error("Open(symlink to dir): got a handle, want an error")
	}
	n, err := toDir.Lookup(ctx, "x")
	wantErrno(t, "Lookup through a symlink to a directory", err, syscall.ENOTDIR)
	if n != nil {
		t.Errorf("Lookup through a symlink: got node %T, want nil", n)
	}
	_, h, err = toDir.Create(ctx, "new", os.O_RDWR|os.O_CREATE, 0o644)
	wantErrno(t, "Create through a symlink to a directory", err, syscall.ENOTDIR)
	if h != nil {
		h.Close()
	}
	_, err = toDir.Mkdir(ctx, "new", 0o755)
	wantErrno(t, "Mkdir through a symlink to a directory", err, syscall.ENOTDIR)
	err = toDir.Remove(ctx, "x", false)
	wantErrno(t, "Remove through a symlink to a directory", err, syscall.ENOTDIR)

	// Size, mode and times set on a symlink node change the link, if
	// anything, never the file it names.
	toFile.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize, Size: 0})
	toFile.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600})
	toFile.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMtime, Mtime: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)})
	if x, ok := toFile.(vfs.Xattrer); ok {
		x.SetXattr(ctx, "user.gsvfs.follow", []byte("no"), 0)
	}
	// Create on the name of a symlink must not open or create its target.
	for _, name := range []string{"tofile", "dangling"} {
		for _, flags := range []int{os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_CREATE | os.O_TRUNC} {
			_, h, err := root.Create(ctx, name, flags, 0o644)
			if err == nil {
				h.Close()
				t.Errorf("Create(%q, %#o) on a symlink: got a handle, want an error", name, flags)
			}
		}
	}
	_, err = root.Mkdir(ctx, "dangling", 0o755)
	wantErrno(t, "Mkdir on a dangling symlink", err, syscall.EEXIST)
	wantMissing(t, root, "created-by-following")

	a := attr(t, f)
	if a.Size != fileAttr.Size || a.Mode != fileAttr.Mode || !a.Mtime.Equal(fileAttr.Mtime) {
		t.Errorf("f after operations on a symlink to it: got Size %d, mode %#o, Mtime %v; want %d, %#o, %v",
			a.Size, a.Mode, a.Mtime, fileAttr.Size, fileAttr.Mode, fileAttr.Mtime)
	}
	if x, ok := f.(vfs.Xattrer); ok {
		if v, err := x.GetXattr(ctx, "user.gsvfs.follow"); err == nil {
			t.Errorf("f: got xattr %q set through a symlink to it, want none", v)
		}
	}
	wantContent(t, "f", f, "secret")
	wantNames(t, "dir", lookup(t, root, "dir"), "x")
	wantNames(t, "root", root, "f", "dir", "tofile", "todir", "dangling")
}

func testXattr(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	f := mkfile(t, root, "f", "")
	d := mkdir(t, root, "d")
	for _, tc := range []struct {
		name string
		n    vfs.Node
	}{{"File", f}, {"Dir", d}} {
		t.Run(tc.name, func(t *testing.T) {
			x := implements[vfs.Xattrer](t, "node", tc.n)
			const name = "user.gsvfs.test"
			err := x.SetXattr(ctx, name, []byte("v1"), 0)
			if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) {
				t.Skipf("user xattrs not supported here: %v", err)
			}
			noErr(t, "SetXattr", err)
			get := func(name string) string {
				t.Helper()
				v, err := x.GetXattr(ctx, name)
				noErr(t, fmt.Sprintf("GetXattr(%q)", name), err)
				return string(v)
			}
			if got := get(name); got != "v1" {
				t.Errorf("GetXattr: got %q, want %q", got, "v1")
			}
			names, err := x.ListXattr(ctx)
			noErr(t, "ListXattr", err)
			if !slices.Contains(names, name) {
				t.Errorf("ListXattr: got %q, want it to hold %q", names, name)
			}
			err = x.SetXattr(ctx, name, []byte("v2"), xattrCreate)
			wantErrno(t, "SetXattr(XATTR_CREATE) of an existing name", err, syscall.EEXIST)
			err = x.SetXattr(ctx, "user.gsvfs.missing", []byte("v"), xattrReplace)
			wantErrno(t, "SetXattr(XATTR_REPLACE) of a missing name", err, syscall.ENODATA)
			noErr(t, "SetXattr(XATTR_REPLACE)", x.SetXattr(ctx, name, []byte("v2"), xattrReplace))
			if got := get(name); got != "v2" {
				t.Errorf("GetXattr after replace: got %q, want %q", got, "v2")
			}
			noErr(t, "SetXattr(empty value)", x.SetXattr(ctx, "user.gsvfs.empty", nil, 0))
			if got := get("user.gsvfs.empty"); got != "" {
				t.Errorf("GetXattr of an empty value: got %q, want empty", got)
			}
			big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1000)
			noErr(t, "SetXattr(4000 binary bytes)", x.SetXattr(ctx, "user.gsvfs.big", big, 0))
			if got := get("user.gsvfs.big"); got != string(big) {
				t.Errorf("GetXattr of 4000 binary bytes: got %d bytes, want %d (equal: false)", len(got), len(big))
			}

			noErr(t, "RemoveXattr", x.RemoveXattr(ctx, name))
			_, err = x.GetXattr(ctx, name)
			wantErrno(t, "GetXattr after RemoveXattr", err, syscall.ENODATA)
			err = x.RemoveXattr(ctx, name)
			wantErrno(t, "RemoveXattr of a missing name", err, syscall.ENODATA)
			names, err = x.ListXattr(ctx)
			noErr(t, "ListXattr", err)
			if slices.Contains(names, name) {
				t.Errorf("ListXattr after RemoveXattr: got %q, want no %q", names, name)
			}
			if !slices.Contains(names, "user.gsvfs.empty") || !slices.Contains(names, "user.gsvfs.big") {
				t.Errorf("ListXattr: got %q, want user.gsvfs.empty and user.gsvfs.big", names)
			}
		})
	}
}

func testStatFS(t *testing.T, root vfs.Node) {
	s := implements[vfs.StatFSer](t, "root", root)
	st, err := s.StatFS(t.Context())
	noErr(t, "StatFS", err)
	if st.Bfree > st.Blocks || st.Bavail > st.Blocks || st.Ffree > st.Files {
		t.Errorf("StatFS: got Blocks %d, Bfree %d, Bavail %d, Files %d, Ffree %d; want free counts within the totals",
			st.Blocks, st.Bfree, st.Bavail, st.Files, st.Ffree)
	}
}

func testSync(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	_, h := createRW(t, root, "f", 0o644)
	defer closeHandle(t, h)
	s := implements[vfs.Syncer](t, "file handle", h)
	writeAt(t, h, "durable", 0)
	noErr(t, "Sync", s.Sync(ctx))
	if got := readHandle(t, h); got != "durable" {
		t.Errorf("after Sync: got %q, want %q", got, "durable")
	}
}

func testMknod(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	m := implements[vfs.Mknoder](t, "root", root)
	n, err := m.Mknod(ctx, "fifo", syscall.S_IFIFO|0o640, 0)
	noErr(t, "Mknod(FIFO)", err)
	if a := attr(t, n); a.Type() != syscall.S_IFIFO {
		t.Errorf("FIFO: got mode %#o, want %#o", a.Mode, syscall.S_IFIFO)
	}
	if a := attr(t, lookup(t, root, "fifo")); a.Type() != syscall.S_IFIFO {
		t.Errorf("looked-up FIFO: got mode %#o, want %#o", a.Mode, syscall.S_IFIFO)
	}
	_, err = m.Mknod(ctx, "fifo", syscall.S_IFIFO|0o640, 0)
	wantErrno(t, "Mknod over an existing name", err, syscall.EEXIST)
	es := list(t, root)
	if len(es) != 1 || es[0].Name != "fifo" || (es[0].Type != 0 && es[0].Type != syscall.S_IFIFO) {
		t.Errorf("listing: got %+v, want one FIFO called fifo", es)
	}
	noErr(t, "Remove(fifo)", root.Remove(ctx, "fifo", false))
	wantNames(t, "root", root)
}

// testConcurrent creates, writes, renames and removes files from several
// goroutines in one directory: run with -race it shakes out unguarded
// state in a backend.
func testConcurrent(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	d := mkdir(t, root, "d")
	const workers, files = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range files {
				name := fmt.Sprintf("w%d-%d", w, i)
				n, h, err := d.Create(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					t.Errorf("Create(%s): %v", name, err)
					return
				}
				if _, err := h.WriteAt(ctx, []byte(name), 0); err != nil {
					t.Errorf("WriteAt(%s): %v", name, err)
				}
				h.Close()
				if err := d.Rename(ctx, name, d, name+".r"); err != nil {
					t.Errorf("Rename(%s): %v", name, err)
					return
				}
				if _, err := n.Attr(ctx); err != nil {
					t.Errorf("Attr(%s) after rename: %v", name, err)
				}
				if _, err := d.Lookup(ctx, name+".r"); err != nil {
					t.Errorf("Lookup(%s.r): %v", name, err)
				}
				if i%2 == 0 {
					if err := d.Remove(ctx, name+".r", false); err != nil {
						t.Errorf("Remove(%s.r): %v", name, err)
					}
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for w := range workers {
		for i := 1; i < files; i += 2 {
			want = append(want, fmt.Sprintf("w%d-%d.r", w, i))
		}
	}
	wantNames(t, "dir", d, want...)
	for _, name := range want {
		wantContent(t, name, lookup(t, d, name), strings.TrimSuffix(name, ".r"))
	}
}

func testRenameFlags(t *testing.T, root vfs.Node) {
	ctx := t.Context()
	fr := implements[vfs.FlagRenamer](t, "root", root)
	a := mkfile(t, root, "a", "A")
	b := mkfile(t, root, "b", "B")
	wantErrno(t, "RENAME_NOREPLACE onto an existing name",
		fr.RenameFlags(ctx, "a", root, "b", vfs.RenameNoReplace), syscall.EEXIST)
	wantContent(t, "b after a refused NOREPLACE", lookup(t, root, "b"), "B")

	noErr(t, "RENAME_EXCHANGE", fr.RenameFlags(ctx, "a", root, "b", vfs.RenameExchange))
	wantContent(t, "name a after the exchange", lookup(t, root, "a"), "B")
	wantContent(t, "name b after the exchange", lookup(t, root, "b"), "A")
	// Nodes follow their files, as after any rename.
	wantContent(t, "node of the old a", a, "A")
	wantContent(t, "node of the old b", b, "B")
	if got, want := attr(t, lookup(t, root, "b")).Ino, attr(t, a).Ino; got != want {
		t.Errorf("inode at b after the exchange: got %d, want %d (a's file)", got, want)
	}

	noErr(t, "RENAME_NOREPLACE onto a free name", fr.RenameFlags(ctx, "a", root, "c", vfs.RenameNoReplace))
	wantMissing(t, root, "a")
	wantContent(t, "c", lookup(t, root, "c"), "B")
	wantErrno(t, "both flags", fr.RenameFlags(ctx, "b", root, "c", vfs.RenameNoReplace|vfs.RenameExchange), syscall.EINVAL)
}
