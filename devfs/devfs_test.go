package devfs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

func open(t *testing.T, dev vfs.Node, name string, flags int, ctx context.Context) vfs.Handle {
	t.Helper()
	n, err := dev.Lookup(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Open(ctx, flags)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return h
}

func TestDevices(t *testing.T) {
	ctx := context.Background()
	dev := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	buf := bytes.Repeat([]byte{7}, 1<<20)
	for _, c := range []struct {
		name     string
		readN    int
		readErr  error
		zeros    bool
		writeErr syscall.Errno
	}{
		{"null", 0, io.EOF, false, 0},
		{"zero", len(buf), nil, true, 0},
		{"full", len(buf), nil, true, syscall.ENOSPC},
		{"random", len(buf), nil, false, 0},
		{"urandom", len(buf), nil, false, 0},
	} {
		h := open(t, dev, c.name, os.O_RDWR, ctx)
		n, err := h.ReadAt(ctx, buf, 12345)
		if n != c.readN || err != c.readErr {
			t.Errorf("%s: read of 1 MiB: %d, %v; want %d, %v", c.name, n, err, c.readN, c.readErr)
		}
		if c.zeros && !bytes.Equal(buf[:n], make([]byte, n)) {
			t.Errorf("%s: read other than zeros", c.name)
		}
		if c.name == "random" && bytes.Count(buf, []byte{0}) > len(buf)/100 {
			t.Errorf("%s: too many zeros for random bytes", c.name)
		}
		n, err = h.WriteAt(ctx, []byte("hello"), 0)
		if vfs.Errno(err) != c.writeErr || c.writeErr == 0 && n != 5 {
			t.Errorf("%s: write: %d, %v; want errno %v", c.name, n, err, c.writeErr)
		}
		h.Close()
	}
}

func TestLogLines(t *testing.T) {
	var out bytes.Buffer
	dev := New(slog.New(slog.NewTextHandler(&out, nil)))
	ctx := vfs.WithCaller(context.Background(), vfs.Caller{Uid: 1000, Gid: 1000})
	h := open(t, dev, "log", os.O_WRONLY, ctx)
	h.WriteAt(ctx, []byte("first line\nsecond "), 0)
	h.WriteAt(ctx, []byte("line\nno newline"), 0)
	if strings.Contains(out.String(), "no newline") {
		t.Errorf("a partial line was logged before its newline or close")
	}
	h.Close()
	h.WriteAt(ctx, []byte(strings.Repeat("x", maxLogLine+10)+"\n"), 0)
	got := out.String()
	for _, want := range []string{`uid=1000 line="first line"`, `line="second line"`, `line="no newline"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if _, err := open(t, dev, "log", os.O_WRONLY, ctx).ReadAt(ctx, make([]byte, 1), 0); err == nil {
		t.Errorf("/dev/log read: no error")
	}
	n, _ := dev.Lookup(ctx, "log")
	if _, err := n.Open(ctx, os.O_RDONLY); vfs.Errno(err) != syscall.EACCES {
		t.Errorf("open /dev/log for reading: %v, want EACCES", err)
	}
}
