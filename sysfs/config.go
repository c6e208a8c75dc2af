package sysfs

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// ConfigKey is one setting of the daemon, a file of /sys/config.
type ConfigKey struct {
	Name   string
	Secret bool // read as ********
	Get    func() string
	// Set applies a value written to the file and keeps it for the next
	// start; nil makes the key read-only (mode 0444: an open for writing
	// fails with EACCES). Its error is EINVAL.
	Set func(value string) error
}

// masked is what a secret reads as.
const masked = "********"

// configDir is /sys/config: a file per key.
func configDir(keys []ConfigKey, log *slog.Logger) vfs.Node {
	files := map[string]vfs.Node{}
	for _, k := range keys {
		files[k.Name] = newConfigFile(k, log)
	}
	return vfs.NewStaticDir(files)
}

// configFile is a key's file, the daemon's user's: mode 0644 if the key
// can be set, else 0444.
type configFile struct {
	vfs.Leaf
	vfs.FileAttrs
	key ConfigKey
	log *slog.Logger
}

func newConfigFile(k ConfigKey, log *slog.Logger) *configFile {
	mode := uint32(0o444)
	if k.Set != nil {
		mode = 0o644
	}
	return &configFile{key: k, log: log, FileAttrs: vfs.FileAttrs{Ino: vfs.NewIno(), Mode: syscall.S_IFREG | mode,
		Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid()), Volatile: true}}
}

func (f *configFile) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if err := f.CheckOpen(flags); err != nil {
		f.log.Warn("config: the key is read-only", "key", f.key.Name)
		return nil, err
	}
	if flags&(os.O_WRONLY|os.O_RDWR) == 0 {
		v := f.key.Get()
		if f.key.Secret && v != "" {
			v = masked
		}
		return vfs.BytesHandle(v + "\n"), nil
	}
	return &configWriter{f: f}, nil
}

// configWriter applies what is written once its line is complete, so
// the write that ends it gets the answer, or at close.
type configWriter struct {
	f    *configFile
	mu   sync.Mutex
	buf  []byte
	done bool
}

func (w *configWriter) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, vfs.Error("read", w.f.key.Name, syscall.EBADF)
}

func (w *configWriter) WriteAt(_ context.Context, p []byte, _ int64) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		if len(bytes.TrimSpace(p)) == 0 {
			return len(p), nil
		}
		return 0, vfs.Error("write", w.f.key.Name, syscall.EINVAL) // one value per open
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > 4096 {
		return 0, vfs.Error("write", w.f.key.Name, syscall.EINVAL)
	}
	if bytes.IndexByte(w.buf, '\n') < 0 {
		return len(p), nil
	}
	if err := w.applyLocked(); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *configWriter) applyLocked() error {
	w.done = true
	value := strings.TrimSpace(string(w.buf))
	if err := w.f.key.Set(value); err != nil {
		w.f.log.Warn("config: value refused", "key", w.f.key.Name, "value", value, "err", err)
		return vfs.Error("write", w.f.key.Name, syscall.EINVAL)
	}
	w.f.log.Info("config: applied", "key", w.f.key.Name, "value", value)
	return nil
}

// Flush applies a value written without a newline when its writer closes
// the file, so close(2) returns the refusal (vfs.Flusher).
func (w *configWriter) Flush(context.Context) error { return w.Close() }

// Close applies a value written without a newline.
func (w *configWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || len(bytes.TrimSpace(w.buf)) == 0 {
		return nil
	}
	return w.applyLocked()
}
