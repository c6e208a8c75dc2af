package filestamp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChanged: the first look, an edit in place, a replacement by rename
// that keeps the size and time, the file going and its coming back are
// each one change; looking again with nothing done is none.
func TestChanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	f := New(p)
	step := func(what string, want bool) {
		t.Helper()
		if got, _ := f.Changed(); got != want {
			t.Errorf("%s: changed %v, want %v", what, got, want)
		}
	}
	step("first look, no file", true)
	step("again, still none", false)
	must(t, os.WriteFile(p, []byte("one\n"), 0o644))
	step("made", true)
	step("again", false)
	must(t, os.WriteFile(p, []byte("one\ntwo\n"), 0o644))
	step("edited in place", true)
	fi, err := os.Stat(p)
	must(t, err)
	q := filepath.Join(dir, "g")
	must(t, os.WriteFile(q, []byte("ONE\nTWO\n"), 0o644))
	must(t, os.Chtimes(q, fi.ModTime(), fi.ModTime()))
	must(t, os.Rename(q, p))
	step("replaced by rename, same size and time", true)
	must(t, os.Remove(p))
	step("gone", true)
	step("still gone", false)
}

// TestPoll: fn runs at once, then once per change, with whether the file
// exists.
func TestPoll(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan bool, 10)
	go Poll(ctx, p, time.Millisecond, nil, func(exists bool) { seen <- exists })
	if exists := <-seen; exists {
		t.Fatal("first call: exists, want none")
	}
	must(t, os.WriteFile(p, []byte("x"), 0o644))
	if exists := <-seen; !exists {
		t.Fatal("after the write: none, want exists")
	}
}

// TestPollKick: a kick makes Poll look at once; its ticker, an hour,
// would not.
func TestPollKick(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan bool, 10)
	kick := make(chan struct{}, 1) // a Poll that ignored kicks fails below, not hangs
	go Poll(ctx, p, time.Hour, kick, func(exists bool) { seen <- exists })
	<-seen
	must(t, os.WriteFile(p, []byte("x"), 0o644))
	kick <- struct{}{} // taken once Poll waits again, after its first look
	select {
	case exists := <-seen:
		if !exists {
			t.Fatal("after the write and a kick: none, want exists")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a kick after a write: no call in 10 s")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
