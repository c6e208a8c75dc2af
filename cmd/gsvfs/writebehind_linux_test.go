package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestServerMountWritesBehind: a mount of a server writes behind (its
// client acknowledges writes before the server has them), yet what
// close(2) returns is what a mount that waited would say: the bytes are
// on the server's disk once it returns, and a disk that fills up is never
// silent, whether the failure reaches the writer at a later write or at
// close.
func TestServerMountWritesBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to mount a small tmpfs that fills up")
	}
	full := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("SKIPPED: cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(full, unix.MNT_DETACH) })
	srv, addr := startServe(t, "--bind", full+":/workspaces/full")
	d := mountServer(t, "unix:"+addr.Addr)

	t.Run("lands by close", func(t *testing.T) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
		p := d.Path("workspaces/wb")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(data); off += 64 << 10 {
			if _, err := f.Write(data[off : off+64<<10]); err != nil {
				t.Fatalf("write at %d: %v", off, err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		got, err := os.ReadFile(filepath.Join(srv.Root, "workspaces", "wb"))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("on the server's disk after close: %d bytes, %v; want the %d written", len(got), err, len(data))
		}
	})

	t.Run("full disk", func(t *testing.T) {
		f, err := os.Create(d.Path("workspaces/full/f"))
		if err != nil {
			t.Fatal(err)
		}
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		var failed error
		for range 16 { // 1 MiB into 256 KiB
			if _, err := f.Write(chunk); err != nil {
				failed = err
				break
			}
		}
		if err := f.Close(); failed == nil {
			failed = err
		}
		if !errors.Is(failed, syscall.ENOSPC) {
			t.Errorf("1 MiB written into 256 KiB: the writes and the close reported %v, want ENOSPC", failed)
		}
	})
}
