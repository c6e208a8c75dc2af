//go:build linux

package fusefs

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gsvfs/gsvfs/internal/bounds"
)

// userOpens counts the open files and directories of each ordinary user
// of the mount. Every open holds a descriptor of the daemon, so without a
// bound one user on a shared mount could hold them all and leave root's
// own cat and ls failing with EMFILE. Root and the daemon's own user are
// not counted: they keep working while another user is at the limit.
type userOpens struct {
	max  int64
	warn *bounds.RateLog

	mu sync.Mutex
	n  map[uint32]int64
}

func newUserOpens(max int64, warn *bounds.RateLog) *userOpens {
	return &userOpens{max: max, warn: warn, n: map[uint32]int64{}}
}

var daemonUid = uint32(os.Geteuid())

// take counts an open for the caller and returns the uid to give back at
// release, or EMFILE when the caller is at the limit.
func (u *userOpens) take(ctx context.Context) (uid uint32, counted bool, errno syscall.Errno) {
	uid, ok := boundedUser(ctx)
	if !ok {
		return 0, false, 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[uid] >= u.max {
		u.warn.Warn("user-open-limit", "fuse: a user is at the limit of open files", "uid", uid, "limit", u.max)
		return 0, false, syscall.EMFILE
	}
	u.n[uid]++
	return uid, true, 0
}

// boundedUser is the caller's uid, when what the caller holds is bounded:
// for an ordinary user, not root nor the daemon's own user.
func boundedUser(ctx context.Context) (uint32, bool) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Uid == 0 || caller.Uid == daemonUid {
		return 0, false
	}
	return caller.Uid, true
}

func (u *userOpens) drop(uid uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n[uid]--; u.n[uid] <= 0 {
		delete(u.n, uid)
	}
}
