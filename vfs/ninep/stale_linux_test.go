//go:build linux

package ninep

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// Issue 28's reproductions at the client: a gsvfs server of a disk tree,
// the disk changed behind it, and what the client's open handles and
// fresh opens read after the server's notice of the change has come.

// heard collects the server's notices as the client hands them on (after
// applying them to its caches), so a test can wait for the one that
// vouches for what it just did to the disk.
type heard struct {
	mu sync.Mutex
	cs []vfs.Change
}

// hear listens to the changes root hands on until the test ends.
func hear(t *testing.T, root vfs.Node) *heard {
	h := &heard{}
	stop := root.(vfs.Watcher).Watch(func(cs []vfs.Change) {
		h.mu.Lock()
		h.cs = append(h.cs, cs...)
		h.mu.Unlock()
	})
	t.Cleanup(stop)
	return h
}

// of waits for a notice of the file at hostPath as the disk has it now
// (its size and mtime), and forgets the notices heard so far: the next
// wait is for a notice of the next change.
func (h *heard) of(t *testing.T, hostPath string) {
	t.Helper()
	st, err := os.Stat(hostPath)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the notice of "+filepath.Base(hostPath)+" as the disk has it", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.cs {
			if c.Attr.Size == st.Size() && c.Attr.Mtime.Equal(st.ModTime()) {
				h.cs = nil
				return true
			}
		}
		return false
	})
}

// readFrom reads h from off to its end, in reads of FUSE's size.
func readFrom(t *testing.T, h vfs.Handle, off int64) string {
	t.Helper()
	var all []byte
	buf := make([]byte, 128<<10)
	for {
		n, err := h.ReadAt(context.Background(), buf, off)
		all, off = append(all, buf[:n]...), off+int64(n)
		if err == io.EOF || err == nil && n == 0 {
			return string(all)
		}
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
}

// openRead opens n read-only and reads it whole.
func openRead(t *testing.T, n vfs.Node) string {
	t.Helper()
	h, err := n.Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return readFrom(t, h, 0)
}

// overwrite writes data over the start of the file at p, in place.
func overwrite(t *testing.T, p, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
}

// Issue 28, defect 2: a file overwritten in place on the disk, again and
// again, reads as the disk has it through a handle held open across the
// changes, and through a fresh open, once each change's notice came.
// Before the fix the second change on was never seen by the held handle
// (its read-ahead window kept the bytes read after the first change), and
// a mount's kernel filled its page cache from that window again.
func TestDiskOverwritesReachHeldHandle(t *testing.T) {
	_, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), strings.Repeat("0", 100)) })
	p := filepath.Join(dir, "f")
	notices := hear(t, root)
	f := walk(t, root, "f")
	h, err := f.Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := readFrom(t, h, 0); got != strings.Repeat("0", 100) {
		t.Fatalf("before any change: %q", got)
	}
	for i := 1; i <= 4; i++ {
		want := strings.Repeat(string(rune('0'+i)), 100)
		overwrite(t, p, want)
		notices.of(t, p)
		if got := readFrom(t, h, 0); got != want {
			t.Errorf("change %d, the held handle: %.8q..., want %.8q...", i, got, want)
		}
		if got := openRead(t, f); got != want {
			t.Errorf("change %d, a fresh open: %.8q..., want %.8q...", i, got, want)
		}
	}
}

// Issue 28, defect 2: a file growing on the disk shows its new part to a
// handle that already read to its old end, once the notice came; and a
// file shrunk on the disk shows no bytes past its new end.
func TestDiskSizeChangesReachHeldHandle(t *testing.T) {
	_, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), strings.Repeat("a", 100)) })
	p := filepath.Join(dir, "f")
	notices := hear(t, root)
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	want := strings.Repeat("a", 100)
	if got := readFrom(t, h, 0); got != want {
		t.Fatalf("before: %q", got)
	}
	for i, step := range []struct {
		what   string
		change func() error
		want   string
	}{
		{"grown", func() error { return appendTo(p, strings.Repeat("b", 100)) }, strings.Repeat("a", 100) + strings.Repeat("b", 100)},
		{"grown again", func() error { return appendTo(p, strings.Repeat("c", 5000)) }, strings.Repeat("a", 100) + strings.Repeat("b", 100) + strings.Repeat("c", 5000)},
		{"shrunk", func() error { return os.Truncate(p, 150) }, strings.Repeat("a", 100) + strings.Repeat("b", 50)},
	} {
		if err := step.change(); err != nil {
			t.Fatal(err)
		}
		notices.of(t, p)
		// As a reader at its end asks (tail -f), then as a reader anew.
		tail := ""
		if len(step.want) > len(want) {
			tail = step.want[len(want):]
		}
		if got := readFrom(t, h, int64(len(want))); got != tail {
			t.Errorf("%d %s: read from the old end %d: %d bytes, want %d", i, step.what, len(want), len(got), len(tail))
		}
		if got := readFrom(t, h, 0); got != step.want {
			t.Errorf("%d %s: read whole: %d bytes, want %d", i, step.what, len(got), len(step.want))
		}
		want = step.want
	}
}

