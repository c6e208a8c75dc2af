package ninep

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// waited counts the requests c sent that its callers waited for: all
// but the change notices' polls and the clunks, which go in the
// background.
func waited(c *Client) int64 {
	var n int64
	for typ, k := range c.SentByType() {
		switch typ {
		case "watch", "notify", "clunk", "clunkmany":
		default:
			n += k
		}
	}
	return n
}

// costOf runs fn and returns the requests it waited for.
func costOf(c *Client, fn func()) int64 {
	before := waited(c)
	fn()
	return waited(c) - before
}

// extDisk serves a fresh disk tree made by mk to a client with the
// extensions and their notices on.
func extDisk(t *testing.T, mk func(dir string)) (*Client, vfs.Node, string) {
	t.Helper()
	dir := t.TempDir()
	mk(dir)
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serve(t, d.Root())
	c, root := dial(t, addr, "")
	if !c.Extended() {
		t.Fatal("a gsvfs client and server did not negotiate the extensions")
	}
	noticesOn(t, c)
	return c, root, dir
}

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// listAll reads the directory h from its start to its end.
func listAll(t *testing.T, h vfs.Handle) []vfs.DirEntry {
	t.Helper()
	var all []vfs.DirEntry
	for off := uint64(0); ; {
		ents, err := h.(vfs.DirReader).ReadDir(context.Background(), off)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			return all
		}
		all = append(all, ents...)
		off = ents[len(ents)-1].Next
	}
}

// listDir looks name up in parent and lists it whole.
func listDir(t *testing.T, parent vfs.Node, name string) (vfs.Node, []vfs.DirEntry) {
	t.Helper()
	d, _, err := vfs.LookupAttr(context.Background(), parent, name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return d, listAll(t, h)
}

// openList opens dir, lists it whole and looks name up in it.
func openList(t *testing.T, dir vfs.Node, name string) vfs.Node {
	t.Helper()
	ctx := context.Background()
	h, err := dir.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatalf("open to list for %q: %v", name, err)
	}
	defer h.Close()
	listAll(t, h)
	kid, _, err := vfs.LookupAttr(ctx, dir, name)
	if err != nil {
		t.Fatalf("lookup of listed %q: %v", name, err)
	}
	return kid
}

// A directory made from a listing and opened by name (never walked) is
// listed in turn; what that listing made is reached through it, walked
// from it by name: `rm -r`, `ls -lR` three levels down.
func TestListedDirsNest(t *testing.T) {
	_, root, _ := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "u/d/a.txt"), "hello\n") })
	ctx := context.Background()
	u := openList(t, root, "u")
	d := openList(t, u, "d")
	a := openList(t, d, "a.txt")
	h, err := a.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatalf("opening u/d/a.txt, each made from a listing: %v", err)
	}
	got, err := vfs.ReadAll(ctx, h, 100)
	h.Close()
	if string(got) != "hello\n" || err != nil {
		t.Errorf("u/d/a.txt: got %q, %v; want hello", got, err)
	}
	if err := d.Remove(ctx, "a.txt", false); err != nil {
		t.Errorf("removing u/d/a.txt through d, made from a listing: %v", err)
	}
	if err := u.Remove(ctx, "d", true); err != nil {
		t.Errorf("removing u/d, emptied: %v", err)
	}
}

