package sysfs

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs"
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
