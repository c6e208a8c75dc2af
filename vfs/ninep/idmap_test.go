package ninep

import (
	"context"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// The server's user 1000:1000 shows as this machine's 0:0.
var testIDs = &IDMap{Uid: 1000, Gid: 1000, LocalUid: 0, LocalGid: 0}

func TestIDMapAttr(t *testing.T) {
	for _, c := range []struct {
		m                *IDMap
		uid, gid         uint32
		wantUid, wantGid uint32
	}{
		{testIDs, 1000, 1000, 0, 0},
		{testIDs, 1001, 1000, Nobody, 0},
		{testIDs, 0, 0, Nobody, Nobody},
		{testIDs, 1000, 27, 0, Nobody},
		{nil, 1001, 27, 1001, 27},
	} {
		got := c.m.attr(vfs.Attr{Ino: 5, Uid: c.uid, Gid: c.gid})
		if got.Uid != c.wantUid || got.Gid != c.wantGid {
			t.Errorf("%v maps %d:%d to %d:%d, want %d:%d", c.m, c.uid, c.gid, got.Uid, got.Gid, c.wantUid, c.wantGid)
		}
	}
}

func TestIDMapToServer(t *testing.T) {
	for _, c := range []struct {
		s         vfs.SetAttr
		wantUid   uint32
		wantGid   uint32
		wantErrno syscall.Errno
	}{
		{s: vfs.SetAttr{Valid: vfs.SetUid | vfs.SetGid, Uid: 0, Gid: 0}, wantUid: 1000, wantGid: 1000},
		{s: vfs.SetAttr{Valid: vfs.SetUid, Uid: 1000}, wantErrno: syscall.EPERM},
		{s: vfs.SetAttr{Valid: vfs.SetGid, Gid: Nobody}, wantErrno: syscall.EPERM},
		{s: vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600, Uid: 7}, wantUid: 7},
	} {
		got, err := testIDs.toServer(c.s)
		if vfs.Errno(err) != c.wantErrno && !(err == nil && c.wantErrno == 0) {
			t.Errorf("toServer(%+v): %v, want errno %v", c.s, err, c.wantErrno)
			continue
		}
		if err == nil && (got.Uid != c.wantUid || got.Gid != c.wantGid) {
			t.Errorf("toServer(%+v) = %d:%d, want %d:%d", c.s, got.Uid, got.Gid, c.wantUid, c.wantGid)
		}
	}
}

func TestIDMapNewGid(t *testing.T) {
	ctx := vfs.WithCaller(context.Background(), vfs.Caller{Uid: 5, Gid: 27})
	if got := testIDs.newGid(ctx); got != 1000 {
		t.Errorf("over an IDMap a new file's group is %d, want the server's own 1000", got)
	}
	if got := (*IDMap)(nil).newGid(ctx); got != 27 {
		t.Errorf("with no IDMap a new file's group is %d, want the caller's 27", got)
	}
	if !testIDs.hidesXattr("system.posix_acl_access") || testIDs.hidesXattr("user.x") || (*IDMap)(nil).hidesXattr("system.posix_acl_access") {
		t.Errorf("hidesXattr: want only POSIX ACLs hidden, and only over an IDMap")
	}
}
