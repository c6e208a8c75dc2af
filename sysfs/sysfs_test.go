package sysfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

func read(t *testing.T, dir vfs.Node, name string) string {
	t.Helper()
	ctx := context.Background()
	n, err := dir.Lookup(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	buf := make([]byte, 4096)
	k, err := h.ReadAt(ctx, buf, 0)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(buf[:k])
}

func TestFiles(t *testing.T) {
	started := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	now := started.Add(90*time.Minute + 5*time.Second)
	tab := mounts.New()
	tab.MountAs("/home", vfs.NewStaticDir(nil), "disk /state/home")
	tab.Mount("/mnt", vfs.NewStaticDir(nil))
	caps := []string{"fs.read"}
	sys := New(Options{Version: "1.2.3", Started: started, Clock: func() time.Time { return now },
		Capabilities: func() []string { return caps }, Table: tab})
	for name, want := range map[string]string{
		"uptime":       "5405 1h30m5s since 2026-11-24T10:00:00Z\n",
		"capabilities": "fs.read\n",
		"mounts":       "/home\tdisk /state/home\n/mnt\t-\n",
	} {
		if got := read(t, sys, name); got != want {
			t.Errorf("/sys/%s: got %q, want %q", name, got, want)
		}
	}
	if got := read(t, sys, "version"); !strings.HasPrefix(got, "gsvfs 1.2.3 ") {
		t.Errorf("/sys/version: %q", got)
	}
	// Live: what changes shows at the next open.
	caps = append(caps, "shell.exec")
	tab.MountAs("/mnt/lap", vfs.NewStaticDir(nil), "device lap")
	if got := read(t, sys, "capabilities"); got != "fs.read\nshell.exec\n" {
		t.Errorf("/sys/capabilities after a change: %q", got)
	}
	if got := read(t, sys, "mounts"); !strings.Contains(got, "/mnt/lap\tdevice lap\n") {
		t.Errorf("/sys/mounts after a mount: %q", got)
	}
}

func TestStats(t *testing.T) {
	started := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	tab := mounts.New()
	tab.MountAs("/home", vfs.NewStaticDir(map[string]vfs.Node{"f": vfs.NewTextFile([]byte("hello"))}), "disk")
	home, err := tab.Root().Lookup(context.Background(), "home")
	if err != nil {
		t.Fatal(err)
	}
	read(t, home, "f")
	if _, err := home.Lookup(context.Background(), "missing"); err == nil {
		t.Fatal("lookup of a missing name")
	}
	sys := New(Options{Started: started, Clock: func() time.Time { return started.Add(time.Minute) }, Table: tab,
		Sessions: func() (int, int) { return 2, 7 }, Devices: func() (int, int) { return 1, 3 },
		Links: func() []Link {
			return []Link{{Device: "lap", Online: true, Requests: 51000, ByType: map[string]int64{"read": 1000, "walk": 30000, "getattr": 20000}}}
		},
		Edges: func() []Edge {
			return []Edge{{Name: "9p unix:/s", Connections: 1, Requests: 10, Errors: 2, Read: 1536, Written: 3 << 20}}
		},
		DevLog: func() LogCounts { return LogCounts{Lines: 12, Bytes: 800, DroppedLines: 5000, DroppedBytes: 2 << 20} }})
	got := read(t, sys, "stats")
	for _, want := range []string{
		"uptime 1m0s\n",
		"sessions live 2 total 7\n",
		"devices online 1 known 3\n",
		"device lap online yes requests sent 51000 notices 0\n",
		"device lap requests walk 30000 getattr 20000 read 1000\n",
		"dev/log lines 12 written 800 B dropped lines 5000 written 2.0 MiB\n",
		"edge 9p unix:/s connections 1 requests 10 errors 2 read 1.5 KiB written 3.0 MiB\n",
		"tree /home requests 3 errors 0 read 5 B written 0 B\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/sys/stats lacks %q:\n%s", want, got)
		}
	}
}

// fakeCron is a crontab of a given owner, group and mode.
type fakeCron struct{ uid, gid, perm uint32 }

