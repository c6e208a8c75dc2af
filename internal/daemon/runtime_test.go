package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareRuntime makes a runtime directory and refuses one that is
// open to others or is a symlink: whoever made it could put a socket of
// theirs where a mount looks for its daemon.
func TestPrepareRuntime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func(dir string) error
		wantErr bool
	}{
		{"fresh", func(string) error { return nil }, false},
		{"private", func(dir string) error { return os.Mkdir(dir, 0o700) }, false},
		{"open to others", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chmod(dir, 0o777)
		}, true},
		{"a symlink", func(dir string) error {
			other := dir + ".real"
			if err := os.Mkdir(other, 0o700); err != nil {
				return err
			}
			return os.Symlink(other, dir)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.Chmod(base, 0o700); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(base, "state-x")
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			err := prepareRuntime(dir)
			if got := err != nil; got != tc.wantErr {
				t.Errorf("prepareRuntime: got %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}

// TestClaimRoot claims a state directory once: a second claim fails with
// ErrServed until the first is released.
func TestClaimRoot(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	os.Chmod(os.Getenv("XDG_RUNTIME_DIR"), 0o700)
	root := t.TempDir()
	first, err := ClaimRoot(root)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if _, err := ClaimRoot(root); !errors.Is(err, ErrServed) {
		t.Errorf("second claim while the first is held: got %v, want ErrServed", err)
	}
	first.Release()
	again, err := ClaimRoot(root)
	if err != nil {
		t.Errorf("claim after the release: got %v, want it", err)
	} else {
		again.Release()
	}
}
