package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/sysfs"
)

// The settings of /sys/config. A writable one applies at once and is
// kept in the state directory's etc/gsvfs.conf ("key = value" lines, which
// the operator may edit too), read at the next start; a flag given on the
// command line wins over the file.

func confPath(root string) string { return filepath.Join(root, "etc", "gsvfs.conf") }

// Fact is a read-only key of /sys/config: a setting the daemon was
// started with.
func Fact(name, value string) sysfs.ConfigKey {
	return sysfs.ConfigKey{Name: name, Get: func() string { return value }}
}

// setting is a writable key: its current value and how to apply one.
type setting struct {
	name string
	get  func() string
	set  func(string) error
}

// writableSettings are the keys /sys/config may change: the sessions'
// (for sessions made from then on) and the log's level.
func writableSettings(mgr *shelld.Manager, logLevel *slog.LevelVar) []setting {
	conf := func(change func(*shelld.Config)) { mgr.Configure(change) }
	count := func(name string, apply func(int)) func(string) error {
		return positive(name, "a positive whole number", strconv.Atoi, apply)
	}
	duration := func(name string, apply func(time.Duration)) func(string) error {
		return positive(name, "a positive duration such as 30m", time.ParseDuration, apply)
	}
	cfg := mgr.Config
	return []setting{
		{"session-shell", func() string { return cfg().Shell }, func(v string) error {
			if fi, err := os.Stat(v); !filepath.IsAbs(v) || err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return fmt.Errorf("session-shell: %q is no executable file", v)
			}
			conf(func(c *shelld.Config) { c.Shell = v })
			return nil
		}},
		{"session-output", func() string { return strconv.Itoa(cfg().OutputCap) },
			count("session-output", func(n int) { conf(func(c *shelld.Config) { c.OutputCap = n }) })},
		{"exec-timeout", func() string { return cfg().ExecTimeout.String() },
			duration("exec-timeout", func(d time.Duration) { conf(func(c *shelld.Config) { c.ExecTimeout = d }) })},
		{"session-retention", func() string { return cfg().Retention.String() },
			duration("session-retention", func(d time.Duration) { conf(func(c *shelld.Config) { c.Retention = d }) })},
		{"session-idle", func() string { return cfg().Idle.String() },
			duration("session-idle", func(d time.Duration) { conf(func(c *shelld.Config) { c.Idle = d }) })},
		{"max-sessions", func() string { return strconv.Itoa(cfg().MaxLive) },
			count("max-sessions", func(n int) { conf(func(c *shelld.Config) { c.MaxLive = n }) })},
		{"session-umask", func() string {
			if u := cfg().Umask; u != nil {
				return fmt.Sprintf("%04o", *u)
			}
			return ""
		}, func(v string) error {
			u, err := ParseUmask(v)
			if err != nil {
				return err
			}
			conf(func(c *shelld.Config) { c.Umask = &u })
			return nil
		}},
		{"log-level", func() string { return strings.ToLower(logLevel.Level().String()) }, func(v string) error {
			var l slog.Level
			if err := l.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("log-level: want debug, info, warn or error, not %q", v)
			}
			logLevel.Set(l)
			return nil
		}},
	}
}

// positive is the setter of a key whose value parse reads and that must
// be above zero; want says what it takes, when refused.
func positive[T int | time.Duration](name, want string, parse func(string) (T, error), apply func(T)) func(string) error {
	return func(v string) error {
		x, err := parse(v)
		if err != nil || x <= 0 {
			return fmt.Errorf("%s: want %s, not %q", name, want, v)
		}
		apply(x)
		return nil
	}
}

// configKeys is /sys/config: the read-only facts given, then the
// writable settings, each write kept in the conf file.
func configKeys(root string, facts []sysfs.ConfigKey, settings []setting) []sysfs.ConfigKey {
	keys := slices.Clone(facts)
	store := &confFile{path: confPath(root)}
	for _, s := range settings {
		keys = append(keys, sysfs.ConfigKey{Name: s.name, Get: s.get, Set: func(v string) error {
			if err := s.set(v); err != nil {
				return err
			}
			return store.put(s.name, v)
		}})
	}
	return keys
}

// applyConf applies the conf file's settings at start, but those given
// on the command line.
func applyConf(root string, settings []setting, explicit map[string]bool) {
	values, err := (&confFile{path: confPath(root)}).read()
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			slog.Warn("config file not read", "file", confPath(root), "err", err)
		}
		return
	}
	for _, s := range settings {
		v, ok := values[s.name]
		if !ok || explicit[s.name] {
			continue
		}
		if err := s.set(v); err != nil {
			slog.Warn("config file: value refused", "file", confPath(root), "key", s.name, "err", err)
		}
	}
}

// confFile is the state directory's etc/gsvfs.conf.
type confFile struct {
	path string
	mu   sync.Mutex
}

func (c *confFile) read() (map[string]string, error) {
	f, err := os.Open(c.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// put keeps key = value in the file, other lines as they are.
func (c *confFile) put(key, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := os.ReadFile(c.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var lines []string
	found := false
	for _, line := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			line, found = key+" = "+value, true
		}
		if line != "" || len(lines) > 0 {
			lines = append(lines, line)
		}
	}
	if !found {
		if len(lines) == 0 {
			lines = append(lines, "# gsvfs settings, kept by /sys/config; see gsvfs-sys(7)")
		}
		lines = append(lines, key+" = "+value)
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

// ParseUmask reads a session umask given in octal (--session-umask,
// /sys/config/session-umask).
func ParseUmask(s string) (int, error) {
	u, err := strconv.ParseUint(s, 8, 32)
	if err != nil || u > 0o777 {
		return 0, fmt.Errorf("--session-umask %q: want an octal mask from 0 to 0777, such as 022", s)
	}
	return int(u), nil
}
