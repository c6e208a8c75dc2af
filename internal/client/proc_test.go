package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// statusJSON is what a daemon's /proc/7/status holds, on one line.
const statusJSON = `{"id":"7","status":"running","command":"make","outputBytes":12}`

// procTree is a tree with a /proc of one session, 7.
func procTree() vfs.Node {
	session := vfs.NewStaticDir(map[string]vfs.Node{"status": vfs.NewTextFile([]byte(statusJSON + "\n"))})
	proc := vfs.NewStaticDir(map[string]vfs.Node{
		"clone": vfs.NewTextFile([]byte("8\n")),
		"7":     session,
	})
	return vfs.NewStaticDir(map[string]vfs.Node{"proc": proc})
}

// mountedProc is procTree laid out as the files of a mounted tree.
func mountedProc(t *testing.T) Proc {
	t.Helper()
	mnt := t.TempDir()
	dir := filepath.Join(mnt, "proc", "7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "proc", "clone"), []byte("8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(statusJSON+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenMount(mnt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servedProc is procTree served over 9P on a unix socket.
func servedProc(t *testing.T) Proc {
	t.Helper()
	a := ninep.Address{Network: "unix", Addr: filepath.Join(t.TempDir(), "9p.sock")}
	l, err := ninep.Listen(a)
	if err != nil {
		t.Fatal(err)
	}
	srv := ninep.NewServer(procTree(), ninep.ServerOptions{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("close the server: %v", err)
		}
		if err := <-served; !errors.Is(err, ninep.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	c, err := Dial(a)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Both ways to /proc read the same sessions, statuses and files, and
// name a session that is not there the same way.
func TestProcBothWays(t *testing.T) {
	for name, open := range map[string]func(*testing.T) Proc{"mount": mountedProc, "9p": servedProc} {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			defer c.Close()
			names, err := c.Sessions()
			if err != nil || !slices.Equal(names, []string{"7"}) {
				t.Errorf("sessions: %q, %v; want [7]", names, err)
			}
			st, err := ReadStatus(c, "7")
			if err != nil {
				t.Fatal(err)
			}
			if st.ID != "7" || st.Command != "make" || st.Output != 12 || string(st.Raw) != statusJSON {
				t.Errorf("status: %+v, raw %s", st.Status, st.Raw)
			}
			if _, err := ReadStatus(c, "9"); !errors.Is(err, ErrNoSession) {
				t.Errorf("status of a session not there: %v; want ErrNoSession", err)
			}
			if b, err := ReadFile(c, "clone"); err != nil || string(b) != "8\n" {
				t.Errorf("clone: %q, %v", b, err)
			}
		})
	}
}

// A directory that holds no /proc/clone is no gsvfs mount.
func TestOpenMountRefusesOtherDirs(t *testing.T) {
	if _, err := OpenMount(t.TempDir()); err == nil {
		t.Error("OpenMount of an empty directory succeeded")
	}
}

// A session name is one directory of /proc, never a path or a file of
// /proc itself.
func TestValidSessionName(t *testing.T) {
	for _, id := range []string{"7", "cron-daily-3"} {
		if err := ValidSessionName(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "..", "../etc", "a/b", "clone", "status"} {
		if err := ValidSessionName(id); err == nil {
			t.Errorf("%q was taken as a session name", id)
		}
	}
}
