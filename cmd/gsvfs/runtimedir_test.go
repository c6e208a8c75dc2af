//go:build linux

package main

// What lives in the runtime directory rather than the state directory
// (issue 29, items 7 and 9).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// TestServerMountLogsInRuntimeDir mounts a server's tree twice in the
// background with --server: such a mount has no state directory here,
// so each logs in its own runtime directory, never in the default state
// directory that every such mount on the machine would share.
func TestServerMountLogsInRuntimeDir(t *testing.T) {
	vfstest.NeedFUSE(t)
	_, sock := startServe(t)
	base := t.TempDir()
	logs := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		mnt := filepath.Join(base, name)
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		r := lcGsvfs(t, "", "mount", "--server", "unix:"+sock.Addr, mnt)
		m := lcServingLine.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil {
			t.Fatalf("gsvfs mount --server: exit status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		log := m[4]
		if base := gsvfsd.RuntimeBase() + "/"; !strings.HasPrefix(log, base) {
			t.Errorf("mount --server at %s logs to %s, want a file under %s", mnt, log, base)
		}
		if logs[log] {
			t.Errorf("mount --server at %s logs to %s, which another mount uses too", mnt, log)
		}
		logs[log] = true
		if data, err := os.ReadFile(log); err != nil || !strings.Contains(string(data), "msg=serving") {
			t.Errorf("log %s of mount --server: %v, %q, want it to say serving", log, err, data)
		}
		if err := lcGsvfs(t, "", "umount", mnt); err.code != 0 {
			t.Errorf("gsvfs umount %s: %s", mnt, err.stderr)
		}
	}
}
