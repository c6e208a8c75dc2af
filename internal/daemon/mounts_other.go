//go:build !linux

package daemon

// FUSEMounts lists the gsvfs FUSE mounts of this machine: none here, where
// gsvfs has no FUSE edge.
func FUSEMounts() []string { return nil }
