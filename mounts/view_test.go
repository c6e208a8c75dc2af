package mounts

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
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
	if _, err := vme.Mkdir(ctx, ".SSH", 0o700); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("mkdir of a refused name in capitals (the same on a case-insensitive disk): %v, want EACCES", err)
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

// A view refuses a host path under every name the table gives it, and no
// rename through it moves a refused path to a name that is not refused.
func TestRefusingViewByHostPath(t *testing.T) {
	host := t.TempDir()
	for _, p := range []string{"me/secrets/s.txt", "me/plain/f"} {
		if err := os.MkdirAll(filepath.Join(host, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tab := New()
	for at, dir := range map[string]string{"/home": host, "/workspaces/me": filepath.Join(host, "me")} {
		d, err := diskfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Mount(at, d.Root()); err != nil {
			t.Fatal(err)
		}
	}
	view, err := tab.Refusing([]string{"home/me/secrets/**"})
	if err != nil {
		t.Fatal(err)
	}
	second := walk(t, view, "workspaces", "me")
	if _, err := second.Lookup(ctx, "secrets"); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("lookup of the refused directory by its second name: %v, want ENOENT", err)
	}
	if got := names(t, second); !slices.Equal(got, []string{"plain"}) {
		t.Errorf("the second name lists %v, want [plain]", got)
	}
	home, me := walk(t, view, "home"), walk(t, view, "home", "me")
	for _, c := range []struct {
		from     vfs.Node
		old, new string
		want     syscall.Errno
	}{
		{home, "me", "me2", syscall.EACCES},         // holds the refused tree
		{me, "secrets", "open", syscall.EACCES},     // the refused tree itself
		{second, "secrets", "open", syscall.EACCES}, // by its second name
		{me, "plain", "secrets", syscall.EACCES},    // onto it
		{me, "plain", "plain2", 0},
	} {
		if err := c.from.Rename(ctx, c.old, c.from, c.new); vfs.Errno(err) != c.want {
			t.Errorf("rename %s to %s: %v, want %v", c.old, c.new, err, c.want)
		}
	}
}

// A rename through a view of a directory with more entries than it looks
// through for refused paths is refused, and the log says so, with the
// path: the client sees only EACCES.
func TestRefusingViewRenameTooBigIsLogged(t *testing.T) {
	kids := make(map[string]vfs.Node, maxRenameScan+1)
	for i := range maxRenameScan + 1 {
		kids["f"+strconv.Itoa(i)] = vfs.NewStaticDir(nil)
	}
	tab := New()
	if err := tab.Mount("/big", vfs.NewStaticDir(map[string]vfs.Node{"d": vfs.NewStaticDir(kids)})); err != nil {
		t.Fatal(err)
	}
	logged := &records{}
	old := slog.Default()
	slog.SetDefault(slog.New(logged))
	t.Cleanup(func() { slog.SetDefault(old) })
	view, err := tab.Refusing([]string{"**/.ssh/**"})
	if err != nil {
		t.Fatal(err)
	}
	big := walk(t, view, "big")
	if err := big.Rename(ctx, "d", big, "e"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("rename of a directory too big to look through: %v, want EACCES", err)
	}
	if got := logged.paths(slog.LevelWarn); !slices.Equal(got, []string{"/big/d"}) {
		t.Errorf("warnings logged for paths %v, want [/big/d]", got)
	}
}

// records is a slog handler that keeps what it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// paths are the "path" attributes of the records at level.
func (r *records) paths(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		rec.Attrs(func(a slog.Attr) bool {
			if rec.Level == level && a.Key == "path" {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}
