// Package sysfs is /sys: what the daemon is and serves, as text files an
// agent or a person reads with cat. Each file is a snapshot made at open
// (vfs.NewSnapshotFile) from what its owner reports; /sys/devices is the
// devices package's, mounted beside these.
package sysfs

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/vfs"
)

// Options are the facts /sys shows.
type Options struct {
	Version string
	Started time.Time
	Clock   func() time.Time // time.Now if nil
	// Capabilities lists what the daemon serves, such as "fs.read" and
	// "shell.exec"; it may change while the daemon runs.
	Capabilities func() []string
	// Table is the namespace, for /sys/mounts.
	Table *mounts.Table
	// Log is the daemon's recent log, for /sys/log; nil leaves it out.
	Log vfs.Stream
	// Cron is the table of /sys/cron; nil leaves it out.
	Cron func() []byte
}

// New returns /sys.
func New(o Options) vfs.Node {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	files := map[string]vfs.Node{
		"version": vfs.NewSnapshotFile(func(context.Context) []byte {
			return fmt.Appendf(nil, "gsvfs %s %s/%s %s\n", o.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
		}),
		"uptime": vfs.NewSnapshotFile(func(context.Context) []byte {
			up := o.Clock().Sub(o.Started).Truncate(time.Second)
			return fmt.Appendf(nil, "%d %s since %s\n", int64(up.Seconds()), up, o.Started.UTC().Format(time.RFC3339))
		}),
		"capabilities": vfs.NewSnapshotFile(func(context.Context) []byte {
			return lines(o.Capabilities())
		}),
		"mounts": vfs.NewSnapshotFile(func(context.Context) []byte {
			var b strings.Builder
			for _, e := range o.Table.List() {
				fmt.Fprintf(&b, "%s\t%s\n", e.Path, dash(e.What))
			}
			return []byte(b.String())
		}),
	}
	if o.Log != nil {
		files["log"] = vfs.NewStreamFile(o.Log)
	}
	if o.Cron != nil {
		files["cron"] = vfs.NewSnapshotFile(func(context.Context) []byte { return o.Cron() })
	}
	return vfs.NewStaticDir(files)
}

func lines(items []string) []byte {
	if len(items) == 0 {
		return nil
	}
	return []byte(strings.Join(items, "\n") + "\n")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
