package daemon

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// put keeps the operator's lines and comments, changes a key in place,
// adds a new one at the end, and read gives back every value.
func TestConfFilePutKeepsOtherLines(t *testing.T) {
	c := &confFile{path: filepath.Join(t.TempDir(), "gsvfs.conf")}
	if err := os.WriteFile(c.path, []byte("# mine\nexec-timeout = 1m\n# max-sessions = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"exec-timeout", "5m"}, {"max-sessions", "9"}} {
		if err := c.put(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# mine\nexec-timeout = 5m\n# max-sessions = 3\nmax-sessions = 9\n"; string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
	got, err := c.read()
	if want := map[string]string{"exec-timeout": "5m", "max-sessions": "9"}; err != nil || !maps.Equal(got, want) {
		t.Errorf("read: %v, %v; want %v", got, err, want)
	}
}

// A new file starts with a line saying what keeps it.
func TestConfFilePutNew(t *testing.T) {
	c := &confFile{path: filepath.Join(t.TempDir(), "gsvfs.conf")}
	if err := c.put("log-level", "debug"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path)
	if want := "# gsvfs settings, kept by /sys/config; see gsvfs-sys(7)\nlog-level = debug\n"; err != nil || string(b) != want {
		t.Errorf("file: %q, %v; want %q", b, err, want)
	}
}
