package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gsvfs/gsvfs/crond"
	"github.com/gsvfs/gsvfs/devfs"
	"github.com/gsvfs/gsvfs/devices"
	"github.com/gsvfs/gsvfs/docs/man"
	"github.com/gsvfs/gsvfs/mounts"
	"github.com/gsvfs/gsvfs/procfs"
	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/sysfs"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// diskTrees are the disk-backed trees, each a directory of the state
// directory served at the same name.
var diskTrees = []string{"home", "workspaces", "etc"}

// treeModes are the modes the trees are made with: /workspaces is shared
// like /tmp (anyone may make a workspace; only its owner may remove it),
// /home and /etc are the operator's.
var treeModes = map[string]os.FileMode{
	"home":       0o755,
	"workspaces": 0o777 | os.ModeSticky,
	"etc":        0o755,
}

// DefaultRoot is the state directory used without --root: root's in
// /var/lib, another user's in its data directory.
func DefaultRoot() string {
	if os.Geteuid() == 0 {
		return "/var/lib/gsvfs"
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "gsvfs")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("gsvfs-%d", os.Getuid()))
	}
	return filepath.Join(home, ".local", "share", "gsvfs")
}

// PrepareRoot makes the state directory root and its trees, and checks
// that it can be written, so a bad --root fails before anything is
// mounted. It returns the directory's absolute path.
func PrepareRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("state directory %s cannot be created: %w", abs, err)
	}
	for _, name := range diskTrees {
		if err := makeTree(filepath.Join(abs, name), treeModes[name]); err != nil {
			return "", fmt.Errorf("state directory %s cannot be written: %w", abs, err)
		}
	}
	probe, err := os.CreateTemp(abs, ".gsvfs-probe-*")
	if err != nil {
		return "", fmt.Errorf("state directory %s cannot be written: %w", abs, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return abs, nil
}

// makeTree creates a tree's directory with its mode, leaving an existing
// one as the operator has it.
func makeTree(dir string, mode os.FileMode) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.Chmod(dir, mode) // exact, whatever the umask
}

// Options are what a daemon's namespace is made of beyond the state
// directory.
type Options struct {
	// Self is this machine's device id.
	Self string
	// Sessions configures the shell sessions of /proc.
	Sessions shelld.Config
	// NoSessions serves no /proc and runs no crontab: the daemon's
	// tree is files only, to a gateway as to anyone.
	NoSessions bool
	// Binds are HOSTDIR:PATH, host directories served at PATH.
	Binds []string
	// Refuse are the patterns a device's link does not export.
	Refuse []string
	// Facts are the read-only settings /sys/config shows, and Explicit
	// the flags given on the command line (they win over the conf file).
	Facts    []sysfs.ConfigKey
	Explicit map[string]bool
	// Version is the daemon's, shown in /sys and told to gateways.
	Version string
	// Log is the daemon's recent log, /sys/log; nil serves none.
	Log vfs.Stream
	// LogLevel is the level the daemon's log keeps, which
	// /sys/config/log-level changes; nil makes one nobody reads.
	LogLevel *slog.LevelVar
}

// Tree is the namespace a daemon serves, and how to end it.
type Tree struct {
	// Root is the whole tree, as the daemon's own users see it.
	Root vfs.Node
	// Table is the mount table behind Root.
	Table *mounts.Table
	// Export is what the daemon serves to a gateway it joins: Root less
	// the refused paths and the local ones (localPaths).
	Export vfs.Node
	// Gateway shows the devices in /sys/devices and /mnt.
	Gateway *devices.Gateway
	// Fsid is the tree's filesystem id (statfs f_fsid over 9P).
	Fsid uint64

	// caps is what /sys/capabilities says the daemon serves.
	caps *capabilities
	// edges are the servers of the tree, counted in /sys/stats.
	edges *edgeList
	// facts are what the daemon tells gateways of itself.
	facts devices.Facts
	// mounted is where this daemon mounts the tree on this machine (nil:
	// nowhere), which sessions are told ($GSVFS_TREE).
	mounted atomic.Pointer[string]
	// sessions are the shell sessions of /proc.
	sessions *shelld.Manager
	// stop cancels the context of the tree's goroutines, which jobs
	// runs.
	stop context.CancelFunc
	jobs *errgroup.Group
	// trees close the disk trees the tree was built with (the state
	// directory's and --bind's), once nothing serves them.
	trees closers
	// resolvers make and end the namespace file's binds.
	resolvers mounts.Resolvers
}

