package daemon

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/shelld"
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

// The counts and durations of /sys/config take only values above zero,
// and say what they want; a value taken is what the key reads after.
func TestSettingsPositive(t *testing.T) {
	mgr := shelld.NewManager(shelld.DefaultConfig())
	defer mgr.Close()
	keys := map[string]setting{}
	for _, s := range writableSettings(mgr, new(slog.LevelVar)) {
		keys[s.name] = s
	}
	for name, want := range map[string]string{"max-sessions": "a positive whole number", "exec-timeout": "a positive duration"} {
		for _, bad := range []string{"0", "-1", "x", ""} {
			if err := keys[name].set(bad); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s = %q: %v; want an error saying %q", name, bad, err, want)
			}
		}
	}
	for name, good := range map[string]string{"max-sessions": "7", "exec-timeout": "2m0s"} {
		if err := keys[name].set(good); err != nil || keys[name].get() != good {
			t.Errorf("%s = %s: %v, reads %q", name, good, err, keys[name].get())
		}
	}
}
