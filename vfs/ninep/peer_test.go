package ninep

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// Every request of a connection names it to the tree (vfs.PeerFrom), and
// no other connection has the same name: what the tree keeps per peer
// (the /dev/log rate) is kept per connection, whatever uids it claims.
func TestRequestsNameTheirConnection(t *testing.T) {
	var mu sync.Mutex
	var peers []uint64
	f := vfs.NewFuncFile(0o666, func(ctx context.Context, _ int) (vfs.Handle, error) {
		mu.Lock()
		peers = append(peers, vfs.PeerFrom(ctx))
		mu.Unlock()
		return vfs.FuncHandle{}, nil
	})
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": f}))
	open := func(root vfs.Node) {
		h, err := walk(t, root, "f").Open(context.Background(), os.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	_, a := dial(t, addr, "")
	_, b := dial(t, addr, "")
	open(a)
	open(a)
	open(b)
	if len(peers) != 3 || peers[0] == 0 || peers[0] != peers[1] || peers[2] == peers[0] || peers[2] == 0 {
		t.Errorf("peers named by two opens on one connection and one on another: %v, want [p p q], p ≠ q, neither 0", peers)
	}
}
