package ninep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// diskTree makes a directory of n files of different sizes and modes on
// a disk tree and returns the tree's root and the directory's host path.
func diskTree(t *testing.T, n int) (vfs.Node, string) {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%04d", i))
		if err := os.WriteFile(p, make([]byte, i*7), 0o600|os.FileMode(i%2)*0o044); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1_600_000_000+int64(i)*3600, int64(i)*1000)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d.Root(), dir
}

// sameAsDisk checks a remote file's attributes against the host's lstat.
func sameAsDisk(t *testing.T, what string, a vfs.Attr, hostPath string) {
	t.Helper()
	fi, err := os.Lstat(hostPath)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != fi.Size() || a.Mode&0o777 != uint32(fi.Mode().Perm()) || a.IsDir() != fi.IsDir() || !a.Mtime.Equal(fi.ModTime()) {
		t.Errorf("%s: got size %d, mode %o, mtime %v; the disk has %d, %v, %v",
			what, a.Size, a.Mode, a.Mtime, fi.Size(), fi.Mode(), fi.ModTime())
	}
}

// lsL does what `ls -l` does through a client: list the directory, then
// look up and stat every entry. It returns the requests the server saw.
func lsL(t *testing.T, srv *Server, root vfs.Node, hostDir string) int64 {
	t.Helper()
	ctx := context.Background()
	before := srv.Stats().Requests
	h, err := root.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for off := uint64(0); ; {
		ents, err := h.(vfs.DirReader).ReadDir(ctx, off)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Attr == nil {
				t.Fatalf("entry %q came without attributes from a gsvfs server", e.Name)
			}
			sameAsDisk(t, "listed "+e.Name, *e.Attr, filepath.Join(hostDir, e.Name))
			names = append(names, e.Name)
		}
		off = ents[len(ents)-1].Next
	}
	for _, name := range names {
		_, a, err := vfs.LookupAttr(ctx, root, name)
		if err != nil {
			t.Fatalf("LookupAttr(%q): %v", name, err)
		}
		sameAsDisk(t, "looked up "+name, a, filepath.Join(hostDir, name))
	}
	h.Close()
	return srv.Stats().Requests - before
}

// `ls -l` of a directory costs the same few round trips however many
// entries it has (while they fit one message): the listing brings each
// entry's attributes (Treaddirplus) and the lookups that follow are
// answered from it. Plain 9P2000.L costs a walk and a getattr per entry.
func TestListingStatsInConstantRoundTrips(t *testing.T) {
	var costs []int64
	for _, n := range []int{10, 300} {
		tree, dir := diskTree(t, n)
		srv, addr := serve(t, tree)
		c, root := dial(t, addr, "")
		if !c.Extended() {
			t.Fatal("a gsvfs client and server did not negotiate the extensions")
		}
		noticesOn(t, c)
		cost := lsL(t, srv, root, dir)
		t.Logf("ls -l of %d entries: %d requests", n+1, cost)
		costs = append(costs, cost)
	}
	if costs[1] != costs[0] {
		t.Errorf("ls -l of 301 entries took %d requests, of 11 entries %d: want the same", costs[1], costs[0])
	}
}