// reapEvery is how often finished sessions past their retention time are
// forgotten when nobody lists /proc.
const reapEvery = 30 * time.Second

// Build composes the namespace served from the state directory root (made
// by PrepareRoot) and starts its goroutines; Close ends them.
func Build(root string, o Options) (*Tree, error) {
	if o.LogLevel == nil {
		o.LogLevel = new(slog.LevelVar)
	}
	hide, err := hideState(root)
	if err != nil {
		return nil, err
	}
	hostDir := hostTrees(hide)
	var trees closers
	t, err := mountFiles(root, hide, o.Binds, hostDir, &trees)
	if err != nil {
		trees.close()
		return nil, err
	}
	// The export is the device's own tree: never the other devices it
	// reaches (a shell on each), nor the gateway owner's state and
	// settings, whatever the binds and refusals say.
	t.Local(localPaths...)
	export, err := t.Refusing(exportRefused(o))
	if err != nil {
		trees.close()
		return nil, err
	}
	tr := &Tree{Table: t, Export: export, Fsid: stateFsid(root), caps: newCapabilities("fs.read", "fs.write"),
		edges: &edgeList{}, facts: localFacts(!o.NoSessions, o.Version), trees: trees,
		resolvers: mounts.Resolvers{HostDir: hostDir, Dial: dialServer}}
	if !o.NoSessions {
		tr.caps.add("shell.exec")
	}
	o.Sessions.Namespace = sessionNamespace(t, root, &tr.mounted)
	tr.sessions = shelld.NewManager(o.Sessions)
	proc, cron, err := tr.mountServices(root, o)
	if err != nil {
		tr.sessions.Close()
		trees.close()
		return nil, err
	}
	tr.start(root, proc, cron, hostDir, !o.NoSessions)
	tr.Root = t.Root()
	return tr, nil
}

// mountFiles makes the mount table with the files of the tree: the disk
// trees of the state directory root, the manual, /mnt for the devices,
// and the host directories of binds. The disk trees it opens go on
// trees, also when it fails.
func mountFiles(root string, hide *diskfs.Hidden, binds []string, hostDir hostDirFunc, trees *closers) (*mounts.Table, error) {
	t := mounts.New()
	for _, name := range diskTrees {
		d, err := diskfs.NewHiding(filepath.Join(root, name), hide)
		if err != nil {
			return nil, err
		}
		trees.add(func() { d.Close() })
		if err := t.MountAs("/"+name, d.Root(), "disk "+filepath.Join(root, name)); err != nil {
			return nil, err
		}
	}
	pages, err := manTree()
	if err != nil {
		return nil, err
	}
	if err := t.MountAs("/etc/man", pages, "manual"); err != nil {
		return nil, err
	}
	// /mnt holds the devices' mount points, made as they become known.
	if err := t.MountAs("/mnt", vfs.NewStaticDir(nil), "devices' trees"); err != nil {
		return nil, err
	}
	if err := bindHostDirs(t, binds, hostDir, trees); err != nil {
		return nil, err
	}
	return t, nil
}

// closers are what a tree closes as it ends, in the order opened.
type closers []func()

func (c *closers) add(close func()) { *c = append(*c, close) }

func (c closers) close() {
	for _, close := range c {
		close()
	}
}

// mountServices mounts the daemon's synthetic trees (/dev, /sys, /proc)
// and the devices' gateway, and makes the crontab's runner, which start
// starts.
func (tr *Tree) mountServices(root string, o Options) (*procfs.FS, *crond.Daemon, error) {
	t := tr.Table
	dev := devfs.New(devfs.Options{Log: slog.Default()})
	if err := t.MountAs("/dev", dev.Root(), "dev"); err != nil {
		return nil, nil, err
	}
	cron := crond.New(crond.Options{File: filepath.Join(root, "etc", "crontab"),
		Runner: sessionRunner{tr.sessions}, Log: slog.Default()})
	settings := writableSettings(tr.sessions, o.LogLevel)
	applyConf(root, settings, o.Explicit)
	// The gateway is made below; /sys/stats asks it only when read.
	if err := t.MountAs("/sys", sysfs.New(sysfs.Options{Version: o.Version, Started: time.Now(),
		Capabilities: tr.caps.list, Table: t, Log: o.Log, Cron: cron,
		Config:   configKeys(root, o.Facts, settings),
		Sessions: tr.sessions.Counts, Edges: tr.edges.list,
		DevLog:  func() sysfs.LogCounts { return sysfs.LogCounts(dev.LogStats()) },
		Devices: func() (int, int) { return tr.Gateway.Counts() }, Links: func() []sysfs.Link { return linkCounts(tr.Gateway) }}), "sys"); err != nil {
		return nil, nil, err
	}
	proc := procfs.New(tr.sessions, procfs.Options{Resolve: resolver(t)})
	if !o.NoSessions {
		if err := t.MountAs("/proc", proc.Root(), "proc"); err != nil {
			return nil, nil, err
		}
	}
	gw, err := newGateway(root, o.Self, t, tr.facts)
	if err != nil {
		return nil, nil, err
	}
	tr.Gateway = gw
	return proc, cron, nil
}

