package mounts

import (
	"os"
	"testing"
)

func TestCheckNamespaceCompleteLines(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{"", true},
		{"bind -a /etc/skills /home/a/skills\n", true},
		{"bind -a /etc/skills /home/a/skills\nbi", true}, // still being written
		{"bind -x /a /b\n", false},
		{"# a comment\nmount unix:/run/x.sock /srv/x\n", true},
		{"bind /a\n", false},
	} {
		if err := checkNamespace([]byte(c.text)); (err == nil) != c.ok {
			t.Errorf("checkNamespace(%q) = %v, want ok %v", c.text, err, c.ok)
		}
	}
}

func TestSplice(t *testing.T) {
	for _, c := range []struct {
		cur, p string
		off    int64
		want   string
	}{
		{"abc", "X", 1, "aXc"},
		{"abc", "de", 3, "abcde"},
		{"ab", "c", 3, "ab\x00c"},
		{"", "new\n", 0, "new\n"},
	} {
		if got := string(splice([]byte(c.cur), []byte(c.p), c.off)); got != c.want {
			t.Errorf("splice(%q, %q, %d) = %q, want %q", c.cur, c.p, c.off, got, c.want)
		}
	}
}

// TestNamespaceWritesReported: a write through the tree that lands, and
// the close of a handle opened for writing, are reported; a refused
// write and a read are not.
func TestNamespaceWritesReported(t *testing.T) {
	tab := New()
	if err := tab.Mount("/etc", disk(t)); err != nil {
		t.Fatal(err)
	}
	reports := 0
	tab.GuardNamespace("/etc/namespace", func() { reports++ })
	etc := walk(t, tab.Root(), "etc")
	f, h, err := etc.Create(ctx, "namespace", os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	check := func(after string, want int) {
		t.Helper()
		if reports != want {
			t.Fatalf("after %s: %d reports, want %d", after, reports, want)
		}
	}
	check("create", 0)
	h.Close() // a file made empty is a change
	check("the close of the create", 1)
	if h, err = f.Open(ctx, os.O_WRONLY); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("bind -x /a /b\n"), 0); err == nil {
		t.Fatal("a refused line was written")
	}
	check("a refused write", 1)
	if _, err := h.WriteAt(ctx, []byte("# nothing bound\n"), 0); err != nil {
		t.Fatal(err)
	}
	check("a write", 2)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	check("its close", 3)
	if h, err = f.Open(ctx, os.O_RDONLY); err != nil {
		t.Fatal(err)
	}
	h.Close()
	check("a read-only open's close", 3)
}
