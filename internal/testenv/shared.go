package testenv

import (
	"os"
	"testing"
)

// SharedDir makes a directory of the given mode in the system's temporary
// directory, removed when the test ends. t.TempDir's directories sit in
// one only their owner may enter; a test that acts as another user (a
// session's shell, a set-id program, a helper run as nobody) needs a
// directory that user can reach.
func SharedDir(t testing.TB, pattern string, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}
