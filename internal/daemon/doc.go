// Package daemon is what a gsvfs daemon is made of, and how it ends.
//
// A daemon serves one state directory (PrepareRoot makes it), which it
// claims for as long as it runs (ClaimRoot, a lock in the runtime
// directory, where its socket is too: runtime.go). Build
// composes its tree in one mounts.Table: the directory's disk trees, the
// manual, the host directories of --bind and of the namespace file,
// /dev, /sys, /proc's shell sessions, and the devices' gateway at
// /sys/devices and /mnt. It reads the settings kept in the directory's
// etc/gsvfs.conf, and starts the tree's goroutines on one context: the
// gateway's watch of its devices, the watcher of etc/namespace, the
// reaper of finished sessions and crond, in one errgroup.
//
// The command serves the tree it gets (FUSE, 9P listeners, device
// links) and stops those edges first; Tree.Close then cancels the
// context, waits for the group, and ends the links and the sessions,
// killing their processes.
package daemon