// A lookup with its stat (what FUSE's LOOKUP needs) is one round trip.
func TestLookupAttrOneRoundTrip(t *testing.T) {
	tree, dir := diskTree(t, 3)
	srv, addr := serve(t, tree)
	c, root := dial(t, addr, "")
	noticesOn(t, c)
	for _, name := range []string{"f0002", "sub"} {
		before := srv.Stats().Requests
		kid, a, err := vfs.LookupAttr(context.Background(), root, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.Stats().Requests - before; got != 1 {
			t.Errorf("LookupAttr(%q): %d requests, want 1", name, got)
		}
		sameAsDisk(t, name, a, filepath.Join(dir, name))
		// The node works as any other: its own stat asks the server.
		b, err := kid.Attr(context.Background())
		if err != nil || b != a {
			t.Errorf("Attr of %q after LookupAttr: got %+v, %v; want %+v", name, b, err, a)
		}
	}
	if _, _, err := vfs.LookupAttr(context.Background(), root, "missing"); vfs.Errno(err) != syscall.ENOENT {
		t.Errorf("LookupAttr of a missing name: got %v, want ENOENT", err)
	}
}

// A node made from a listing, without a walk, is the file listed: used
// after its name was given to another file, it fails with ESTALE rather
// than reach the other one; used while it is still there, it works.
func TestListedNodeIsTheFileListed(t *testing.T) {
	tree, dir := diskTree(t, 2)
	_, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	ctx := context.Background()
	h, err := root.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.(vfs.DirReader).ReadDir(ctx, 0); err != nil {
		t.Fatal(err)
	}
	same, err := root.Lookup(ctx, "f0001")
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := root.Lookup(ctx, "f0000")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("another file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, filepath.Join(dir, "f0000")); err != nil {
		t.Fatal(err)
	}
	if _, err := replaced.Open(ctx, os.O_RDONLY); vfs.Errno(err) != syscall.ESTALE {
		t.Errorf("opening a listed file whose name another file has now: got %v, want ESTALE", err)
	}
	fh, err := same.Open(ctx, os.O_RDONLY)
	if err != nil {
		t.Fatalf("opening a listed file still there: %v", err)
	}
	got, err := vfs.ReadAll(ctx, fh, 1<<20)
	fh.Close()
	if err != nil || len(got) != 7 {
		t.Errorf("reading a listed file: got %d bytes, %v; want 7", len(got), err)
	}
}

// The clunks of many forgotten nodes go many to a request (Tclunkmany),
// and every fid is given back on the server.
func TestForgetsClunkInBatches(t *testing.T) {
	const nodes = 1000
	tree, _ := diskTree(t, 1)
	srv, addr := serve(t, tree)
	c, root := dial(t, addr, "")
	noticesOn(t, c)
	held := serverFids(srv) // the root's, the notices'
	var kids []vfs.Node
	for range nodes {
		kids = append(kids, walk(t, root, "f0000"))
	}
	before := srv.Stats().Requests
	for _, k := range kids {
		k.(vfs.Forgetter).Forget()
	}
	testenv.WaitFor(t, hangBound, "the server giving back every forgotten fid", func() bool { return serverFids(srv) <= held })
	if got := srv.Stats().Requests - before; got > nodes/4 {
		t.Errorf("forgetting %d nodes took %d requests, want at most %d", nodes, got, nodes/4)
	}
}

// serverFids counts the fids the server holds on all its connections.
func serverFids(srv *Server) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := 0
	for c := range srv.conns {
		c.mu.Lock()
		n += len(c.fids)
		c.mu.Unlock()
	}
	return n
}

// On a connection that negotiated plain 9P2000.L, the extensions are
// refused as any unknown request is, and the connection goes on.
func TestExtensionsRefusedOnPlainConnection(t *testing.T) {
	tree, _ := diskTree(t, 1)
	_, addr := serve(t, tree)
	rc := wireAttach(t, addr)
	defer rc.nc.Close()
	for _, m := range []Message{
		&Twalkgetattr{Twalk{Fid: 1, NewFid: 2, Names: []string{"f0000"}}},
		&Treaddirplus{Treaddir{Fid: 1, Count: 4000}},
		&Tclunkmany{Fids: []uint32{1}},
		&Tmkdirget{NewFid: 2, Tmkdir: Tmkdir{Dfid: 1, Name: "d", Mode: 0o755}},
	} {
		got := rc.rpc(t, 2, m)
		if e, ok := got.(*Rlerror); !ok || syscall.Errno(e.Ecode) != syscall.EOPNOTSUPP {
			t.Errorf("%T on a plain connection: got %#v, want Rlerror EOPNOTSUPP", m, got)
		}
	}
	if _, ok := rc.rpc(t, 3, &Twalk{Fid: 1, NewFid: 2, Names: []string{"f0000"}}).(*Rwalk); !ok {
		t.Error("a walk after the refusals failed")
	}
}