func (c fakeCron) Table() []byte                   { return []byte("job\t@hourly\tsecret command\n") }
func (c fakeCron) History() []byte                 { return []byte("job\tcron-job-1\n") }
func (c fakeCron) Control(string) error            { return nil }
func (c fakeCron) Access() (uid, gid, perm uint32) { return c.uid, c.gid, c.perm }

// /sys/cron's jobs and history have the crontab's owner, group and read
// bits, and its ctl the write bits, asked at each stat, so the edges let
// read them only who may read the crontab, and run its jobs only who may
// write it.
func TestCronGuarded(t *testing.T) {
	ctx := context.Background()
	c := &fakeCron{1000, 50, 0o640}
	root := New(Options{Table: mounts.New(), Cron: c})
	for _, tc := range []struct {
		perm, read, write uint32
	}{{0o640, 0o440, 0o200}, {0o600, 0o400, 0o200}, {0o755, 0o444, 0o200}, {0o664, 0o444, 0o220}} {
		c.perm = tc.perm
		for name, want := range map[string]uint32{"cron/jobs": tc.read, "cron/history": tc.read, "cron/ctl": tc.write} {
			n, err := vfs.Walk(ctx, root, name)
			if err != nil {
				t.Fatal(err)
			}
			a, err := n.Attr(ctx)
			if err != nil || a.Uid != 1000 || a.Gid != 50 || a.Mode != syscall.S_IFREG|want {
				t.Errorf("/sys/%s of a crontab %o: uid %d gid %d mode %o, %v; want 1000, 50, %o",
					name, tc.perm, a.Uid, a.Gid, a.Mode, err, syscall.S_IFREG|want)
			}
		}
	}
}

// /sys/users lists the directories of /home with their owners.
func TestUsers(t *testing.T) {
	tab := mounts.New()
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/alice", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/notes", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	tab.Mount("/home", d.Root())
	got := read(t, New(Options{Table: tab}), "users")
	want := fmt.Sprintf("alice\tuid=%d", os.Getuid())
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "home=/home/alice\n") || strings.Contains(got, "notes") {
		t.Errorf("/sys/users: %q, want a line for alice (uid %d) alone", got, os.Getuid())
	}
}

func TestConfig(t *testing.T) {
	value := "30m"
	var set []string
	sys := New(Options{Table: mounts.New(), Config: []ConfigKey{
		{Name: "root", Get: func() string { return "/state" }},
		{Name: "join", Secret: true, Get: func() string { return "gsvfs1.secret" }},
		{Name: "session-retention", Get: func() string { return value }, Set: func(v string) error {
			if _, err := time.ParseDuration(v); err != nil {
				return err
			}
			value = v
			set = append(set, v)
			return nil
		}},
	}})
	config, err := sys.Lookup(context.Background(), "config")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, config, "join"); got != "********\n" {
		t.Errorf("a secret reads %q", got)
	}
	if got := read(t, config, "root"); got != "/state\n" {
		t.Errorf("root reads %q", got)
	}
	write := func(name, data string) error {
		n, err := config.Lookup(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		h, err := n.Open(context.Background(), os.O_WRONLY|os.O_TRUNC)
		if err != nil {
			return err
		}
		if _, err := h.WriteAt(context.Background(), []byte(data), 0); err != nil {
			h.Close()
			return err
		}
		return h.Close()
	}
	if err := write("session-retention", "10m\n"); err != nil || value != "10m" {
		t.Errorf("a writable key: %v, value %q", err, value)
	}
	if err := write("session-retention", "soon\n"); vfs.Errno(err) != syscall.EINVAL || value != "10m" {
		t.Errorf("a bad value: %v, value %q", err, value)
	}
	if err := write("session-retention", "2h"); err != nil || value != "2h" {
		t.Errorf("a value without a newline, at close: %v, value %q", err, value)
	}
	// EACCES, as Linux's sysfs says of an attribute that cannot be set.
	if err := write("root", "/elsewhere\n"); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("a read-only key: %v, want EACCES", err)
	}
}
