//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// TestMixedOpenModes opens one file several ways at once. With passthrough
// the kernel registers one backing file per inode, named by the first
// open's descriptor; a later open of another mode must still read and
// write as its own flags say.
func TestMixedOpenModes(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"passthrough", nil}, {"no-passthrough", []string{"--no-passthrough"}}} {
		t.Run(mode.name, func(t *testing.T) {
			d := startMount(t, mode.flags...)
			for _, first := range []int{os.O_RDONLY, os.O_WRONLY, os.O_WRONLY | os.O_APPEND} {
				name := d.Path(fmt.Sprintf("workspaces/mixed-%d", first))
				if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
					t.Fatal(err)
				}
				held, err := os.OpenFile(name, first, 0)
				if err != nil {
					t.Fatal(err)
				}
				w, err := os.OpenFile(name, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.WriteAt([]byte("ab"), 2); err != nil {
					t.Errorf("first open %#o: positional write through a second open: %v", first, err)
				}
				w.Close()
				got, err := os.ReadFile(name)
				if want := "01ab456789"; err != nil || string(got) != want {
					t.Errorf("first open %#o: read back %q, %v; want %q", first, got, err, want)
				}
				held.Close()
			}
		})
	}
}

// TestRemovedFilesFreeSpace removes files through the mount and checks
// that the daemon soon holds no descriptor of a deleted file, so their
// space is given back as on a local disk. (A removed directory's O_PATH
// descriptor may live until the daemon's next garbage collection; it holds
// no data.)
func TestRemovedFilesFreeSpace(t *testing.T) {
	d := startMount(t)
	dir := d.Path("workspaces/free")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 1<<20)
	for i := range 20 {
		name := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Read(make([]byte, 10))
		f.Close()
	}
	testenv.Run(t, "/", "rm", "-rf", dir)
	fdDir := fmt.Sprintf("/proc/%d/fd", d.cmd.Process.Pid)
	testenv.Eventually(t, 10*time.Second, "the daemon holds no descriptor of a deleted file after rm -rf", func() (bool, string) {
		n := 0
		ents, _ := os.ReadDir(fdDir)
		for _, e := range ents {
			p := filepath.Join(fdDir, e.Name())
			target, _ := os.Readlink(p)
			fi, err := os.Stat(p)
			if strings.HasSuffix(target, " (deleted)") && err == nil && fi.Mode().IsRegular() {
				n++
			}
		}
		return n == 0, fmt.Sprintf("%d held", n)
	})
}