func appendTo(p, data string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(data)
	return err
}

// Issue 28, defect 4: after a truncate to mid-page on the disk, the last
// page read through a held handle ends at the new size: no old bytes past
// it (what a mount's mmap would show instead of zeros).
func TestDiskTruncateMidPageEndsRead(t *testing.T) {
	old := bytes.Repeat([]byte("x"), 8192)
	_, root, dir := extDisk(t, func(dir string) { mustWrite(t, filepath.Join(dir, "f"), string(old)) })
	p := filepath.Join(dir, "f")
	notices := hear(t, root)
	h, err := walk(t, root, "f").Open(context.Background(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	pages(t, h, 2)
	if err := os.Truncate(p, 5000); err != nil {
		t.Fatal(err)
	}
	notices.of(t, p)
	if got := readFrom(t, h, 4096); len(got) != 5000-4096 {
		t.Errorf("the last page after a truncate to 5000 on the disk: %d bytes, want %d", len(got), 5000-4096)
	}
}

// pages reads the first n pages of h one by one, as the kernel fills its
// page cache.
func pages(t *testing.T, h vfs.Handle, n int) {
	t.Helper()
	buf := make([]byte, 4096)
	for i := range n {
		if _, err := h.ReadAt(context.Background(), buf, int64(i)*4096); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
}

// Issue 28: Linux's v9fs client opens a file through a clone of its
// dentry's fid (Twalk with no names, then Tlopen), stats through that
// fid, and keeps the dentry of a file held open. After the name is
// renamed over on the disk, that open and stat reach what the name leads
// to now, as open(2) and stat(2) of the name do, while the fid held open
// keeps reading the file it opened. Before the fix both failed with
// ESTALE.
func TestCloneOpenAfterRenameOverOnDisk(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "f"), "old")
	mustWrite(t, filepath.Join(dir, "g"), "new!")
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serve(t, d.Root())
	w := wireAttach(t, addr) // fid 1: the root
	defer w.nc.Close()
	const dentry, held, fresh = 2, 3, 4
	w.want(t, &Twalk{Fid: 1, NewFid: dentry, Names: []string{"f"}})
	w.want(t, &Twalk{Fid: dentry, NewFid: held})
	w.want(t, &Tlopen{Fid: held, Flags: 0})
	if err := os.Rename(filepath.Join(dir, "g"), filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	w.want(t, &Twalk{Fid: dentry, NewFid: fresh})
	if r, ok := w.rpc(t, 1, &Tlopen{Fid: fresh, Flags: 0}).(*Rlerror); ok {
		t.Fatalf("open of a clone of the name's fid: %v, want the file the name leads to", syscall.Errno(r.Ecode))
	}
	// v9fs's fstat asks the dentry's fid.
	r, ok := w.rpc(t, 1, &Tgetattr{Fid: dentry, Mask: AttrBasic}).(*Rgetattr)
	if !ok || r.Size != uint64(len("new!")) {
		t.Errorf("stat of the name's fid: %#v, want the size of the file the name leads to", r)
	}
	for _, c := range []struct {
		fid  uint32
		want string
	}{{fresh, "new!"}, {held, "old"}} {
		r, ok := w.rpc(t, 1, &Tread{Fid: c.fid, Count: 100}).(*Rread)
		if got := ""; !ok || string(r.Data) != c.want {
			if ok {
				got = string(r.Data)
			}
			t.Errorf("read of fid %d: %q, want %q", c.fid, got, c.want)
		}
	}
}

// want sends m and fails unless the server answers it without an error.
func (r *wireConn) want(t *testing.T, m Message) {
	t.Helper()
	if e, ok := r.rpc(t, 1, m).(*Rlerror); ok {
		t.Fatalf("%T: %v", m, syscall.Errno(e.Ecode))
	}
}

// Issue 28: on a server of this machine's disk (ClientOptions.Exact)
// an open sees what the disk had before it, whether or not the notice
// of the change has come: here none ever comes (the tree's watch tells
// nothing), so what the client held could answer only from before the
// change. Before the fix the name made on the disk was missing (held
// by the listing, then by the miss), and the file made through the
// client, then written on the disk, opened with its size as made.
func TestExactOpenSeesTheDisk(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, root vfs.Node) // through the client, before
		disk  func(t *testing.T, p string)      // on the disk, behind it
	}{
		{"a name made on the disk", func(t *testing.T, root vfs.Node) {
			if _, err := vfs.ReadDirAll(ctx, root); err != nil {
				t.Fatal(err)
			}
			if _, err := root.Lookup(ctx, "f"); err == nil {
				t.Fatal("f found before it was made")
			}
		}, func(t *testing.T, p string) { mustWrite(t, p, "made on the disk") }},
		{"a file made through the client, written on the disk", func(t *testing.T, root vfs.Node) {
			_, h, err := root.Create(ctx, "f", os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
		}, func(t *testing.T, p string) { overwrite(t, p, "made on the disk") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d, err := diskfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, addr := serve(t, &watchRoot{Node: d.Root()})
			cl, root := dialWith(t, addr, "", ClientOptions{Exact: true})
			noticesOn(t, cl)
			c.setup(t, root)
			c.disk(t, filepath.Join(dir, "f"))
			f, err := root.Lookup(ctx, "f")
			if err != nil {
				t.Fatalf("lookup after the change: %v", err)
			}
			h, err := f.Open(ctx, os.O_RDONLY)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			a, err := h.(vfs.HandleAttrer).Attr(ctx)
			if got, want := a.Size, int64(len("made on the disk")); err != nil || got != want {
				t.Errorf("the open's size: %d (%v), want %d", got, err, want)
			}
			if got, want := readFrom(t, h, 0), "made on the disk"; got != want {
				t.Errorf("the open reads %q, want %q", got, want)
			}
		})
	}
}

// entries waits for notices naming each of names in a directory, and
// forgets the notices heard so far.
func (h *heard) entries(t *testing.T, names ...string) {
	t.Helper()
	waitUntil(t, "the notices of "+strings.Join(names, ", "), func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, name := range names {
			if !slices.ContainsFunc(h.cs, func(c vfs.Change) bool { return c.Dir != 0 && c.Name == name }) {
				return false
			}
		}
		h.cs = nil
		return true
	})
}

