package vfs_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gsvfs/gsvfs"

// imports lists, for every package of the module, the packages it imports
// directly (tests excluded).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		m[strings.TrimPrefix(f[0], module+"/")] = f[1:]
	}
	return m
}

// TestDependenciesPointOneWay keeps the layout of docs/architecture.md true:
// vfs, internal/filestamp and internal/bounds use only the standard
// library; each third-party library has one importer; backends and edges
// never import each other; the daemon's composition (internal/daemon) is
// the command's alone, and the client of a running daemon
// (internal/client) speaks 9P and knows nothing of how one is composed.
func TestDependenciesPointOneWay(t *testing.T) {
	all := imports(t)
	onlyImporter := map[string][]string{
		"github.com/hanwen/go-fuse/v2": {"vfs/fusefs"},
		"github.com/creack/pty":        {"shelld"},
		"github.com/spf13/cobra":       {"cmd/gsvfs"},
		"golang.org/x/term":            {"cmd/gsvfs"}, // attach's raw terminal
		// vfs/ninep only for a unix socket's peer on macOS, where the
		// standard library has no call for it; vfs/fusefs for kernel
		// binds laid by descriptor (openat2, open_tree, move_mount);
		// cmd/gsvfs for dup2 onto stdout and stderr at a log rotation,
		// which the standard library lacks on linux/arm64.
		// internal/fsmodel for the model checker's mmap,
		// copy_file_range and fallocate. shelld for a session's
		// namespace binds, laid by descriptor as kernel binds are.
		"golang.org/x/sys/unix":         {"vfs/diskfs", "vfs/ninep", "vfs/fusefs", "cmd/gsvfs", "internal/fsmodel", "shelld"},
		"golang.org/x/sync":             {"vfs/ninep", "internal/daemon", "mounts"}, // mounts: the roots of /mnt stated at once
		"github.com/charmbracelet/x/vt": {"shelld"},                                 // /proc/<id>/screen
		"github.com/bmatcuk/doublestar": {"mounts"},                                 // refused paths
		"github.com/fsnotify/fsnotify":  {"vfs/diskfs"},                             // changes made outside
		"github.com/robfig/cron/v3":     {"crond"},
	}
	forbidden := map[string][]string{
		"vfs/diskfs": {"mounts", "vfs/fusefs", "cmd/gsvfs"},
		"vfs/fusefs": {"mounts", "vfs/diskfs", "cmd/gsvfs"},
		"mounts":     {"vfs/diskfs", "vfs/fusefs", "vfs/ninep", "cmd/gsvfs"},
		"vfs/ninep":  {"mounts", "vfs/diskfs", "vfs/fusefs", "cmd/gsvfs"},
		// Sessions are processes; they know nothing of files.
		"shelld":   {"vfs", "mounts", "vfs/diskfs", "vfs/fusefs", "vfs/ninep", "cmd/gsvfs"},
		"devices":  {"mounts", "vfs/diskfs", "vfs/fusefs", "cmd/gsvfs", "shelld", "procfs"},
		"sysfs":    {"vfs/diskfs", "vfs/fusefs", "vfs/ninep", "cmd/gsvfs", "shelld", "procfs", "devices", "devfs"},
		"crond":    {"vfs", "mounts", "vfs/diskfs", "vfs/fusefs", "vfs/ninep", "cmd/gsvfs", "procfs", "sysfs", "devices"},
		"devfs":    {"mounts", "vfs/diskfs", "vfs/fusefs", "vfs/ninep", "cmd/gsvfs", "shelld", "procfs", "devices"},
		"docs/man": {"vfs", "mounts"},
	}
	// Packages that only the ones listed may import.
	onlyImportedBy := map[string][]string{
		"internal/daemon": {"cmd/gsvfs"},
		// The model checker is for tests and its own small command
		// (which the tests run as another user and in the VM).
		"internal/fsmodel": {"internal/fsmodel/fsx"},
	}
	// Packages that may import, from this module, only the ones listed.
	onlyImports := map[string][]string{
		// shelld for the type of a session's status.
		"internal/client":  {"vfs", "vfs/ninep", "shelld"},
		"internal/fsmodel": {},
	}
	// The centre, and the helpers every part may use, stand on the
	// standard library alone.
	stdlibOnly := []string{"vfs", "internal/filestamp", "internal/bounds"}
	for pkg, imps := range all {
		for _, imp := range imps {
			if slices.Contains(stdlibOnly, pkg) && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s; it may use only the standard library", pkg, imp)
			}
			for lib, owners := range onlyImporter {
				if strings.HasPrefix(imp, lib) && !slices.Contains(owners, pkg) {
					t.Errorf("%s imports %s; only %s may", pkg, imp, strings.Join(owners, ", "))
				}
			}
			if slices.Contains(forbidden[pkg], strings.TrimPrefix(imp, module+"/")) {
				t.Errorf("%s imports %s, against the direction of dependencies", pkg, imp)
			}
			checkOwnImport(t, pkg, imp, onlyImportedBy, onlyImports)
		}
	}
	if len(all["vfs"]) == 0 || len(all["cmd/gsvfs"]) == 0 {
		t.Fatalf("go list found too little: %v", all)
	}
}

// checkOwnImport checks pkg's import imp against the rules of
// onlyImportedBy and onlyImports, which concern the module's packages.
func checkOwnImport(t *testing.T, pkg, imp string, onlyImportedBy, onlyImports map[string][]string) {
	t.Helper()
	own, ok := strings.CutPrefix(imp, module+"/")
	if !ok {
		return
	}
	if importers, ok := onlyImportedBy[own]; ok && !slices.Contains(importers, pkg) {
		t.Errorf("%s imports %s; only %s may", pkg, own, strings.Join(importers, ", "))
	}
	if allowed, ok := onlyImports[pkg]; ok && !slices.Contains(allowed, own) {
		t.Errorf("%s imports %s; of this module it may import only %s", pkg, own, strings.Join(allowed, ", "))
	}
}
