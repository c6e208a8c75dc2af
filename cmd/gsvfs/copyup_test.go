//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// A union's copy up runs with the caller's rights, as overlayfs's does
// (issue 29, item 3): an ordinary user opening a lower file for append
// (exec 3>>) copies it only into a layer directory the user may write,
// and only a file the user may read. The copy keeps the lower file's
// owner, mode and times. The first row is the reproduction: a
// 0622 file of root's, another user's 0700 -c layer. New names, too, are
// made in the -c layer only where the caller may write it.
func TestUnionCopyUpCallerRights(t *testing.T) {
	d := smSharedMount(t)
	const bob = smOther + 1
	lowerTime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	lower := filepath.Join(d.Root, "etc", "lower")
	// World-writable, as a shared directory is: the union shows the
	// first layer's mode, which is not what the -c layer's allows.
	smMust(t, "mkdir lower", os.MkdirAll(lower, 0o755))
	smMust(t, "chmod lower", os.Chmod(lower, 0o777))
	for name, mode := range map[string]os.FileMode{"secret": 0o622, "open": 0o666} {
		p := filepath.Join(lower, name)
		smMust(t, "write "+name, os.WriteFile(p, []byte("root's "+name+"\n"), 0o600))
		smMust(t, "chmod "+name, os.Chmod(p, mode))
		smMust(t, "chtimes "+name, os.Chtimes(p, lowerTime, lowerTime))
	}
	layers := map[string]int{"bob": bob, "alice": smOther} // a layer and its owner
	ns := ""
	for name, uid := range layers {
		layer := filepath.Join(d.Root, "home", name, "layer")
		smMust(t, "mkdir layer", os.MkdirAll(layer, 0o700))
		smMust(t, "chown layer", os.Chown(layer, uid, uid))
		ns += "bind /etc/lower /home/shared/" + name + "\nbind -ac /home/" + name + "/layer /home/shared/" + name + "\n"
		smMust(t, "mkdir union", os.MkdirAll(filepath.Join(d.Root, "home", "shared", name), 0o755))
	}
	smMust(t, "write namespace", os.WriteFile(d.Path("etc/namespace"), []byte(ns), 0o644))
	testenv.WaitFor(t, 5*time.Second, "the unions", func() bool {
		_, err1 := os.Stat(d.Path("home/shared/bob/secret"))
		_, err2 := os.Stat(d.Path("home/shared/alice/secret"))
		return err1 == nil && err2 == nil
	})

	for _, c := range []struct {
		name, union, file string
		opened            bool // whether the open for append succeeds
	}{
		{"another user's 0700 layer, root's 0622 file", "bob", "secret", false},
		{"own layer, a file the caller may not read", "alice", "secret", false},
		{"own layer, a file the caller may read", "alice", "open", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := smAsOther(t, d.Path("home/shared/"+c.union), `
				if exec 3>>`+c.file+`; then echo opened; else echo refused; exit 0; fi
				exec 3>&-
				chmod 0644 `+c.file+` 2>/dev/null
				cat `+c.file+` 2>/dev/null`)
			if got := strings.HasPrefix(out, "opened"); got != c.opened {
				t.Errorf("exec 3>>%s as uid %d: %q; want opened %v", c.file, smOther, out, c.opened)
			}
			if c.file == "secret" && strings.Contains(out, "root's secret") {
				t.Errorf("uid %d read root's 0622 file through a copy: %q", smOther, out)
			}
			copied := filepath.Join(d.Root, "home", c.union, "layer", c.file)
			var st unix.Stat_t
			err := unix.Stat(copied, &st)
			if !c.opened {
				if err == nil {
					t.Errorf("a refused copy up left %s (uid %d, mode %o)", copied, st.Uid, st.Mode&0o7777)
				}
				return
			}
			if err != nil {
				t.Fatalf("the copy: %v", err)
			}
			got := fmt.Sprintf("uid %d mode %o mtime %d", st.Uid, st.Mode&0o7777, st.Mtim.Sec)
			if want := fmt.Sprintf("uid 0 mode 666 mtime %d", lowerTime.Unix()); got != want {
				t.Errorf("the copy: %s; want the lower file's %s", got, want)
			}
		})
	}

	for _, c := range []struct{ name, script string }{
		{"a new file", ": > made"},
		{"a new directory", "mkdir made"},
		{"a new symlink", "ln -s x made"},
	} {
		t.Run(c.name+" in another user's 0700 layer", func(t *testing.T) {
			out := smAsOther(t, d.Path("home/shared/bob"), c.script+" && echo made")
			if strings.Contains(out, "made\n") {
				t.Errorf("%s as uid %d in bob's union: %q; want it refused", c.script, smOther, out)
			}
			if _, err := os.Lstat(filepath.Join(d.Root, "home/bob/layer/made")); err == nil {
				t.Errorf("%s as uid %d made a name in bob's 0700 layer", c.script, smOther)
			}
		})
	}
}
