package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SelfFds counts this process's open descriptors whose target, as
// /proc/self/fd names it ("/dir/f (deleted)", "anon_inode:inotify"),
// satisfies match; a nil match counts them all. It skips the test where
// there is no /proc/self/fd (macOS), since a leak cannot be seen there.
func SelfFds(t testing.TB, match func(target string) bool) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("SKIPPED: no /proc/self/fd to count descriptors: %v", err)
	}
	n := 0
	for _, e := range ents {
		if match == nil {
			n++
			continue
		}
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && match(target) {
			n++
		}
	}
	return n
}
