package daemon

import "github.com/gsvfs/gsvfs/vfs/fusefs"

// FUSEMounts lists the gsvfs FUSE mounts of this machine.
func FUSEMounts() []string { return fusefs.Mounts() }
