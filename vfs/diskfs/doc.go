// Package diskfs serves a host directory as a vfs tree: the disk-backed
// /home, /workspaces and /etc of gsvfs. It is the one package that touches
// host paths, and no name given to it leads outside the directory it
// serves.
//
// On Linux (the _linux.go files) every operation names one element
// relative to a directory the package holds open, with *at system calls
// that never follow a symlink, and nodes keep their identity across
// renames, links and changes made behind the tree's back. Elsewhere (the
// device side on macOS) the tree is Portable, on os.Root, with fewer
// guarantees, listed there.
package diskfs
