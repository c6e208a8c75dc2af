package fsmodel

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// memFS is a file system of one file in memory, for testing the checker
// itself: right unless one of its faults is set, each a way a cache has
// been seen to be wrong.
type memFS struct {
	cur    *inode // the file the name leads to
	faults faults
	writes int // WriteAt calls so far
}

type faults struct {
	dropWrite   int  // the nth WriteAt returns success and writes nothing
	heldStale   bool // a descriptor reads a copy taken when it was opened
	staleOpen   bool // an open returns what the file held before the actor's last change
	growHides   bool // reads past the size before a truncate up return nothing
	mapTailJunk bool // a mapping shows non-zero bytes past the end
	noCopy      bool // copy_file_range is unsupported
}

type inode struct {
	data []byte
	prev []byte // before the actor's last change, for staleOpen
	hide int64  // growHides: reads stop here; -1 none
}

func newMemFS(f faults) *memFS { return &memFS{cur: &inode{hide: -1}, faults: f} }

func (fs *memFS) open(create bool) (File, error) {
	if create {
		fs.cur = &inode{hide: -1}
	}
	f := &memFile{fs: fs, ino: fs.cur}
	if fs.faults.heldStale {
		f.copy = append([]byte{}, fs.cur.data...)
	}
	if fs.faults.staleOpen && fs.cur.prev != nil {
		f.copy = append([]byte{}, fs.cur.prev...)
	}
	return f, nil
}

// memFile is an open file of a memFS.
type memFile struct {
	fs   *memFS
	ino  *inode
	copy []byte // non-nil: what this descriptor reads and writes instead
}

func (f *memFile) buf() *[]byte {
	if f.copy != nil {
		return &f.copy
	}
	return &f.ino.data
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	b := *f.buf()
	end := int64(len(b))
	if f.ino.hide >= 0 {
		end = min(end, f.ino.hide)
	}
	if off >= end {
		return 0, io.EOF
	}
	return copy(p, b[off:end]), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.writes++
	if f.fs.writes == f.fs.faults.dropWrite {
		return len(p), nil
	}
	b := f.buf()
	if end := off + int64(len(p)); end > int64(len(*b)) {
		*b = append(*b, make([]byte, end-int64(len(*b)))...)
	}
	copy((*b)[off:], p)
	if f.copy != nil {
		f.ino.data = append([]byte{}, f.copy...) // written through
	}
	return len(p), nil
}

func (f *memFile) Truncate(size int64) error {
	b := f.buf()
	if f.fs.faults.growHides && size > int64(len(*b)) && f.ino.hide < 0 {
		f.ino.hide = int64(len(*b))
	}
	if size <= int64(len(*b)) {
		*b = (*b)[:size]
	} else {
		*b = append(*b, make([]byte, size-int64(len(*b)))...)
	}
	if f.copy != nil {
		f.ino.data = append([]byte{}, f.copy...)
	}
	return nil
}

func (f *memFile) Size() (int64, error) { return int64(len(*f.buf())), nil }
func (f *memFile) Sync() error          { return nil }
func (f *memFile) Close() error         { return nil }

func (f *memFile) MapRead(off, n int64) ([]byte, error) {
	out := make([]byte, n)
	b := *f.buf()
	if off < int64(len(b)) {
		copy(out, b[off:])
	}
	if f.fs.faults.mapTailJunk {
		for i := int64(len(b)) - off; i < n; i++ {
			if i >= 0 {
				out[i] = 0xee
			}
		}
	}
	return out, nil
}

func (f *memFile) MapWrite(p []byte, off int64) error {
	_, err := f.WriteAt(p, off)
	return err
}

func (f *memFile) CopyRange(src, dst, n int64) (int64, error) {
	if f.fs.faults.noCopy {
		return 0, fmt.Errorf("%w: copy_file_range: operation not supported", errors.ErrUnsupported)
	}
	b := *f.buf()
	if src >= int64(len(b)) {
		return 0, nil
	}
	p := append([]byte{}, b[src:min(src+n, int64(len(b)))]...)
	return int64(len(p)), errors.Join(func() error { _, err := f.WriteAt(p, dst); return err }())
}

func (f *memFile) Allocate(off, n int64, keepSize bool) error {
	if !keepSize && off+n > int64(len(*f.buf())) {
		return f.Truncate(off + n)
	}
	return nil
}

func (f *memFile) PunchHole(off, n int64) error {
	b := *f.buf()
	if off < int64(len(b)) {
		clear(b[off:min(off+n, int64(len(b)))])
	}
	return nil
}

// memDisk is the second actor on a memFS: it changes the inode itself.
type memDisk struct{ fs *memFS }

func (d memDisk) changing() *inode {
	ino := d.fs.cur
	ino.prev = append([]byte{}, ino.data...)
	return ino
}

func (d memDisk) WriteAt(p []byte, off int64) error {
	ino := d.changing()
	if end := off + int64(len(p)); end > int64(len(ino.data)) {
		ino.data = append(ino.data, make([]byte, end-int64(len(ino.data)))...)
	}
	copy(ino.data[off:], p)
	return nil
}

func (d memDisk) Truncate(size int64) error {
	ino := d.changing()
	if size <= int64(len(ino.data)) {
		ino.data = ino.data[:size]
	} else {
		ino.data = append(ino.data, make([]byte, size-int64(len(ino.data)))...)
	}
	return nil
}

func (d memDisk) Replace(content []byte) error {
	d.fs.cur = &inode{data: append([]byte{}, content...), hide: -1}
	return nil
}

