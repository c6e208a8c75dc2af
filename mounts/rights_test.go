package mounts

import (
	"context"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// permitted takes the owner's, group's or others' bits as the kernel's
// generic check does, and lets root read and write anything.
func TestPermitted(t *testing.T) {
	file := func(mode, uid, gid uint32) vfs.Attr {
		return vfs.Attr{Mode: syscall.S_IFREG | mode, Uid: uid, Gid: gid}
	}
	as := func(uid, gid uint32) context.Context {
		return vfs.WithCaller(context.Background(), vfs.Caller{Uid: uid, Gid: gid})
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		a    vfs.Attr
		want uint32
		ok   bool
	}{
		{"others may write, not read", as(1000, 1000), file(0o622, 0, 0), mayRead, false},
		{"others' write bit", as(1000, 1000), file(0o622, 0, 0), mayWrite, true},
		{"owner's bits, not others'", as(1000, 1000), file(0o066, 1000, 0), mayRead, false},
		{"group's bits", as(1000, 50), file(0o640, 0, 50), mayRead, true},
		{"root reads a 0000 file", as(0, 0), file(0, 1000, 1000), mayRead | mayWrite, true},
		{"root executes only with an x bit", as(0, 0), file(0o644, 1000, 1000), mayExec, false},
		{"the daemon's own call", context.Background(), file(0, 1000, 1000), mayRead, true},
	} {
		if got := permitted(c.ctx, c.a, c.want); got != c.ok {
			t.Errorf("%s: got %v, want %v", c.name, got, c.ok)
		}
	}
}