// fuzzExtSession renegotiates the extensions and runs each of them.
func fuzzExtSession() []Message {
	const root, dir, file = 1, 2, 3
	return []Message{
		&Tversion{Msize: fuzzMsize, Version: VersionExt},
		&Tattach{Fid: root, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}},
		&Tlcreate{Fid: root, Name: "f", Flags: wO_RDWR, Mode: 0o644},
		&Tattach{Fid: dir, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}},
		&Twalkgetattr{Twalk{Fid: dir, NewFid: file, Names: []string{"f"}}},
		&Tlopen{Fid: dir, Flags: wO_DIRECTORY},
		&Treaddirplus{Treaddir{Fid: dir, Offset: 0, Count: 4000}},
		&Treaddirplus{Treaddir{Fid: dir, Offset: 1, Count: 200}},
		&Tsetattrget{Tsetattr{Fid: file, Valid: SetattrMode, Mode: 0o600}},
		&Tattach{Fid: 8, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}},
		&Twalkopen{NodeFid: 5, Twalk: Twalk{Fid: 8, NewFid: 4, Names: []string{"f"}}, Flags: 0},
		&Twalkopen{NodeFid: 4, Twalk: Twalk{Fid: 8, NewFid: 4}}, // a fid given twice: refused
		&Tcreateget{NewFid: 6, NodeFid: 7, Tlcreate: Tlcreate{Fid: 8, Name: "g", Flags: wO_RDWR, Mode: 0o644}},
		&Tmkdirget{NewFid: 9, Tmkdir: Tmkdir{Dfid: 8, Name: "h", Mode: 0o755}},
		&Tmkdirget{NewFid: 9, Tmkdir: Tmkdir{Dfid: 8, Name: "i", Mode: 0o755}}, // a fid in use: refused
		&Tclunkmany{Fids: []uint32{file, dir, 4, 5, 6, 7, 8, 9, 99}},
	}
}

// countingDir counts the lookups made in it.
type countingDir struct {
	vfs.Node
	lookups atomic.Int64
}

func (d *countingDir) Lookup(ctx context.Context, name string) (vfs.Node, error) {
	d.lookups.Add(1)
	return d.Node.Lookup(ctx, name)
}

// A listing whose caller wants only the names (ls -f, find without
// stats) asks for attributes with its first batch only: the server is
// not made to stat every entry of a large directory for nothing.
func TestNamesOnlyListingStopsStating(t *testing.T) {
	const n = 300
	tree, _ := diskTree(t, n)
	dir := &countingDir{Node: tree}
	_, addr := serve(t, dir)
	_, root := dialWith(t, addr, "", ClientOptions{Msize: 8192}) // some 40 entries a batch
	ents, err := vfs.ReadDirAll(context.Background(), root)
	if err != nil || len(ents) != n+1 {
		t.Fatalf("listing: %d entries, %v; want %d", len(ents), err, n+1)
	}
	if got := dir.lookups.Load(); got == 0 || got > n/4 {
		t.Errorf("listing %d names made the server look up %d of them, want some (the first batch) and at most %d", n, got, n/4)
	}
}

// A lookup with its stat in a quick directory, of a child whose stat
// waits (a device's mount point that stopped answering), holds up
// nothing else on its connection: the stat is handed off the reader.
func TestSlowChildOfQuickDirStallsNothing(t *testing.T) {
	b := newBlockingFile()
	slow := &slowStat{blockingFile: b, stat: true}
	tree := vfs.NewStaticDir(map[string]vfs.Node{"slow": slow, "disk": newDisk(t)})
	_, addr := serve(t, tree)
	_, root := dial(t, addr, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go vfs.LookupAttr(ctx, root, "slow")
	select {
	case <-b.entered:
	case <-time.After(hangBound):
		t.Fatal("the lookup's stat never reached the backend")
	}
	if err := within(t, "a stat beside the stuck lookup", func() error {
		_, err := walk(t, root, "disk").Attr(context.Background())
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// noticesOn waits until the client's change notices flow, so that the
// requests that start them are not counted with a test's own.
func noticesOn(t *testing.T, c *Client) {
	t.Helper()
	testenv.WaitFor(t, hangBound, "the change notices starting", func() bool { return c.notices.on.Load() })
}
