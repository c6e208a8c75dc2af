package vfs

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// Each kind of refusal of a synthetic file has one errno, whatever the
// file: EACCES for an open against the mode, EPERM for a change it does
// not take, EROFS only in a read-only tree.
func TestFileAttrsRefusals(t *testing.T) {
	ctx := context.Background()
	output := FileAttrs{Mode: syscall.S_IFREG | 0o444}
	input := FileAttrs{Mode: syscall.S_IFREG | 0o200}
	frozen := FileAttrs{Mode: syscall.S_IFREG | 0o444, ReadOnlyTree: true}
	opens := []struct {
		what  string
		a     FileAttrs
		flags int
		want  syscall.Errno
	}{
		{"read an output", output, os.O_RDONLY, 0},
		{"write an output", output, os.O_WRONLY, syscall.EACCES},
		{"truncate an output at open", output, os.O_RDONLY | os.O_TRUNC, syscall.EACCES},
		{"read an input", input, os.O_RDWR, syscall.EACCES},
		{"write an input with O_TRUNC", input, os.O_WRONLY | os.O_TRUNC, 0},
		{"read in a read-only tree", frozen, os.O_RDONLY, 0},
		{"append in a read-only tree", frozen, os.O_WRONLY | os.O_APPEND, syscall.EROFS},
	}
	for _, tc := range opens {
		if got := Errno(tc.a.CheckOpen(tc.flags)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
	changes := []struct {
		what string
		a    FileAttrs
		s    SetAttr
		want syscall.Errno
	}{
		{"touch an output", output, SetAttr{Valid: SetAtimeNow | SetMtimeNow}, 0},
		{"truncate an output", output, SetAttr{Valid: SetSize}, syscall.EPERM},
		{"truncate an input to 0", input, SetAttr{Valid: SetSize | SetClearSetID}, 0},
		{"truncate an input to 3", input, SetAttr{Valid: SetSize, Size: 3}, syscall.EPERM},
		{"chmod an input", input, SetAttr{Valid: SetMode, Mode: 0o600}, syscall.EPERM},
		{"chown an output", output, SetAttr{Valid: SetUid}, syscall.EPERM},
		{"touch in a read-only tree", frozen, SetAttr{Valid: SetMtimeNow}, syscall.EROFS},
	}
	for _, tc := range changes {
		_, err := tc.a.SetAttr(ctx, tc.s)
		if got := Errno(err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
}
