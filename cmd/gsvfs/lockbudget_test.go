//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// An ordinary user who takes locks on file after file until the mount
// refuses (ENOLCK) has used up only its own budget: root and another user
// still lock, and the user locks again once its locks are gone. (Before,
// the budget was the whole mount's, and such a loop left every other user
// with ENOLCK.)
func TestLocksBudgetPerUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as other users")
	}
	// 2000 opens a user: a quarter of it, 500, is the user's lock budget,
	// well under the 1024 that one mount's users had together before.
	d := smSharedMount(t, "--max-open-per-user", "2000")
	const files = 1100
	dir := filepath.Join(d.Root, "workspaces", "budget")
	smMust(t, "mkdir", os.Mkdir(dir, 0o777))
	smMust(t, "chmod", os.Chmod(dir, 0o777))
	for i := range files + 2 {
		p := filepath.Join(dir, fmt.Sprint("f", i))
		smMust(t, "create", os.WriteFile(p, nil, 0o666))
		smMust(t, "chmod", os.Chmod(p, 0o666))
	}
	file := func(i int) string { return d.Path(fmt.Sprint("workspaces/budget/f", i)) }
	as := func(uid uint32) *syscall.Credential {
		return &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
	}

	hog := newLockAgentAs(t, "uid 1000", as(smOther))
	held, last := 0, ""
	for ; held < files; held++ {
		if last = hog.do("set %d posix w 0 0", hog.open(file(held))); last != "ok" {
			break
		}
	}
	if last != "ENOLCK" {
		t.Fatalf("uid %d locked %d files and then got %q; want ENOLCK at its budget", smOther, held, last)
	}
	t.Logf("uid %d holds write locks on %d files, then ENOLCK", smOther, held)

	root := newLockAgent(t, "root")
	root.must("ok", "set %d posix w 0 0", root.open(file(files)))
	other := newLockAgentAs(t, "uid 1001", as(smOther+1))
	other.must("ok", "set %d posix w 0 0", other.open(file(files+1)))

	// The user's locks go with its process, and its budget with them.
	hog.cmd.Process.Kill()
	hog.cmd.Wait()
	again := newLockAgentAs(t, "uid 1000 again", as(smOther))
	again.must("ok", "set %d posix w 0 0", again.open(file(0)))
}
