//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// daemonFds counts the descriptors the daemon of d has open.
func daemonFds(t *testing.T, d *daemon) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(d.cmd.Process.Pid), "fd"))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// Edits of /etc/namespace leave the daemon's descriptors where they were:
// a host bind taken away closes its tree. (That a line that stays keeps
// its tree, rather than opening it again, is mounts' nsdiff_test's.)
// 200 edits, each waited
// for in the tree, add and take away a second host bind, before and after
// the first, with a comment that changes every time.
func TestNamespaceEditsKeepDescriptorsFlat(t *testing.T) {
	d := startMount(t)
	base := t.TempDir()
	hosts := map[string]string{}
	for _, name := range []string{"h1", "h2"} {
		hosts[name] = filepath.Join(base, name)
		if err := os.MkdirAll(hosts[name], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hosts[name], "marker"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := func(name string) string { return "bind " + hosts[name] + " /workspaces/" + name + "\n" }
	// Written through the tree, where each write is applied at once (on
	// disk, the daemon would look within half a second).
	file := d.Path("etc/namespace")
	// shows waits until the tree shows /workspaces/NAME or not.
	shows := func(name string, want bool) {
		t.Helper()
		ok := testenv.Poll(10*time.Second, func() bool {
			b, err := os.ReadFile(d.Path("workspaces/" + name + "/marker"))
			return (err == nil && string(b) == name) == want
		})
		if !ok {
			t.Fatalf("/workspaces/%s shown: %v after 10 s, want %v\n%s", name, !want, want, d.log)
		}
	}

	if err := os.WriteFile(file, []byte(line("h1")), 0o644); err != nil {
		t.Fatal(err)
	}
	shows("h1", true)
	before := daemonFds(t, d)
	for i := range 200 {
		text := fmt.Sprintf("# edit %d\n", i) + line("h1")
		add := i%2 == 0
		switch i % 4 {
		case 0:
			text = fmt.Sprintf("# edit %d\n", i) + line("h2") + line("h1")
		case 2:
			text += line("h2")
		}
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		shows("h2", add)
	}
	shows("h1", true)
	after := daemonFds(t, d)
	t.Logf("the daemon's descriptors: %d after the first apply, %d after 200 edits", before, after)
	if after > before+8 {
		t.Errorf("the daemon has %d descriptors open after 200 edits of /etc/namespace, %d after the first", after, before)
	}
}
