//go:build !linux

package fusefs

// threadGroup is the process of a caller: FUSE on other systems names the
// process itself.
func threadGroup(pid int) int { return pid }
