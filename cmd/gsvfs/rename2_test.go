//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRenameat2LikeExt4 runs renameat2(2) with RENAME_NOREPLACE and
// RENAME_EXCHANGE through the mount and on native disk, and wants the same
// errors and the same files after. mv -n and atomic swaps rely on them.
func TestRenameat2LikeExt4(t *testing.T) {
	likeNative(t, "renameat2", renameat2Sequence)
}

func renameat2Sequence(t *testing.T, dir string) string {
	t.Helper()
	for name, data := range map[string]string{"a": "A", "b": "B", "d/x": "X"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	step := func(what, from, to string, flags uint) {
		err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, from), unix.AT_FDCWD, filepath.Join(dir, to), flags)
		res := "ok"
		if err != nil {
			res = err.Error()
		}
		a, _ := os.ReadFile(filepath.Join(dir, from))
		b, _ := os.ReadFile(filepath.Join(dir, to))
		out = append(out, what+": "+res+" "+from+"="+string(a)+" "+to+"="+string(b))
	}
	step("noreplace onto a file", "a", "b", unix.RENAME_NOREPLACE)
	step("noreplace onto a free name", "a", "c", unix.RENAME_NOREPLACE)
	step("exchange two files", "b", "c", unix.RENAME_EXCHANGE)
	step("exchange a file and a directory", "b", "d", unix.RENAME_EXCHANGE)
	step("exchange with a missing name", "c", "nothing", unix.RENAME_EXCHANGE)
	step("whiteout", "c", "e", unix.RENAME_WHITEOUT)
	return strings.Join(out, "\n")
}