// With the extensions an open is one round trip (a walk and an open
// together); a directory's open brings its first entries, so listing a
// small one whole costs nothing more: the server says where it ends.
// A listed file's open for reading is answered by the cache (clazy.go),
// and its first read opens it: a walk and an open together again.
func TestOpenAndListInOneRoundTripEach(t *testing.T) {
	c, root, _ := extDisk(t, func(dir string) {
		for _, n := range []string{"a", "b", "c"} {
			mustWrite(t, filepath.Join(dir, "d", n), n)
		}
	})
	ctx := context.Background()
	d, _, err := vfs.LookupAttr(ctx, root, "d")
	if err != nil {
		t.Fatal(err)
	}
	h := openInOne(t, c, d, "a directory")
	var ents []vfs.DirEntry
	if got := costOf(c, func() { ents = listAll(t, h) }); got != 0 || len(ents) != 3 {
		t.Errorf("listing 3 names to the end: %d requests, %d entries; want 0 and 3", got, len(ents))
	}
	h.Close()
	a, _, err := vfs.LookupAttr(ctx, d, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := costOf(c, func() { h, err = a.Open(ctx, os.O_RDWR) }); err != nil || got != 1 {
		t.Fatalf("opening a listed file for writing: %d requests, %v; want 1", got, err)
	}
	h.Close()
	var fh vfs.Handle
	if got := costOf(c, func() { fh, err = a.Open(ctx, os.O_RDONLY) }); err != nil || got != 0 {
		t.Fatalf("opening a listed file for reading: %d requests, %v; want 0", got, err)
	}
	defer fh.Close()
	buf := make([]byte, 10)
	if got := costOf(c, func() { _, err = fh.ReadAt(ctx, buf, 0) }); got != 2 || !(err == nil || err == io.EOF) || buf[0] != 'a' {
		t.Errorf("first read of a file opened from the cache: %d requests, %q, %v; want 2 (its walk and open, the read), a", got, buf[:1], err)
	}
}

// openInOne opens n for reading and checks it cost one request.
func openInOne(t *testing.T, c *Client, n vfs.Node, what string) vfs.Handle {
	t.Helper()
	var h vfs.Handle
	var err error
	if got := costOf(c, func() { h, err = n.Open(context.Background(), os.O_RDONLY) }); err != nil || got != 1 {
		t.Fatalf("opening %s: %d requests, %v; want 1", what, got, err)
	}
	return h
}

// A create is one round trip, and what follows it on the new file (its
// stat, the xattr a write asks about, a setattr and the stat after)
// costs nothing more than the setattr itself.
func TestCreateInOneRoundTrip(t *testing.T) {
	c, root, dir := extDisk(t, func(string) {})
	ctx := context.Background()
	var kid vfs.Node
	var h vfs.Handle
	var err error
	if got := costOf(c, func() { kid, h, err = root.Create(ctx, "new", os.O_RDWR|os.O_EXCL, 0o640) }); err != nil || got != 1 {
		t.Fatalf("create: %d requests, %v; want 1", got, err)
	}
	defer h.Close()
	got := costOf(c, func() {
		a, err := kid.Attr(ctx)
		if err != nil || a.Mode&0o777 != 0o640 || a.Size != 0 {
			t.Errorf("the new file's stat: %+v, %v", a, err)
		}
		if _, err := kid.(vfs.Xattrer).GetXattr(ctx, "security.capability"); vfs.Errno(err) != syscall.ENODATA {
			t.Errorf("an xattr of the new file: got %v, want ENODATA", err)
		}
	})
	if got != 0 {
		t.Errorf("stat and xattr of the file just made: %d requests, want 0", got)
	}
	if _, a, err := vfs.LookupAttr(ctx, root, "new"); err != nil || a.Mode&0o777 != 0o640 {
		t.Errorf("lookup of the name just made: %+v, %v", a, err)
	}
	if n, err := h.WriteAt(ctx, []byte("data"), 0); n != 4 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	got = costOf(c, func() {
		a, err := kid.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600})
		if err != nil || a.Mode&0o777 != 0o600 || a.Size != 4 {
			t.Errorf("setattr: %+v, %v; want mode 600 and the size written", a, err)
		}
		if b, err := kid.Attr(ctx); err != nil || b != a {
			t.Errorf("stat after setattr: %+v, %v; want what setattr said", b, err)
		}
	})
	if got != 1 {
		t.Errorf("setattr and the stat after it: %d requests, want 1", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new")); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 4 {
		t.Errorf("the new file on the disk: %v, %v", fi, err)
	}
}

