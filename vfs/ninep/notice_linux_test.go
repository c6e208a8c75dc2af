//go:build linux

package ninep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// The client's cache against real servers of a host directory: ours,
// whose notices keep it true, and diod, which sends none.

// serveHostDir serves a diskfs tree of a fresh host directory, which the
// tests then change behind the server's back.
func serveHostDir(t *testing.T) (*Server, Address, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, addr := serve(t, d.Root())
	return srv, addr, dir
}

// freeze stops the client's cache clock, so an entry kept for CacheTTL
// stays until the test moves the clock on: what shows a change before
// that is a notice.
func freeze(c *Client) *testenv.Clock {
	f := testenv.NewClock(time.Now())
	c.cache.mu.Lock()
	c.cache.now = f.Now
	c.cache.mu.Unlock()
	return f
}

// warmPass is what an `ls -l` asks of every file: the directory's
// listing, and of each name its attributes and the xattrs ls asks for.
func warmPass(t *testing.T, root vfs.Node, names ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := vfs.ReadDirAll(ctx, root); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		n, err := root.Lookup(ctx, name)
		if err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
		if _, err := n.Attr(ctx); err != nil {
			t.Fatal(err)
		}
		for _, x := range []string{"security.selinux", "system.posix_acl_access"} {
			if _, err := n.(vfs.Xattrer).GetXattr(ctx, x); !errors.Is(err, syscall.ENODATA) {
				t.Fatalf("getxattr %s %s: %v, want ENODATA", name, x, err)
			}
		}
	}
	if _, err := root.Lookup(ctx, "absent"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of a missing name: %v, want ENOENT", err)
	}
}

func attrOf(t *testing.T, dir vfs.Node, name string) (vfs.Attr, error) {
	t.Helper()
	n, err := dir.Lookup(context.Background(), name)
	if err != nil {
		return vfs.Attr{}, err
	}
	return n.Attr(context.Background())
}

// TestNoticesKeepCacheTrue: against a gsvfs server, what the client
// caches costs no round trip when asked again (listings, attributes,
// xattr misses, missing names), and a change made on the server's disk
// behind its back shows at once, by the server's notice, though the
// cache's clock stands still.
func TestNoticesKeepCacheTrue(t *testing.T) {
	srv, addr, dir := serveHostDir(t)
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("one"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, root := dial(t, addr, "")
	clock := freeze(c)
	waitUntil(t, "the server's notices", func() bool { return c.Notices().On })
	ctx := context.Background()
	f, err := root.Lookup(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	warmPass(t, root, "a", "b")
	before := srv.Stats().Requests
	warmPass(t, root, "a", "b")
	// Lookups of names found walk (2); the rest is the cache's.
	if got := srv.Stats().Requests - before; got > 2 {
		t.Errorf("a warm pass sent %d requests, want at most 2 (the walks)", got)
	}
	clock.Advance(time.Hour) // notices, not time, keep it: nothing expires
	before = srv.Stats().Requests
	f.Attr(ctx)
	if got := srv.Stats().Requests - before; got != 0 {
		t.Errorf("a watched file's attributes an hour on cost %d requests, want 0", got)
	}

	changes := []struct {
		what   string
		change func() error
		shows  func() bool
	}{
		{"a write", func() error { return os.WriteFile(filepath.Join(dir, "a"), []byte("longer"), 0o644) },
			func() bool { a, _ := f.Attr(ctx); return a.Size == int64(len("longer")) }},
		{"a chmod", func() error { return os.Chmod(filepath.Join(dir, "a"), 0o600) },
			func() bool { a, _ := f.Attr(ctx); return a.Mode&0o777 == 0o600 }},
		{"a creation", func() error { return os.WriteFile(filepath.Join(dir, "absent"), nil, 0o644) },
			func() bool { _, err := attrOf(t, root, "absent"); return err == nil && listed(root, "absent") }},
		{"a removal", func() error { return os.Remove(filepath.Join(dir, "b")) },
			func() bool {
				_, err := attrOf(t, root, "b")
				return errors.Is(err, syscall.ENOENT) && !listed(root, "b")
			}},
		{"an xattr set", func() error { return syscall.Setxattr(filepath.Join(dir, "a"), "user.k", []byte("v"), 0) },
			func() bool { v, err := f.(vfs.Xattrer).GetXattr(ctx, "user.k"); return err == nil && string(v) == "v" }},
	}
	for _, ch := range changes {
		f.(vfs.Xattrer).GetXattr(ctx, "user.k") // cache the miss too
		if err := ch.change(); err != nil {
			t.Fatalf("%s: %v", ch.what, err)
		}
		waitUntil(t, ch.what+" showing through the client", ch.shows)
	}
}

// listed says whether name is in dir's listing.
func listed(dir vfs.Node, name string) bool {
	ents, _ := vfs.ReadDirAll(context.Background(), dir)
	for _, e := range ents {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestCacheTTLWithPlainPeer: diod, a plain 9P2000.L server, sends no
// notices; the client still mounts and walks it, caches what it said for
// CacheTTL (a warm pass costs no round trip), and shows a change made on
// the disk once that has passed.
func TestCacheTTLWithPlainPeer(t *testing.T) {
	addr, dir := startDiod(t)
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, root := dialPeer(t, addr, dir)
	if c.Extended() || c.Notices().On {
		t.Fatalf("diod: extended %v, notices %v; want neither", c.Extended(), c.Notices().On)
	}
	clock := freeze(c)
	ctx := context.Background()
	b, err := vfs.Walk(ctx, root, "sub/b")
	if err != nil {
		t.Fatalf("walk sub/b: %v", err)
	}
	if got := iopContent(t, root, "a"); got != "one" {
		t.Fatalf("read a: %q", got)
	}
	a1, err := attrOf(t, root, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a, _ := attrOf(t, root, "a"); a.Size != a1.Size {
		t.Errorf("within CacheTTL: size %d, want the cached %d", a.Size, a1.Size)
	}
	clock.Advance(CacheTTL)
	if a, _ := attrOf(t, root, "a"); a.Size != int64(len("longer")) {
		t.Errorf("after CacheTTL: size %d, want %d", a.Size, len("longer"))
	}
	if !listed(root, "new") {
		t.Error("after CacheTTL: a file made on the disk is not listed")
	}
	if ba, err := b.Attr(ctx); err != nil || ba.Size != 3 {
		t.Errorf("sub/b: %+v, %v", ba, err)
	}
}