// Issue 28 (TestDeviceChangesShow's flake): a directory opened while
// its listing was cached, then read from its start once the notice of
// a change to it has come, lists the directory as the disk has it, as
// a rewinddir does; and a name the change took away, looked up while
// the listing is open, misses. A FUSE kernel that caches listings
// (FOPEN_CACHE_DIR) keeps what a read from the start gives, stamped
// with the directory's mtime as it stands after the change: before the
// fix the listing as it was at the open came back, and an `ls` through
// the mount showed the removed name for good.
func TestRewindAfterNoticeListsTheDisk(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		change  func(dir string) error
		noticed []string // the names the change's notices name
		want    []string // the listing after
		gone    string   // a name that must miss after, "" for none
	}{
		{"a removal", func(dir string) error { return os.Remove(filepath.Join(dir, "f0")) },
			[]string{"f0"}, []string{"f1"}, "f0"},
		{"a rename", func(dir string) error { return os.Rename(filepath.Join(dir, "f0"), filepath.Join(dir, "g")) },
			[]string{"f0", "g"}, []string{"f1", "g"}, "f0"},
		{"a creation", func(dir string) error { return os.WriteFile(filepath.Join(dir, "f2"), nil, 0o644) },
			[]string{"f2"}, []string{"f0", "f1", "f2"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr, dir := serveHostDir(t)
			for _, name := range []string{"f0", "f1"} {
				mustWrite(t, filepath.Join(dir, name), "x")
			}
			cl, root := dial(t, addr, "")
			freeze(cl) // only a notice may drop what is held
			noticesOn(t, cl)
			heard := hear(t, root)
			if _, err := vfs.ReadDirAll(ctx, root); err != nil { // held now
				t.Fatal(err)
			}
			h, err := root.Open(ctx, os.O_RDONLY)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := c.change(dir); err != nil {
				t.Fatal(err)
			}
			heard.entries(t, c.noticed...)
			if c.gone != "" {
				if _, err := root.Lookup(ctx, c.gone); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("lookup of %s after the notice: %v, want ENOENT", c.gone, err)
				}
			}
			var got []string
			for _, e := range listAll(t, h) {
				got = append(got, e.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("the listing read from its start after the notice: %q, want %q", got, c.want)
			}
		})
	}
}
