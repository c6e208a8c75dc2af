package diskfs

import (
	"fmt"
	"io/fs"
)

// ErrHidden is why a tree is not served at a hidden directory, or inside
// a sealed one (see Hidden): a permission error (EACCES) of its own, so a
// caller can tell it from a directory it may not open.
var ErrHidden = fmt.Errorf("the daemon's private state, which no tree serves: %w", fs.ErrPermission)
