package ninep

import (
	"context"
	"maps"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// sentOf runs fn and returns the requests c sent meanwhile, as
// sentSince.
func sentOf(c *Client, fn func()) map[string]int64 {
	before := c.SentByType()
	fn()
	return sentSince(c, before)
}

// sentSince is what c sent since before (a SentByType), by type, those
// that go in the background (clunks, notices' polls, flushes) left out.
func sentSince(c *Client, before map[string]int64) map[string]int64 {
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
	c, root := dialWith(t, addr, "", ClientOptions{Exact: true})
	noticesAsked(t, c)
	return c, root
}

// noticesAsked waits until c has asked for the server's notices (its
// walk to a fid of their own, then a Twatch), so that no count of
// requests made after includes that walk, whatever the answer.
func noticesAsked(t *testing.T, c *Client) {
	t.Helper()
	testenv.WaitFor(t, hangBound, "the notices asked for", func() bool { return c.SentByType()["watch"] > 0 })
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

// mkdirStat makes name in dir and stats the new directory, as a FUSE
// edge's mkdir does, returning the requests c sent.
func mkdirStat(t *testing.T, c *Client, dir vfs.Node, name string) map[string]int64 {
	t.Helper()
	return sentOf(c, func() {
		kid, err := dir.Mkdir(context.Background(), name, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := kid.Attr(context.Background()); err != nil || !a.IsDir() {
			t.Fatalf("stat of the new directory %s: %+v, %v", name, a, err)
		}
	})
}

// A mkdir and the stat of the directory made cost one Tmkdirget, and
// through a server whose tree is itself a 9P client (a gateway's
// /mnt/ID), one request on each connection: the middle server answers
// the stat from what the mkdir brought.
func TestMkdirInOneRequest(t *testing.T) {
	far, root, _ := extDisk(t, func(string) {})
	_, addr := serve(t, root)
	near, nearRoot := dial(t, addr, "")
	noticesOn(t, near)
	farBefore := far.SentByType()
	got := mkdirStat(t, near, nearRoot, "d")
	want := map[string]int64{"mkdirget": 1}
	if !maps.Equal(got, want) {
		t.Errorf("mkdir and stat through the middle server sent it %v, want %v", got, want)
	}
	if farGot := sentSince(far, farBefore); !maps.Equal(farGot, want) {
		t.Errorf("the middle server sent the far one %v, want %v", farGot, want)
	}
	if _, err := nearRoot.Mkdir(context.Background(), "d", 0o755); vfs.Errno(err) != syscall.EEXIST {
		t.Errorf("a second mkdir of d: %v, want EEXIST", err)
	}
}

// A server that speaks the extensions but not Tmkdirget (an older gsvfs:
// the rogue) refuses it once; the client then makes directories with a
// Tmkdir and a walk, without asking again.
func TestMkdirFallsBack(t *testing.T) {
	c, root := dialWith(t, (&rogue{}).serve(t), "", ClientOptions{})
	first := mkdirStat(t, c, root, "a")
	if first["mkdirget"] != 1 || first["mkdir"] != 1 || first["walkgetattr"] != 1 {
		t.Errorf("first mkdir sent %v, want a mkdirget, refused, a mkdir and a walkgetattr", first)
	}
	second := mkdirStat(t, c, root, "b")
	if second["mkdirget"] != 0 || second["mkdir"] != 1 || second["walkgetattr"] != 1 {
		t.Errorf("second mkdir sent %v, want a mkdir and a walkgetattr, no mkdirget", second)
	}
}

// The kernel's getxattr of security.capability before a write of a
// generated file (a session's ctl) is answered by the client that
// walked to it: a gsvfs server says a generated file has no extended
// attributes, through a server whose tree is itself a 9P client (a
// gateway's /mnt/ID) too.
func TestGeneratedFileHasNoXattrsWithoutAsking(t *testing.T) {
	f := vfs.NewFuncFile(0o666, func(context.Context, int) (vfs.Handle, error) {
		return vfs.FuncHandle{}, nil
	})
	_, farAddr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"f": f}))
	far, middle := dial(t, farAddr, "")
	noticesAsked(t, far)
	_, addr := serve(t, middle)
	near, root := dial(t, addr, "")
	noticesOn(t, near) // which drops what is held when they start
	farBefore := far.SentByType()
	got := sentOf(near, func() {
		kid := lookup(t, root, "f")
		if _, err := kid.(vfs.Xattrer).GetXattr(context.Background(), "security.capability"); vfs.Errno(err) != syscall.ENODATA {
			t.Errorf("getxattr of a generated file: %v, want ENODATA", err)
		}
	})
	want := map[string]int64{"walkgetattr": 1}
	if !maps.Equal(got, want) {
		t.Errorf("a lookup and a getxattr of a generated file sent %v, want %v", got, want)
	}
	if farGot := sentSince(far, farBefore); !maps.Equal(farGot, want) {
		t.Errorf("the middle server sent the far one %v, want %v", farGot, want)
	}
}

// A generated file whose attributes are fixed (vfs.Attr.Fixed: a
// session's ctl and wait) is stated once, at the walk, and its
// attributes are held through stats, an open, a write and a change in
// its directory; one whose size moves (Stat set) is asked every time.
func TestFixedAttrsHeld(t *testing.T) {
	fixed := vfs.NewFuncFile(0o666, func(context.Context, int) (vfs.Handle, error) {
		return vfs.FuncHandle{Write: func(_ context.Context, p []byte, _ int64) (int, error) { return len(p), nil }}, nil
	})
	moving := vfs.NewFuncFile(0o444, func(context.Context, int) (vfs.Handle, error) { return vfs.FuncHandle{}, nil })
	var size int64
	moving.Stat = func() (int64, time.Time) { size++; return size, time.Unix(size, 0) }
	dir := vfs.NewStaticDir(map[string]vfs.Node{"ctl": fixed, "log": moving})
	_, addr := serve(t, vfs.NewStaticDir(map[string]vfs.Node{"d": dir}))
	c, root := dial(t, addr, "")
	noticesAsked(t, c) // a static tree has none to give
	ctx := context.Background()
	d := lookup(t, root, "d")
	ctl, log := lookup(t, d, "ctl"), lookup(t, d, "log")
	got := sentOf(c, func() {
		for range 3 {
			if a, err := ctl.Attr(ctx); err != nil || !a.Fixed {
				t.Fatalf("stat of ctl: %+v, %v; want fixed attributes", a, err)
			}
		}
		h, err := ctl.Open(ctx, os.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.WriteAt(ctx, []byte("x\n"), 0); err != nil {
			t.Fatal(err)
		}
		h.Close()
		if _, err := ctl.Attr(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if want := map[string]int64{"walkopen": 1, "write": 1}; !maps.Equal(got, want) {
		t.Errorf("stats around an open and a write of a file of fixed attributes sent %v, want %v", got, want)
	}
	got = sentOf(c, func() {
		for range 2 {
			if a, err := log.Attr(ctx); err != nil || a.Fixed {
				t.Fatalf("stat of log: %+v, %v; want attributes that are not fixed", a, err)
			}
		}
	})
	if got["getattr"] != 2 {
		t.Errorf("two stats of a generated file whose size moves sent %v, want two getattrs", got)
	}
}