// start runs the tree's goroutines on one context, which Close cancels:
// the gateway's watch of its devices, the namespace file's watcher, the
// reaper of finished sessions and, with sessions, crond.
func (tr *Tree) start(root string, proc *procfs.FS, cron *crond.Daemon, hostDir hostDirFunc, sessions bool) {
	ctx, cancel := context.WithCancel(context.Background())
	tr.jobs, ctx = errgroup.WithContext(ctx)
	tr.stop = cancel
	tr.jobs.Go(func() error { tr.Gateway.Watch(ctx); return nil })
	if sessions {
		// Load reads the crontab before the tree is served, so every
		// line written through the tree is read later.
		cron.Load(ctx)
		tr.jobs.Go(func() error { cron.Run(ctx); return nil })
	}
	ns := &nsFollower{t: tr.Table, file: filepath.Join(root, "etc", "namespace"), hostDir: hostDir}
	tr.Table.GuardNamespace("/etc/namespace", func() { ns.apply(ctx) })
	tr.jobs.Go(func() error { ns.follow(ctx); return nil })
	tr.jobs.Go(func() error { reapSessions(ctx, proc); return nil })
}

// Close ends the tree, once the edges that serve it have stopped: it
// cancels the tree's goroutines and waits for them, ends the devices'
// links, ends the sessions of /proc, killing their processes, and closes
// the trees it served: the namespace's binds, the --bind directories and
// the state directory's. It is called once.
func (tr *Tree) Close() error {
	tr.stop()
	err := tr.jobs.Wait()
	tr.Gateway.Close()
	tr.sessions.Close()
	// No line is left: the namespace's binds close what they opened.
	if nsErr := tr.Table.ApplyNamespace(context.Background(), "", tr.resolvers); nsErr != nil {
		slog.Warn("ending the namespace's binds", "err", nsErr)
	}
	tr.trees.close()
	return err
}

// EndSessions ends the sessions of /proc, whose mount namespaces hold the
// tree's FUSE mount: before an unmount, which waits for them.
func (tr *Tree) EndSessions() { tr.sessions.Close() }

// MountedAt records that this daemon mounts the tree at dir on this
// machine, which the sessions made from then on are told ($GSVFS_TREE).
func (tr *Tree) MountedAt(dir string) { tr.mounted.Store(&dir) }

// AddCapability lists name in /sys/capabilities, as a link opens.
func (tr *Tree) AddCapability(name string) { tr.caps.add(name) }

// AddEdge lists a 9P server of the tree in /sys/stats.
func (tr *Tree) AddEdge(name string, srv *ninep.Server) { tr.edges.add(name, srv) }

// AddEdgeStats lists in /sys/stats an edge whose counts stats reads.
func (tr *Tree) AddEdgeStats(name string, stats func() sysfs.Edge) { tr.edges.addStats(name, stats) }

// Facts are what this daemon reports of itself as a device, to a gateway
// it joins.
func (tr *Tree) Facts() devices.Facts { return tr.facts }

// bindHostDirs serves each HOSTDIR:PATH of binds as a disk tree at PATH,
// with the confinement of the state directory's own trees.
func bindHostDirs(t *mounts.Table, binds []string, hostDir hostDirFunc, trees *closers) error {
	for _, b := range binds {
		host, at, ok := strings.Cut(b, ":")
		if !ok || !filepath.IsAbs(host) || !path.IsAbs(at) || path.Clean(at) != at || at == "/" {
			return fmt.Errorf("--bind %q: want HOSTDIR:PATH, both absolute, such as /home/me/src:/workspaces/src", b)
		}
		// Served as long as the tree: closed with it.
		d, closeTree, err := hostDir(host)
		if err != nil {
			return fmt.Errorf("--bind %s: %w", b, err)
		}
		trees.add(closeTree)
		if err := t.MountAs(at, d, "disk "+host); err != nil {
			return err
		}
	}
	return nil
}

