package ninep

import (
	"context"
	"maps"
	"os"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// sentOf runs fn and returns the requests c sent meanwhile, by type,
// those that go in the background (clunks, notices' polls, flushes)
// left out.
func sentOf(c *Client, fn func()) map[string]int64 {
	before := c.SentByType()
	fn()
	after := c.SentByType()
	for k := range after {
		after[k] -= before[k]
	}
	maps.DeleteFunc(after, func(k string, n int64) bool {
		return n == 0 || k == "clunk" || k == "clunkmany" || k == "watch" || k == "flush"
	})
	return after
}

// generatedFile is a static directory holding one generated file, f,
// served to a client told the server shares its disk (ClientOptions.Exact,
// as `mount --server unix:` is).
func generatedFile(t *testing.T) (*Client, vfs.Node) {
	t.Helper()
	f := vfs.NewFuncFile(0o666, func(context.Context, int) (vfs.Handle, error) {
		return vfs.FuncHandle{}, nil
	})
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": f}))
	return dialWith(t, addr, "", ClientOptions{Exact: true})
}

// An open of a generated file through a client told the server shares
// its disk sends the open alone: it holds nothing of such a file to
// vouch for (a session's ctl and wait, opened through a gateway's mount).
func TestExactOpenOfGeneratedFileSendsOneRequest(t *testing.T) {
	c, root := generatedFile(t)
	f := lookup(t, root, "f")
	for _, flags := range []int{os.O_RDONLY, os.O_WRONLY | os.O_TRUNC} {
		var h vfs.Handle
		var err error
		got := sentOf(c, func() { h, err = f.Open(context.Background(), flags) })
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		if want := map[string]int64{"walkopen": 1}; !maps.Equal(got, want) {
			t.Errorf("open of a generated file with flags %#x sent %v, want %v", flags, got, want)
		}
	}
}
