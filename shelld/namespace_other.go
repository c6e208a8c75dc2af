//go:build !linux

package shelld

import "os/exec"

// mayUnshareMounts: only Linux has mount namespaces; sessions see the
// host's paths, and the tree's reach them through `ctl cwd`.
func mayUnshareMounts() bool { return false }

func unshareMounts(*exec.Cmd) {}

// RunInit returns at once: no session is ever started in a namespace of
// its own here.
func RunInit() {}