// DefaultRefused are the paths a device never exports, whatever it
// binds: keys and credentials kept under a home directory, and the key
// files ssh-add loads wherever they lie. gsvfs-devices(7) lists them.
var DefaultRefused = []string{
	"**/.ssh/**", "**/.gnupg/**", "**/.aws/**", "**/.kube/**", "**/.config/gh/**",
	"**/.netrc", "**/.git-credentials", "**/.docker/config.json",
	"**/.pgpass", "**/.npmrc", "**/.pypirc",
	"**/id_{rsa,dsa,ecdsa,ecdsa_sk,ed25519,ed25519_sk,xmss}",
}

// localPaths are the parts of the tree a daemon serves to its own users
// only: the devices it is a gateway of (/mnt), what it keeps about them
// (/sys/devices) and its writable settings (/sys/config). A peer that
// joins or dials it gets the rights of its role, which are none of these.
var localPaths = []string{"/mnt", "/sys/devices", "/sys/config"}

// sessionFiles are what a daemon without sessions does not export
// either: the crontab runs commands, and the namespace file binds any host
// directory, so a gateway writing them would get a shell, or files the
// device never exported, back.
var sessionFiles = []string{"etc/crontab", "etc/namespace"}

// exportRefused is what the export to a gateway leaves out.
func exportRefused(o Options) []string {
	if !o.NoSessions {
		return o.Refuse
	}
	return append(slices.Clone(o.Refuse), sessionFiles...)
}

// PrivateDir holds what no tree exports: the daemon's key, the tokens it
// issued, the devices' pinned keys, the addresses its TLS listeners
// advertise. It sits beside the disk trees in the state directory root,
// never inside one.
func PrivateDir(root string) string { return filepath.Join(root, "private") }

// hideState makes the state directory root and its private part hidden
// in every tree the daemon serves, by their identity on disk rather than
// their paths: a bind of a parent of root (a home directory holding
// ~/.local/share/gsvfs), a second bind or a symlink never shows them,
// and no tree may be served from inside the private part.
func hideState(root string) (*diskfs.Hidden, error) {
	if err := os.MkdirAll(PrivateDir(root), 0o700); err != nil {
		return nil, err
	}
	hide := &diskfs.Hidden{}
	if err := hide.Add(root, false); err != nil {
		return nil, err
	}
	if err := hide.Add(PrivateDir(root), true); err != nil {
		return nil, err
	}
	return hide, nil
}

// newGateway makes the device table of the daemon on root, which puts
// each known device's tree at /mnt/ID of t and lists them all in
// /sys/devices; facts are what the daemon tells of itself.
func newGateway(root, self string, t *mounts.Table, facts devices.Facts) (*devices.Gateway, error) {
	store, err := devices.OpenStore(PrivateDir(root))
	if err != nil {
		return nil, err
	}
	// The key first: the gateway dials the devices added to it as soon
	// as it watches the store.
	id, err := devices.LoadIdentity(PrivateDir(root))
	if err != nil {
		return nil, err
	}
	gw, err := devices.NewGateway(store, devices.GatewayOptions{
		Self:     self,
		Facts:    facts,
		Identity: id,
		Mount:    func(id string, n vfs.Node) { mountDevice(t, id, n) },
		Unmount:  func(id string, _ vfs.Node) { t.Unmount("/mnt/" + id) },
		Log:      slog.Default(),
	})
	if err != nil {
		return nil, err
	}
	if err := t.MountAs("/sys/devices", gw.DevicesDir(), "devices"); err != nil {
		return nil, err
	}
	return gw, nil
}

// mountDevice puts a device's tree at /mnt/ID of t when the gateway
// learns of it, in the gateway's goroutine: nobody waits for an error
// there, so a refusal goes to the log.
func mountDevice(t *mounts.Table, id string, n vfs.Node) {
	at := "/mnt/" + id
	if err := t.MountAs(at, n, "device "+id); err != nil {
		slog.Warn("device's tree not mounted", "device", id, "path", at, "err", err)
	}
}

// localFacts are what the daemon of version reports of itself as a
// device: shell sessions only where it serves them.
func localFacts(sessions bool, version string) devices.Facts {
	impl := []string{"fs.*"}
	if sessions {
		impl = append(impl, "shell.exec")
	}
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	return devices.Facts{Platform: runtime.GOOS, Arch: runtime.GOARCH, Version: version, Implements: impl, Uid: &uid, Gid: &gid}
}

