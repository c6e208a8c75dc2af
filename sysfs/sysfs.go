// Package sysfs is /sys: what the daemon is and serves, as text files an
// agent or a person reads with cat. Each file is a snapshot made at open
// (vfs.NewSnapshotFile) from what its owner reports; /sys/devices is the
// devices package's, mounted beside these.
package sysfs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os/user"
	"runtime"
	"slices"
	"strconv"
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
	// Cron is /sys/cron (jobs, history, ctl); nil leaves it out.
	Cron Cron
	// Config is the daemon's settings, /sys/config; Log gets why a
	// write there was refused.
	Config    []ConfigKey
	ConfigLog *slog.Logger
	// Sessions, Devices, Links, Edges and DevLog feed /sys/stats.
	Sessions func() (live, total int)
	Devices  func() (online, known int)
	Links    func() []Link
	Edges    func() []Edge
	DevLog   func() LogCounts
}

// Link is what the gateway sent one device over its links: each request
// is a round trip over the network, what a remote tree's speed turns on.
type Link struct {
	Device   string
	Online   bool
	Requests int64
	ByType   map[string]int64 // Requests by kind: "walk", "read"...
	Notices  int64            // batches of change notices the device sent
}

// LogCounts are the lines written to /dev/log that the daemon logged,
// and those it dropped because their writer was over its rate.
type LogCounts struct {
	Lines, Bytes               int64
	DroppedLines, DroppedBytes int64
}

// Cron is what /sys/cron shows and takes: the table of the crontab's
// jobs, with their commands, their recent runs, a ctl line to run, and
// who may read and write the crontab (its owner, group and permission
// bits), who alone may read the table and history (the read bits) and
// write ctl (the write bits).
type Cron interface {
	Table() []byte
	History() []byte
	Control(line string) error
	Access() (uid, gid, perm uint32)
}

// Edge is what one server of the tree (a 9P listener) was asked, or
// what a FUSE mount told the kernel to forget (Kernel set).
type Edge struct {
	Name                            string
	Connections                     int
	Requests, Errors, Read, Written int64
	Kernel                          *KernelDrops
}

