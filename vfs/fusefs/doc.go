// Package fusefs mounts a vfs tree with FUSE. It is the one package that
// imports go-fuse.
//
// Stored files keep the fast path: a handle backed by a host descriptor is
// handed to the kernel (FUSE passthrough), so reads, writes and mmap run
// against the backing file without a round trip to the daemon; the kernel
// may cache entries and attributes for Options.CacheTime. Generated
// (volatile) files get direct I/O and no attribute cache, so every read
// reaches the daemon and sees current content.
//
// It is built for Linux only: the device side on other systems serves
// its tree over 9P and needs no FUSE.
package fusefs
