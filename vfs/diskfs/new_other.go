//go:build !linux

package diskfs

// FS is, off Linux, the portable tree.
type FS = Portable

// New serves the host directory dir, which must exist.
func New(dir string) (*FS, error) { return NewPortable(dir) }

// NewHiding serves dir, never showing what hide holds.
func NewHiding(dir string, hide *Hidden) (*FS, error) { return NewPortableHiding(dir, hide) }
