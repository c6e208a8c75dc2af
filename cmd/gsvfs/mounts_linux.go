package main

import "github.com/gsvfs/gsvfs/vfs/fusefs"

// gsvfsMounts lists the gsvfs FUSE mounts of this machine.
func gsvfsMounts() []string { return fusefs.Mounts() }
