//go:build !linux

package shelld

import "syscall"

// Systems without Linux's /proc have no table of processes to scan from
// the standard library. A process group is found by signalling it instead:
// kill(-pgid, 0) succeeds while any member lives, zombies included, and
// the group answers as the one id -pgid, which kill(2) takes for all of
// it. Members of a session that moved to groups of their own go unseen
// there, so ending a session ends its first group only (gsvfs-proc(7)).

// sessionPids lists what to signal to reach the live processes of
// terminal session sid: its process group, named by the session leader.
func sessionPids(sid int) []int { return groupPids(sid) }

// groupPids lists what to signal to reach the live processes of process
// group pgid: the group itself, while any member lives.
func groupPids(pgid int) []int {
	if pgid <= 0 || syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	return []int{-pgid}
}
