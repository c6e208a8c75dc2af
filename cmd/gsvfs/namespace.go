package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// watchNamespace applies the namespace file (the state directory's
// etc/namespace, /etc/namespace in the tree) to t now and again within
// half a second of every change, made through the tree or on disk, until
// ctx ends. A file refused is logged, and /sys/mounts says why.
func watchNamespace(ctx context.Context, t *mounts.Table, file string) {
	var stamp time.Time
	var size int64 = -1
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		fi, err := os.Stat(file)
		switch {
		case err != nil && size != -2:
			stamp, size = time.Time{}, -2 // gone, or not there yet: no binds
			applyNamespace(ctx, t, file, "")
		case err == nil && (!fi.ModTime().Equal(stamp) || fi.Size() != size):
			stamp, size = fi.ModTime(), fi.Size()
			if text, err := os.ReadFile(file); err == nil {
				applyNamespace(ctx, t, file, string(text))
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

func applyNamespace(ctx context.Context, t *mounts.Table, file, text string) {
	if err := t.ApplyNamespace(ctx, text, hostTree); err != nil {
		slog.Warn("namespace refused; the binds before it stay", "file", file, "err", err)
		return
	}
	if text != "" {
		slog.Info("namespace applied", "file", file)
	}
}

// hostTree serves a host directory bound into the tree, confined as the
// state directory's own trees are.
func hostTree(dir string) (vfs.Node, error) {
	d, err := diskfs.New(dir)
	if err != nil {
		return nil, err
	}
	return d.Root(), nil
}
