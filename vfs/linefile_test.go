package vfs

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
)

// A LineHandle runs whole lines only, in order, stops at the first that
// fails, and runs a last line without a newline at close.
func TestLineHandle(t *testing.T) {
	ctx := context.Background()
	var got []string
	h := &LineHandle{Run: func(_ context.Context, lines []string) error {
		for _, line := range lines {
			if line == "bad" {
				return Error("write", "", syscall.EINVAL)
			}
			got = append(got, line)
		}
		return nil
	}}
	for _, w := range []string{"run a\n\n# note\nru", "n b\n", "bad\nrun c\n", "run d"} {
		h.WriteAt(ctx, []byte(w), 0)
	}
	if !slices.Equal(got, []string{"run a", "run b"}) {
		t.Errorf("lines run before close: %q", got)
	}
	if err := h.Flush(ctx); err != nil || !slices.Equal(got, []string{"run a", "run b", "run d"}) {
		t.Errorf("after close: %q, %v", got, err)
	}
	if _, err := h.WriteAt(ctx, []byte("bad\n"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a failing line: %v, want its error", err)
	}
}
