package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// build makes a tree on a fresh state directory, closed at the test's end.
func build(t *testing.T, o Options) *Tree {
	t.Helper()
	root, err := PrepareRoot(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Build(root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tr
}

// names lists the directory at p of the tree.
func names(t *testing.T, tr *Tree, p string) []string {
	t.Helper()
	ctx := context.Background()
	n, err := vfs.Walk(ctx, tr.Root, strings.Trim(p, "/"))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	ents, err := vfs.ReadDirAll(ctx, n)
	if err != nil {
		t.Fatalf("readdir %s: %v", p, err)
	}
	var out []string
	for _, e := range ents {
		if e.Name != "." && e.Name != ".." {
			out = append(out, e.Name)
		}
	}
	slices.Sort(out)
	return out
}

// A daemon's tree holds the state directory's disk trees and its
// services, /proc only where it serves sessions, which its capabilities
// and what it tells gateways say too; Close (in build's cleanup) ends it.
func TestBuildComposesTheTree(t *testing.T) {
	for _, noSessions := range []bool{false, true} {
		tr := build(t, Options{Self: "gsv", NoSessions: noSessions, Version: "test"})
		want := []string{"dev", "etc", "home", "mnt", "proc", "sys", "workspaces"}
		if noSessions {
			want = slices.DeleteFunc(want, func(s string) bool { return s == "proc" })
		}
		if got := names(t, tr, "/"); !slices.Equal(got, want) {
			t.Errorf("no sessions %v: / holds %q, want %q", noSessions, got, want)
		}
		shell := slices.Contains(tr.caps.list(), "shell.exec")
		told := slices.Contains(tr.Facts().Implements, "shell.exec")
		if shell == noSessions || told == noSessions {
			t.Errorf("no sessions %v: capabilities %q, facts %+v", noSessions, tr.caps.list(), tr.Facts())
		}
		if tr.Facts().Version != "test" {
			t.Errorf("facts %+v: want version test", tr.Facts())
		}
	}
}

// A --bind is served at its path, and one that cannot be served fails
// the build rather than being left out.
func TestBuildBinds(t *testing.T) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "note"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := build(t, Options{Self: "gsv", Binds: []string{host + ":/workspaces/src"}})
	if got := names(t, tr, "/workspaces/src"); !slices.Equal(got, []string{"note"}) {
		t.Errorf("/workspaces/src holds %q, want [note]", got)
	}
	root, err := PrepareRoot(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"relative:/x", host + ":/", filepath.Join(host, "none") + ":/x"} {
		if tr, err := Build(root, Options{Self: "gsv", Binds: []string{bad}}); err == nil {
			tr.Close()
			t.Errorf("--bind %s was taken", bad)
		}
	}
}

// A device's tree the mount table refuses is not mounted, and nothing
// else changes: the refusal goes to the log, as nobody waits for it.
func TestMountDeviceRefused(t *testing.T) {
	tr := build(t, Options{Self: "gsv"})
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	mountDevice(tr.Table, "../x", vfs.NewStaticDir(nil))
	mountDevice(tr.Table, "alpha", vfs.NewStaticDir(nil))
	if got := names(t, tr, "/mnt"); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("/mnt holds %q, want [alpha]", got)
	}
	if !strings.Contains(logged.String(), "path=/mnt/../x") {
		t.Errorf("the refusal is not in the log:\n%s", logged.String())
	}
}