// KernelDrops counts the kernel caches a FUSE mount dropped after
// changes made outside.
type KernelDrops struct {
	Watching              bool
	Entries, Inodes, Lost int64
	// Pages counts writes of the kernel's dirty pages not made, because
	// the file had changed outside since (gsvfs-mount(1)).
	Pages int64
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
			if why := o.Table.NamespaceError(); why != "" {
				fmt.Fprintf(&b, "# /etc/namespace refused, the binds before it stay: %s\n", why)
			}
			return []byte(b.String())
		}),
	}
	if o.Log != nil {
		files["log"] = vfs.NewStreamFile(o.Log)
	}
	files["stats"] = vfs.NewSnapshotFile(func(context.Context) []byte { return stats(o) })
	if o.Config != nil {
		if o.ConfigLog == nil {
			o.ConfigLog = slog.Default()
		}
		files["config"] = configDir(o.Config, o.ConfigLog)
	}
	files["users"] = vfs.NewSnapshotFile(func(ctx context.Context) []byte { return users(ctx, o.Table) })
	if o.Cron != nil {
		files["cron"] = cronDir(o.Cron)
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

// stats is /sys/stats: a line per subject, worth a `watch cat`.
func stats(o Options) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "uptime %s\n", o.Clock().Sub(o.Started).Truncate(time.Second))
	if o.Sessions != nil {
		live, total := o.Sessions()
		fmt.Fprintf(&b, "sessions live %d total %d\n", live, total)
	}
	if o.Devices != nil {
		online, known := o.Devices()
		fmt.Fprintf(&b, "devices online %d known %d\n", online, known)
	}
	if o.Links != nil {
		for _, l := range o.Links() {
			fmt.Fprintf(&b, "device %s online %s requests sent %d notices %d\n", l.Device, yesNo(l.Online), l.Requests, l.Notices)
			if len(l.ByType) > 0 {
				fmt.Fprintf(&b, "device %s requests%s\n", l.Device, byType(l.ByType))
			}
		}
	}
	if o.DevLog != nil {
		c := o.DevLog()
		fmt.Fprintf(&b, "dev/log lines %d written %s dropped lines %d written %s\n",
			c.Lines, size(c.Bytes), c.DroppedLines, size(c.DroppedBytes))
	}
	if o.Edges != nil {
		for _, e := range o.Edges() {
			if k := e.Kernel; k != nil {
				fmt.Fprintf(&b, "edge %s watching %s dropped entries %d inodes %d all %d pages %d\n",
					e.Name, yesNo(k.Watching), k.Entries, k.Inodes, k.Lost, k.Pages)
				continue
			}
			fmt.Fprintf(&b, "edge %s connections %d requests %d errors %d read %s written %s\n",
				e.Name, e.Connections, e.Requests, e.Errors, size(e.Read), size(e.Written))
		}
	}
	for _, t := range o.Table.Stats() {
		p := t.Path
		if p == "" {
			p = "/" // the virtual directories joining the trees
		}
		fmt.Fprintf(&b, "tree %s requests %d errors %d read %s written %s",
			p, t.Requests, t.Errors, size(t.Read), size(t.Written))
		if w := t.Watch; w != nil {
			fmt.Fprintf(&b, " watched %d unwatched %d", w.Watched, w.Unwatched)
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// size is a byte count for people: 0 B, 512 B, 1.5 KiB, 20.0 MiB.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// users is /sys/users: a line per directory of /home, the tree's users,
// with the owner's uid and name and the group's gid.
func users(ctx context.Context, t *mounts.Table) []byte {
	home, err := vfs.Walk(ctx, t.Root(), "home")
	if err != nil {
		return nil
	}
	ents, _ := vfs.ReadDirAll(ctx, home)
	var b strings.Builder
	for _, e := range ents {
		n, err := home.Lookup(ctx, e.Name)
		if err != nil {
			continue
		}
		a, err := n.Attr(ctx)
		if err != nil || !a.IsDir() {
			continue
		}
		owner := strconv.Itoa(int(a.Uid))
		if u, err := user.LookupId(owner); err == nil {
			owner += "(" + u.Username + ")"
		}
		fmt.Fprintf(&b, "%s\tuid=%s\tgid=%d\thome=/home/%s\n", e.Name, owner, a.Gid, e.Name)
	}
	return []byte(b.String())
}

// cronDir is /sys/cron: jobs and history as private as the crontab is
// to read, ctl as private as it is to write.
func cronDir(c Cron) vfs.Node {
	snapshot := func(gen func() []byte) guardedFile {
		return guardedFile{vfs.NewSnapshotFile(func(context.Context) []byte { return gen() }), c.Access, 0o444}
	}
	ctl := vfs.NewFuncFile(0o200, func(context.Context, int) (vfs.Handle, error) {
		return &vfs.LineHandle{Run: func(_ context.Context, lines []string) error {
			for _, line := range lines {
				if err := c.Control(line); err != nil {
					return err
				}
			}
			return nil
		}}, nil
	})
	return vfs.NewStaticDir(map[string]vfs.Node{
		"jobs":    snapshot(c.Table),
		"history": snapshot(c.History),
		"ctl":     guardedFile{ctl, c.Access, 0o222},
	})
}

// guardedFile is a generated file whose owner, group and permission bits
// (those of mask) are those of the file it stands for, asked at each
// stat: the edges check them against the caller (on a FUSE mount the
// kernel does, with all of the caller's groups), so it is exactly as
// private as its source, through every mount, including a second mount
// attached to the daemon over 9P.
type guardedFile struct {
	*vfs.FuncFile
	access func() (uid, gid, perm uint32)
	mask   uint32
}

func (f guardedFile) Attr(ctx context.Context) (vfs.Attr, error) {
	a, err := f.FuncFile.Attr(ctx)
	uid, gid, perm := f.access()
	a.Uid, a.Gid, a.Mode = uid, gid, a.Type()|perm&f.mask
	return a, err
}

// SetAttr refuses what the file refuses, and reports its guarded
// attributes.
func (f guardedFile) SetAttr(ctx context.Context, s vfs.SetAttr) (vfs.Attr, error) {
	if _, err := f.FuncFile.SetAttr(ctx, s); err != nil {
		return vfs.Attr{}, err
	}
	return f.Attr(ctx)
}

// byType is " kind n" for each kind of request, the most sent first.
func byType(m map[string]int64) string {
	kinds := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b))
	})
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s %d", k, m[k])
	}
	return b.String()
}
