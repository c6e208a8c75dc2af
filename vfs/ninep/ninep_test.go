package ninep

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// serve starts a server for root on a fresh unix socket and returns its
// address; the server is closed when the test ends.
func serve(t testing.TB, root vfs.Node) (*Server, Address) {
	t.Helper()
	return serveWith(t, root, ServerOptions{})
}

// serveWith is serve with the server's options.
func serveWith(t testing.TB, root vfs.Node, opts ServerOptions) (*Server, Address) {
	t.Helper()
	addr := Address{"unix", filepath.Join(t.TempDir(), "9p.sock")}
	l, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(root, opts)
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return srv, addr
}

// dial connects a client and attaches to aname as root.
func dial(t testing.TB, addr Address, aname string) (*Client, vfs.Node) {
	t.Helper()
	return dialWith(t, addr, aname, ClientOptions{})
}

// dialWith is dial with the client's options.
func dialWith(t testing.TB, addr Address, aname string, opts ClientOptions) (*Client, vfs.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	root, err := c.Attach(ctx, "root", aname, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, root
}

func newDisk(t testing.TB) vfs.Node {
	t.Helper()
	d, err := diskfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d.Root()
}

// TestConformance runs the vfs suite through our client and our server
// over diskfs: both halves of the protocol at once.
func TestConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		_, addr := serve(t, newDisk(t))
		_, root := dial(t, addr, "")
		return root
	})
}
