package diskfs_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// hidingTrees are the two trees a host directory may be served by: the
// Linux one and the portable one (diskfs off Linux), tried here.
var hidingTrees = map[string]func(dir string, hide *diskfs.Hidden) (vfs.Node, error){
	"linux": func(dir string, hide *diskfs.Hidden) (vfs.Node, error) {
		f, err := diskfs.NewHiding(dir, hide)
		if err != nil {
			return nil, err
		}
		return f.Root(), nil
	},
	"portable": func(dir string, hide *diskfs.Hidden) (vfs.Node, error) {
		p, err := diskfs.NewPortableHiding(dir, hide)
		if err != nil {
			return nil, err
		}
		return p.Root(), nil
	},
}

// A hidden directory is left out of a tree by identity: not listed, not
// found, not moved with its parent, not reached by a hard link to a file
// in it (not listed, not found: listing and lookup agree), and no tree is
// rooted at it or inside a sealed one.
func TestHidden(t *testing.T) {
	for tree, serve := range hidingTrees {
		t.Run(tree, func(t *testing.T) { testHidden(t, serve) })
	}
}

func testHidden(t *testing.T, serve func(string, *diskfs.Hidden) (vfs.Node, error)) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	private := filepath.Join(state, "private")
	must(t, os.MkdirAll(filepath.Join(private, "sub"), 0o700))
	must(t, os.MkdirAll(filepath.Join(state, "home"), 0o755))
	must(t, os.WriteFile(filepath.Join(private, "key.pem"), []byte("key"), 0o600))
	must(t, os.Link(filepath.Join(private, "key.pem"), filepath.Join(home, "key-copy")))
	must(t, os.WriteFile(filepath.Join(home, "notes"), nil, 0o644))
	hide := &diskfs.Hidden{}
	must(t, hide.Add(state, false))
	must(t, hide.Add(private, true))

	for dir, want := range map[string]syscall.Errno{state: syscall.EACCES, private: syscall.EACCES,
		filepath.Join(private, "sub"): syscall.EACCES, filepath.Join(state, "home"): 0} {
		_, err := serve(dir, hide)
		wantErrno(t, "a tree at "+dir, err, want)
	}
	root, err := serve(home, hide)
	must(t, err)
	ctx := t.Context()
	_, err = root.Lookup(ctx, "state")
	wantErrno(t, "lookup of the hidden state", err, syscall.ENOENT)
	_, err = root.Lookup(ctx, "key-copy")
	wantErrno(t, "lookup of a hard link to a hidden file", err, syscall.ENOENT)
	lookup(t, root, "notes")
	if got := names(t, root); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("the tree lists %v, want [notes]", got)
	}
	wantErrno(t, "rename of the hidden state", root.Rename(ctx, "state", root, "s2"), syscall.ENOENT)
	wantErrno(t, "remove of the hidden state", root.Remove(ctx, "state", true), syscall.ENOENT)
	_, err = root.Mkdir(ctx, "mid", 0o755)
	must(t, err)
	must(t, os.Rename(state, filepath.Join(home, "mid", "state"))) // the owner moves it
	wantErrno(t, "rename of a directory holding the state", root.Rename(ctx, "mid", root, "mid2"), syscall.EACCES)
	if hd, ok := root.(vfs.HostDirer); ok {
		if _, ok := hd.HostDir(); ok {
			t.Errorf("a tree holding a hidden directory offers itself to the kernel")
		}
	}
}

// The portable tree walks a node's path one name at a time: a directory
// on the way swapped for a symlink into the state directory (on the
// host, or through a second tree of the same directory, which knows
// nothing of the first one's nodes) leads nowhere, so the key is neither
// read, truncated nor moved out; and no tree renames a directory that
// holds the state.
func TestPortableStateSwap(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "share", "gsvfs")
	private := filepath.Join(state, "private")
	must(t, os.MkdirAll(private, 0o700))
	must(t, os.WriteFile(filepath.Join(private, "key.pem"), []byte("the key"), 0o600))
	for _, d := range []string{"d", "x/private"} {
		must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
		must(t, os.WriteFile(filepath.Join(base, d, "key.pem"), []byte("decoy"), 0o644))
	}
	hide := &diskfs.Hidden{}
	must(t, hide.Add(state, false))
	must(t, hide.Add(private, true))
	p, err := diskfs.NewPortableHiding(base, hide)
	must(t, err)
	root, ctx := p.Root(), t.Context()
	file := lookup(t, root, "d", "key.pem")
	dir := lookup(t, root, "x", "private")

	swap := func(name, target string) {
		must(t, os.Rename(filepath.Join(base, name), filepath.Join(base, name+"-old")))
		must(t, os.Symlink(target, filepath.Join(base, name)))
	}
	swap("d", "share/gsvfs/private")
	swap("x", "share/gsvfs")

	if h, err := file.Open(ctx, os.O_RDONLY); err == nil {
		buf := make([]byte, 64)
		n, _ := h.ReadAt(ctx, buf, 0)
		h.Close()
		t.Errorf("open of d/key.pem through a swapped d: read %q, want an error", buf[:n])
	}
	_, _, err = dir.Create(ctx, "key.pem", os.O_RDWR|os.O_TRUNC, 0o644)
	wantErrno(t, "create of x/private/key.pem through a swapped x", err, syscall.ENOTDIR)
	err = dir.Rename(ctx, "key.pem", root, "stolen")
	wantErrno(t, "rename of x/private/key.pem through a swapped x", err, syscall.ENOTDIR)
	if got, err := os.ReadFile(filepath.Join(private, "key.pem")); err != nil || string(got) != "the key" {
		t.Errorf("the key now reads %q, %v; want it untouched", got, err)
	}

	second, err := diskfs.NewPortableHiding(base, hide)
	must(t, err)
	other := second.Root()
	wantErrno(t, "rename of a directory holding the state", other.Rename(ctx, "share", other, "share2"), syscall.EACCES)
	wantErrno(t, "remove of a directory holding the state", other.Remove(ctx, "share", true), syscall.EACCES)
}
