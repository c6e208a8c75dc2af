package bounds

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A burst of the same warning is one line; another kind still gets its
// own; the next line of a kind says how many were held back.
func TestRateLog(t *testing.T) {
	var out bytes.Buffer
	r := NewRateLog(slog.New(slog.NewTextHandler(&out, nil)), 0)
	r.every = 1 << 62 // nothing repeats within the test
	for range 1000 {
		r.Warn("refused", "9p message refused")
	}
	r.Warn("dropped", "9p connection dropped")
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Fatalf("1000 warnings of one kind and one of another: %d lines, want 2:\n%s", got, &out)
	}
	r.every = 0
	out.Reset()
	r.Warn("refused", "9p message refused")
	if !strings.Contains(out.String(), "suppressed=999") {
		t.Errorf("the line after a burst: %q, want it to count the 999 held back", out.String())
	}
}