// A name just made and then removed is missing, not answered from what
// the make brought.
func TestMadeThenRemovedIsGone(t *testing.T) {
	_, root, _ := extDisk(t, func(string) {})
	ctx := context.Background()
	_, h, err := root.Create(ctx, "f", os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := root.Mkdir(ctx, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "d"} {
		if err := root.Remove(ctx, name, name == "d"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := vfs.LookupAttr(ctx, root, name); vfs.Errno(err) != syscall.ENOENT {
			t.Errorf("lookup of %q made and removed: got %v, want ENOENT", name, err)
		}
	}
}

// A directory this client made is known empty: looking up a name in it
// (what comes before each create of `tar x`) costs nothing, and what is
// made in it is then found.
func TestNewDirectoryKnownEmpty(t *testing.T) {
	c, root, _ := extDisk(t, func(string) {})
	ctx := context.Background()
	d, err := root.Mkdir(ctx, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if got := costOf(c, func() { _, _, err = vfs.LookupAttr(ctx, d, "x") }); vfs.Errno(err) != syscall.ENOENT || got != 0 {
		t.Errorf("lookup in a new directory: %d requests, %v; want 0 and ENOENT", got, err)
	}
	_, h, err := d.Create(ctx, "x", os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, _, err := vfs.LookupAttr(ctx, d, "x"); err != nil {
		t.Errorf("lookup of the file made in the new directory: %v", err)
	}
	hd, err := d.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	if ents := listAll(t, hd); len(ents) != 1 || ents[0].Name != "x" {
		t.Errorf("listing of the new directory: %+v, want x", ents)
	}
}

// The server says which files have no extended attributes, so a
// client answers their misses itself; a file with some is asked.

// lazy says whether n was made from a listing and is not walked yet.
func (n *node) lazy() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.from != nil
}
func TestNoXattrsAnsweredByClient(t *testing.T) {
	c, root, dir := extDisk(t, func(dir string) {
		mustWrite(t, filepath.Join(dir, "plain"), "p")
		mustWrite(t, filepath.Join(dir, "tagged"), "t")
	})
	if err := unix.Setxattr(filepath.Join(dir, "tagged"), "user.tag", []byte("v"), 0); err != nil {
		if errors.Is(err, syscall.ENOTSUP) {
			t.Skipf("SKIP: %s takes no user xattrs: the file with some cannot be made", dir)
		}
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := root.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	listAll(t, h)
	for _, tc := range []struct {
		name, attr string
		want       error
		requests   int64
	}{
		{"plain", "security.selinux", syscall.ENODATA, 0},
		{"plain", "user.tag", syscall.ENODATA, 0},
		{"tagged", "security.selinux", syscall.ENODATA, 1}, // the xattr's walk
		{"tagged", "user.tag", nil, 2},                     // the xattr's walk and its read
	} {
		kid, _, err := vfs.LookupAttr(ctx, root, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if kid.(*node).lazy() && tc.requests > 0 {
			tc.requests++ // and the node's walk, at its first use
		}
		var val []byte
		got := costOf(c, func() { val, err = kid.(vfs.Xattrer).GetXattr(ctx, tc.attr) })
		if !errors.Is(err, tc.want) || got != tc.requests {
			t.Errorf("%s of %s: %d requests, %v; want %d, %v", tc.attr, tc.name, got, err, tc.requests, tc.want)
		}
		if tc.want == nil && string(val) != "v" {
			t.Errorf("%s of %s: %q, want v", tc.attr, tc.name, val)
		}
	}
}

// A file removed while open is stated through its handle as the server
// has it then (no links), not as held before the removal: also when a
// notice of the file's change came between (the echo of this client's
// own write) and its attributes were fetched again.
func TestStatOfRemovedOpenFile(t *testing.T) {
	c, root, _ := extDisk(t, func(string) {})
	ctx := context.Background()
	kid, h, err := root.Create(ctx, "f", os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.WriteAt(ctx, []byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	for _, stat := range []func() (vfs.Attr, error){
		func() (vfs.Attr, error) { return h.(vfs.HandleAttrer).Attr(ctx) },
		func() (vfs.Attr, error) { return kid.Attr(ctx) },
	} {
		if a, err := stat(); err != nil || a.Nlink != 1 {
			t.Fatalf("before the removal: %+v, %v", a, err)
		}
	}
	rootAttr, err := root.Attr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.cache.apply([]vfs.Change{{Dir: rootAttr.Ino, Name: "f"}})
	if a, err := kid.Attr(ctx); err != nil || a.Nlink != 1 {
		t.Fatalf("after a notice: %+v, %v", a, err)
	}
	if err := root.Remove(ctx, "f", false); err != nil {
		t.Fatal(err)
	}
	if a, err := h.(vfs.HandleAttrer).Attr(ctx); err != nil || a.Nlink != 0 || a.Size != 3 {
		t.Errorf("fstat after the removal: nlink %d size %d, %v; want 0 and 3", a.Nlink, a.Size, err)
	}
}

// A directory the client listed and then let go of stays watched for it:
// a file made in it on the disk drops the client's listing. (A disk
// tree's watch of a directory goes with its node, which only the
// client's fids held; the connection holds it while it watches.)
func TestLetGoDirStaysWatched(t *testing.T) {
	_, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "d", "a"), "a") })
	list := func() int {
		d, ents := listDir(t, root, "d")
		d.(vfs.Forgetter).Forget()
		return len(ents)
	}
	if n := list(); n != 1 {
		t.Fatalf("listed %d names, want 1", n)
	}
	for range 5 { // the fids' clunks, then the nodes collected on both ends
		time.Sleep(20 * time.Millisecond)
		runtime.GC()
	}
	mustWrite(t, filepath.Join(dir, "d", "b"), "b")
	waitUntil(t, "a file made on the disk listed", func() bool { return list() == 2 })
}

// noticesSettle waits until c has been told of at least n more changes
// than before, and a little more for the rest of their batch.
func noticesSettle(t *testing.T, c *Client, before int64, n int64) {
	t.Helper()
	waitUntil(t, "the notices of the client's own changes", func() bool { return c.Notices().Changes >= before+n })
	time.Sleep(50 * time.Millisecond)
}

// What a client made in a directory it made, and the notices of it that
// follow (the echoes of its own changes), leave it knowing every name
// there and its files as they are: a lookup of a name not made misses,
// and the new files' stats and xattr misses, without a request.
func TestOwnChangesKeepWhatIsHeld(t *testing.T) {
	c, root, _ := extDisk(t, func(string) {})
	ctx := context.Background()
	before := c.Notices().Changes
	d, err := root.Mkdir(ctx, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	var kids []vfs.Node
	for _, name := range []string{"a", "b"} {
		kid, h, err := d.Create(ctx, name, os.O_RDWR|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kid.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		h.Close()
		kids = append(kids, kid)
	}
	noticesSettle(t, c, before, 3)
	got := costOf(c, func() {
		if _, _, err := vfs.LookupAttr(ctx, d, "c"); vfs.Errno(err) != syscall.ENOENT {
			t.Errorf("lookup of a name never made: %v, want ENOENT", err)
		}
		for _, kid := range kids {
			if a, err := kid.Attr(ctx); err != nil || a.Mode&0o777 != 0o600 {
				t.Errorf("stat of a file made: %+v, %v", a, err)
			}
			if _, err := kid.(vfs.Xattrer).GetXattr(ctx, "security.capability"); vfs.Errno(err) != syscall.ENODATA {
				t.Errorf("xattr of a file made: %v, want ENODATA", err)
			}
		}
	})
	if got != 0 {
		t.Errorf("after the notices of its own changes: %d requests, want 0", got)
	}
}

// What others change is not taken for an echo: a file made on the disk in
// a directory whose names the client holds is found, and a file written
// there is stated anew.
func TestOutsideChangesStillDrop(t *testing.T) {
	c, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "d", "a"), "a") })
	ctx := context.Background()
	d, _ := listDir(t, root, "d")
	a, _, err := vfs.LookupAttr(ctx, d, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := vfs.LookupAttr(ctx, d, "b"); vfs.Errno(err) != syscall.ENOENT {
		t.Fatalf("lookup of b before it is made: %v", err)
	}
	before := c.Notices().Changes
	mustWrite(t, filepath.Join(dir, "d", "b"), "made outside")
	mustWrite(t, filepath.Join(dir, "d", "a"), "written outside")
	noticesSettle(t, c, before, 2)
	if _, _, err := vfs.LookupAttr(ctx, d, "b"); err != nil {
		t.Errorf("lookup of a file made outside: %v", err)
	}
	if got, err := a.Attr(ctx); err != nil || got.Size != int64(len("written outside")) {
		t.Errorf("stat of a file written outside: size %d, %v; want %d", got.Size, err, len("written outside"))
	}
}
