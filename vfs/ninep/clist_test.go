package ninep

import (
	"context"
	"os"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// TestOpenListingFallsBack: a server that speaks the extensions but not
// Twalkreaddir (an older gsvfs: the rogue here) refuses it once; the
// client then opens and lists directories in two requests, without
// asking again.
func TestOpenListingFallsBack(t *testing.T) {
	addr := (&rogue{loop: 3}).serve(t)
	c, root := dialWith(t, addr, "", ClientOptions{})
	ctx := context.Background()
	open := func() (map[string]int64, int64) {
		before := c.SentByType()
		var h vfs.Handle
		var err error
		cost := costOf(c, func() { h, err = root.Open(ctx, os.O_RDONLY) })
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		after := c.SentByType()
		for k := range after {
			after[k] -= before[k]
		}
		return after, cost
	}
	first, _ := open()
	if first["walkreaddir"] != 1 || first["walkopen"] != 1 {
		t.Errorf("first open of a directory sent %v, want a walkreaddir, refused, and a walkopen", first)
	}
	second, cost := open()
	if second["walkreaddir"] != 0 || second["walkopen"] != 1 || cost != 1 {
		t.Errorf("second open sent %v (%d requests), want one walkopen", second, cost)
	}
}
