package mounts

import "testing"

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