// reapSessions forgets the finished sessions of proc past their
// retention time, every reapEvery until ctx ends.
func reapSessions(ctx context.Context, proc *procfs.FS) {
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			proc.Reap()
		case <-ctx.Done():
			return
		}
	}
}

// linkCounts is the gateway's requests per device link for /sys/stats.
func linkCounts(gw *devices.Gateway) []sysfs.Link {
	var out []sysfs.Link
	for _, c := range gw.LinkRequests() {
		out = append(out, sysfs.Link(c))
	}
	return out
}

// resolver maps the directory a session's `ctl cwd` names to the host
// directory its process runs in: a path of the tree through the namespace
// (binds, unions and --bind included), any other path (its first name is
// none of the tree's, such as /tmp) as the host's.
func resolver(t *mounts.Table) func(context.Context, string) (string, error) {
	return func(ctx context.Context, p string) (string, error) {
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		root := t.Root()
		n, err := root.Lookup(ctx, top)
		if errors.Is(err, fs.ErrNotExist) || top == "" {
			return p, nil
		}
		if f, ok := n.(vfs.Forgetter); ok {
			f.Forget()
		}
		return t.HostPath(ctx, p)
	}
}

// manTree lays the built-in manual pages out as a MANPATH directory
// (man1/gsvfs.1, man7/gsvfs.7), so `man -M MOUNT/etc/man gsvfs` works.
func manTree() (vfs.Node, error) {
	entries, err := fs.ReadDir(man.Pages, ".")
	if err != nil {
		return nil, err
	}
	sections := map[string]map[string]vfs.Node{}
	for _, e := range entries {
		ext := strings.TrimPrefix(path.Ext(e.Name()), ".")
		if ext == "" || ext == "go" {
			continue
		}
		data, err := fs.ReadFile(man.Pages, e.Name())
		if err != nil {
			return nil, err
		}
		dir := "man" + ext
		if sections[dir] == nil {
			sections[dir] = map[string]vfs.Node{}
		}
		sections[dir][e.Name()] = vfs.NewTextFile(data)
	}
	kids := map[string]vfs.Node{}
	for dir, pages := range sections {
		kids[dir] = vfs.NewStaticDir(pages)
	}
	return vfs.NewStaticDir(kids), nil
}

// capabilities is what the daemon serves, as /sys/capabilities lists it:
// the links add to it as they open.
type capabilities struct {
	mu    sync.Mutex
	names []string
}

func newCapabilities(names ...string) *capabilities { return &capabilities{names: names} }

func (c *capabilities) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.names, name) {
		c.names = append(c.names, name)
	}
}

func (c *capabilities) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.names))
}

// sessionRunner runs cron jobs as /proc sessions.
type sessionRunner struct{ mgr *shelld.Manager }

func (r sessionRunner) Run(name, command string) (func(context.Context) crond.Result, error) {
	s, err := r.mgr.Create(name)
	if err != nil {
		return nil, err
	}
	if err := s.Exec(command); err != nil {
		return nil, err
	}
	return func(ctx context.Context) crond.Result {
		st, err := s.Wait(ctx)
		if err != nil {
			return crond.Result{State: err.Error()}
		}
		return crond.Result{Exit: st.ExitCode, State: st.Status}
	}, nil
}

// edgeList is the 9P servers of a tree, for /sys/stats.
type edgeList struct {
	mu      sync.Mutex
	servers []namedServer
}

// namedServer is one edge and how to read its counts.
type namedServer struct {
	name  string
	stats func() sysfs.Edge
}

// add lists a 9P server.
func (l *edgeList) add(name string, srv *ninep.Server) {
	l.addStats(name, func() sysfs.Edge {
		st := srv.Stats()
		return sysfs.Edge{Connections: st.Connections,
			Requests: st.Requests, Errors: st.Errors, Read: st.Read, Written: st.Written}
	})
}

// addStats lists an edge whose counts stats reads.
func (l *edgeList) addStats(name string, stats func() sysfs.Edge) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers = append(l.servers, namedServer{name, stats})
}

func (l *edgeList) list() []sysfs.Edge {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sysfs.Edge
	for _, s := range l.servers {
		e := s.stats()
		e.Name = s.name
		out = append(out, e)
	}
	return out
}
