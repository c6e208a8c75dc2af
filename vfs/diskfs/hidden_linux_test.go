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

// A hidden directory is left out of a tree by identity: not listed, not
// found, not moved with its parent, not reached by a hard link to a file
// in it, and no tree is rooted at it or inside a sealed one.
func TestHidden(t *testing.T) {
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
		_, err := diskfs.NewHiding(dir, hide)
		wantErrno(t, "a tree at "+dir, err, want)
	}
	f, err := diskfs.NewHiding(home, hide)
	must(t, err)
	root := f.Root()
	ctx := t.Context()
	_, err = root.Lookup(ctx, "state")
	wantErrno(t, "lookup of the hidden state", err, syscall.ENOENT)
	_, err = root.Lookup(ctx, "key-copy")
	wantErrno(t, "lookup of a hard link to a hidden file", err, syscall.EACCES)
	lookup(t, root, "notes")
	if got := names(t, root); !slices.Equal(got, []string{"key-copy", "notes"}) {
		t.Errorf("the tree lists %v, want [key-copy notes]", got)
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