// TestModelCatchesFaults runs the checker against the in-memory file,
// right and with each fault: right must pass, each fault must fail with
// a report that names the seed and says what was wrong.
func TestModelCatchesFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults faults
		actor  bool
		want   string // in the failure; "" for none
	}{
		{"right", faults{}, false, ""},
		{"right with an actor", faults{}, true, ""},
		{"a dropped write", faults{dropWrite: 37}, false, "reading back"},
		{"growth hidden by truncate", faults{growHides: true}, false, "want"},
		{"junk past EOF in a mapping", faults{mapTailJunk: true}, false, "a mapping (past EOF: zeros)"},
		{"a held descriptor never sees a change", faults{heldStale: true}, true, "not seen within"},
		{"a fresh open shows the old content", faults{staleOpen: true}, true, "close-to-open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newMemFS(tc.faults)
			cfg := Config{Seed: 7, Ops: 3000, Open: fs.open, Within: 20 * time.Millisecond}
			if tc.actor {
				cfg.Disk = memDisk{fs}
			}
			_, err := Run(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a right file failed: %v", err)
			case tc.want == "":
				return
			case err == nil:
				t.Fatalf("%s passed 3000 operations, want a failure", tc.name)
			}
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("failure %v is no *Failure", err)
			}
			msg := err.Error()
			for _, w := range []string{tc.want, "seed 0x7", "GSVFS_FSX_SEED=0x7 GSVFS_FSX_OPS=3000", fmt.Sprintf("%d: ", f.Op)} {
				if !strings.Contains(msg, w) {
					t.Errorf("the report lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

// TestModelReplays: a seed decides the run, so the trail of a failure
// is the same run after run, and another seed fails elsewhere.
func TestModelReplays(t *testing.T) {
	trail := func(seed uint64) string {
		fs := newMemFS(faults{dropWrite: 500})
		_, err := Run(Config{Seed: seed, Ops: 5000, Open: fs.open, Disk: memDisk{fs}, Within: time.Millisecond})
		if err == nil {
			t.Fatalf("seed %d: the dropped write went unseen", seed)
		}
		return err.Error()
	}
	if a, b := trail(1), trail(1); a != b {
		t.Errorf("seed 1 twice gave two reports:\n%s\n---\n%s", a, b)
	}
	if a, b := trail(1), trail(2); a == b {
		t.Errorf("seeds 1 and 2 gave the same report:\n%s", a)
	}
}

// TestModelSkipsUnsupported: a kind the file does not support is probed
// once, reported and never tried again; the others still run.
func TestModelSkipsUnsupported(t *testing.T) {
	fs := newMemFS(faults{noCopy: true})
	st, err := Run(Config{Seed: 3, Ops: 2000, Open: fs.open})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Skipped[opCopy]; !ok || st.Done[opCopy] != 0 {
		t.Errorf("copy: skipped %q, done %d; want skipped and never done", st.Skipped[opCopy], st.Done[opCopy])
	}
	if !strings.Contains(st.String(), "copy skipped") {
		t.Errorf("the summary %q does not report the skip", st.String())
	}
	for _, k := range []string{opWrite, opRead, opTruncate, opMapRead, opMapWrite, opAlloc, opPunch} {
		if st.Done[k] == 0 {
			t.Errorf("%s never done in 2000 operations: %s", k, st)
		}
	}
}

// TestModelLeavesOut: kinds a run is told to leave out are never done
// and are reported with the reason; an unknown kind is refused.
func TestModelLeavesOut(t *testing.T) {
	fs := newMemFS(faults{})
	why := "not this path's contract"
	st, err := Run(Config{Seed: 4, Ops: 2000, Open: fs.open, Without: map[string]string{opMapRead: why, opMapWrite: why}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{opMapRead, opMapWrite} {
		if got, want := st.Skipped[k], "left out: "+why; got != want || st.Done[k] != 0 {
			t.Errorf("%s: skipped %q, done %d; want %q and never done", k, got, st.Done[k], want)
		}
	}
	if st.Done[opWrite] == 0 {
		t.Errorf("writes never done: %s", st)
	}
	if _, err := Run(Config{Seed: 4, Ops: 10, Open: newMemFS(faults{}).open, Without: map[string]string{"mmap": why}}); err == nil {
		t.Errorf("an unknown kind to leave out: no error, want one")
	}
}

// TestModelOnDisk runs the checker on a file of the test's temporary
// directory with the second actor on the same file, as the integration
// tests do through a mount: a local file system must pass.
func TestModelOnDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: the checker's files are Linux's")
	}
	p := filepath.Join(t.TempDir(), "f")
	for _, disk := range []Disk{nil, PathDisk(p)} {
		st, err := Run(Config{Seed: 11, Ops: 2000, Open: OpenPath(p), Disk: disk, Log: testLog{t}})
		if err != nil {
			t.Fatal(err)
		}
		if disk != nil && st.Done[opActor] == 0 {
			t.Errorf("the actor never acted: %s", st)
		}
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
}

// TestModelAskDisk runs the checker with its second actor in another
// place (as in the VM: asked through a directory, answered by Answer).
func TestModelAskDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: the checker's files are Linux's")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- Answer(dir, PathDisk(p), stop) }()
	st, err := Run(Config{Seed: 5, Ops: 400, Open: OpenPath(p), Disk: &AskDisk{Dir: dir}})
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if st.Done[opActor] == 0 {
		t.Errorf("the actor never acted: %s", st)
	}
}

// testLog writes the checker's log lines to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
