package ninep

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// listedTree serves a disk tree d/sub/{a,b} to a client with the
// extensions and notices, and returns the server too (its fids).
func listedTree(t *testing.T) (*Server, *Client, vfs.Node) {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "d/sub/a"), "a's")
	mustWrite(t, filepath.Join(dir, "d/sub/b"), "b's")
	fs, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, addr := serve(t, fs.Root())
	c, root := dial(t, addr, "")
	noticesOn(t, c)
	return srv, c, root
}

// kidOfCachedListing returns d, walked, and sub and a, nodes made from
// listings the cache holds: sub never walked (opened and listed from
// the cache), a made from sub's listing, so it pins sub, which has no
// fid of its own yet. What the gateway's mount of a device has after an
// `ls -lR` of a tree its cache holds (a remount's).
func kidOfCachedListing(t *testing.T, c *Client, root vfs.Node) (d, sub, a *node) {
	t.Helper()
	d = lookup(t, root, "d").(*node)
	warm, _ := listDir(t, d, "sub") // the cache holds both listings now
	warm.(vfs.Forgetter).Forget()
	sub = openList(t, d, "sub").(*node)
	var kid vfs.Node
	if cost := costOf(c, func() { kid = openList(t, sub, "a") }); cost != 0 {
		t.Fatalf("listing sub from the cache and looking a up: %d requests, want 0", cost)
	}
	a = kid.(*node)
	if sub.from == nil || a.from != sub {
		t.Fatalf("sub walked (from %v), or a not made from its listing (from %v)", sub.from, a.from)
	}
	return d, sub, a
}

// checkFidBooks fails if the client's free fids hold a number the
// server never gave (0, NoFid) or one twice: handed out again, one fid
// would serve two files, and a clunk of one ends the other's (EBADF).
func checkFidBooks(t *testing.T, c *Client) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[uint32]bool{}
	for _, f := range c.fids.free {
		switch {
		case f == 0 || f == NoFid:
			t.Errorf("fid %#x, never given to a file, is free for reuse", f)
		case seen[f]:
			t.Errorf("fid %d is free twice", f)
		}
		seen[f] = true
	}
}

// settle forgets nodes, lets the collector run their cleanups, and waits
// for the server to hold no more fids than held.
func settle(t *testing.T, srv *Server, c *Client, held int, nodes ...vfs.Node) {
	t.Helper()
	for _, n := range nodes {
		n.(vfs.Forgetter).Forget()
	}
	runtime.GC()
	testenv.WaitFor(t, hangBound, "the server giving back every forgotten fid", func() bool {
		return serverFids(srv) <= held && len(c.clunks) == 0
	})
}

// A node made from the listing of a directory that was never walked,
// and then forgotten (a remount's forgets come in any order), still
// walks from it: the directory is walked first, as if it were not
// forgotten, and its fid goes once its last such node is done. Before,
// it walked from a fid it never had (EBADF), and the last such node's
// end clunked that fid: 0, which the server refused and the client then
// took back as free, so that two files came to share it.
func TestKidOfForgottenDirWalks(t *testing.T) {
	srv, c, root := listedTree(t)
	ctx := context.Background()
	held := serverFids(srv)
	errs := srv.Stats().Errors
	d, sub, a := kidOfCachedListing(t, c, root)
	sub.Forget()
	h, err := a.Open(ctx, os.O_RDWR) // not answered by the cache: a walks
	if err != nil {
		t.Fatalf("opening a, made from the listing of sub, forgotten: %v", err)
	}
	got, err := vfs.ReadAll(ctx, h, 64)
	h.Close()
	if err != nil || string(got) != "a's" {
		t.Errorf("reading a: %q, %v; want a's", got, err)
	}
	settle(t, srv, c, held, a, d)
	checkFidBooks(t, c)
	if n := srv.Stats().Errors - errs; n != 0 {
		t.Errorf("the server answered %d requests with an error", n)
	}
}

// A directory never walked and forgotten before the node made from its
// listing lets go of nothing it does not have: once the node is
// forgotten, or collected unused, no fid is clunked (neither had one),
// and the directory's own pin on the one it would have been walked from
// goes.
func TestForgottenUnwalkedDirClunksNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		letGoA func(a *node)
	}{
		{"kid forgotten", (*node).Forget},
		{"kid collected", func(*node) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, c, root := listedTree(t)
			held := serverFids(srv)
			errs := srv.Stats().Errors
			d, sub, a := kidOfCachedListing(t, c, root)
			sub.Forget()
			tc.letGoA(a)
			a, sub = nil, nil // the collector may take them
			unpinned := func() bool {
				runtime.GC()
				d.mu.Lock()
				defer d.mu.Unlock()
				return d.pins == 0
			}
			testenv.WaitFor(t, hangBound, "d unpinned once sub and a are let go", unpinned)
			settle(t, srv, c, held, d)
			checkFidBooks(t, c)
			if n := srv.Stats().Errors - errs; n != 0 {
				t.Errorf("the server answered %d requests with an error (a clunk of a fid it never gave?)", n)
			}
		})
	}
}
