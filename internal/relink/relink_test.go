package relink

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// TestOfflineACLIsAbsent: while the far end is away, a POSIX ACL reads as
// absent (ls -l and the kernel's permission check go on with the last
// attributes); any other attribute fails with EHOSTDOWN.
func TestOfflineACLIsAbsent(t *testing.T) {
	root := New(Options{Where: "/mnt/x", Current: func() *Link { return nil }}).Root().(vfs.Xattrer)
	ctx := context.Background()
	for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		if _, err := root.GetXattr(ctx, name); !errors.Is(err, syscall.ENODATA) {
			t.Errorf("%s while offline: %v, want ENODATA", name, err)
		}
	}
	if _, err := root.GetXattr(ctx, "user.x"); !errors.Is(err, syscall.EHOSTDOWN) {
		t.Errorf("user.x while offline: %v, want EHOSTDOWN", err)
	}
}
