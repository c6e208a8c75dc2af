// Package man embeds the manual pages of gsvfs, so the daemon can serve
// them read-only at /etc/man and `make install` can install the same files.
package man

import "embed"

// Pages holds the roff sources: NAME.SECTION at the top level.
//
//go:embed *.1 *.5 *.7
var Pages embed.FS
