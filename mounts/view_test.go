package mounts

import (
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// A refusing view hides what its patterns match, whatever the request,
// and shows the rest of the same table unchanged.
func TestRefusingView(t *testing.T) {
	tab, root := tree(t)
	home := walk(t, root, "home")
	me, err := home.Mkdir(ctx, "me", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	ssh, err := me.Mkdir(ctx, ".ssh", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, h, err := ssh.Create(ctx, "id_ed25519", os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		t.Fatal(err)
	} else {
		h.Close()
	}
	if _, h, err := me.Create(ctx, "notes", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		t.Fatal(err)
	} else {
		h.Close()
	}
	if _, err := tab.Refusing([]string{"[bad"}); err == nil {
		t.Errorf("a malformed pattern was taken")
	}
	view, err := tab.Refusing([]string{"**/.ssh/**", "sys"})
	if err != nil {
		t.Fatal(err)
	}
	vme := walk(t, view, "home", "me")
	if got := names(t, vme); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("the view lists %v in /home/me, want [notes]", got)
	}
	if got := names(t, view); slices.Contains(got, "sys") {
		t.Errorf("the view lists the refused mount point: %v", got)
	}
	if _, err := vme.Lookup(ctx, ".ssh"); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("lookup of a refused name: %v, want ENOENT", err)
	}
	if _, err := view.Lookup(ctx, "sys"); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("lookup of a refused mount point: %v, want ENOENT", err)
	}
	if err := vme.Remove(ctx, ".ssh", true); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("remove of a refused name: %v, want ENOENT", err)
	}
	if _, err := vme.Mkdir(ctx, ".ssh", 0o700); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("mkdir of a refused name: %v, want EACCES", err)
	}
	if err := vme.Rename(ctx, "notes", vme, ".ssh"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("rename onto a refused name: %v, want EACCES", err)
	}
	if err := vme.Rename(ctx, ".ssh", vme, "keys"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("rename of a refused name: %v, want EACCES", err)
	}
	// The table's own root still sees everything.
	if got := names(t, walk(t, root, "home", "me")); !slices.Equal(got, []string{".ssh", "notes"}) {
		t.Errorf("the whole table lists %v in /home/me", got)
	}
}
