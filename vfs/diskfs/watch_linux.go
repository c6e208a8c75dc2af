//go:build linux

package diskfs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/bounds"
	"github.com/gsvfs/gsvfs/vfs"
)

// Changes other programs make in the host directory are found with
// inotify (through fsnotify) and reported to the edges (vfs.Watcher), so
// that the FUSE edge can let the kernel cache entries and attributes long
// and drop them the moment they go stale.
//
// Every directory node an edge holds is watched while someone subscribes.
// inotify on a directory reports the names made, removed, renamed, written
// and changed in it, which covers each file reached through it; a file
// changed through a hard link in a directory nobody watches, or written
// through a shared mapping, is not reported (inotify's own limits). A
// directory that cannot be watched (fs.inotify.max_user_watches reached)
// says so in its Attr (Watched false), so edges keep short cache times for
// what lies in it.
//
// Events are gathered for batchDelay into one batch, but a fence
// (vfs.Watcher.Fence: a 9P server fences before each reply, so that a
// change's notice goes out ahead of anything that followed the change)
// cannot wait for that, nor read the queue itself. The watch keeps a
// marker, a file of its own in a private directory (never part of the
// tree, even where the tree holds the temporary directory) watched by
// the same inotify instance: inotify keeps one queue per instance, in
// order, so a write to the marker queues an event behind every event
// queued before. When run reads it, it hands the batch on at once and
// frees the fences waiting. One marker is on its way at a time: a fence
// that comes meanwhile waits for the next, which run writes on seeing
// the first (the first may have been queued before the caller's
// changes), and which serves every fence that came before it was
// written; one at a time also keeps inotify from merging two markers
// into one event. A marker the kernel may have dropped (the queue
// overflowed) or that is overdue (markerPatience) frees the fences with
// a batch saying changes were lost, which covers what they waited for;
// a watch without a marker (no temporary directory, or it was removed)
// hands on what it holds to each fence, and says so once in the log.
//
// Locks: f.watchMu is taken before treeWatch.mu or marker.mu; those two
// are never held together, nor while the feed hands a batch on.

// batchDelay gathers the events of a burst (a writer's many writes, a
// checkout's many files) into one batch, each name reported once. A var
// so that tests can make it long: a watch takes it as it starts.
var batchDelay = 10 * time.Millisecond

// retryFull is how long a full watch table is left alone before a
// directory tries for a watch again.
const retryFull = 10 * time.Second

// treeWatch is the inotify watch of one tree and its subscribers.
type treeWatch struct {
	fs   *FS
	w    *fsnotify.Watcher
	log  *bounds.RateLog
	done chan struct{}
	// place adds a watch (w.Add; a test's stand-in runs out of room).
	place func(path string) error

	feed vfs.Feed[vfs.Change]
	// delay is batchDelay when the watch started.
	delay time.Duration
	// marker is the watch's fence (watch_fence_linux.go).
	marker *marker

	mu sync.Mutex
	// dirs are the watched directories by the path their watch was added
	// with, the name fsnotify reports their events under; paths is the
	// reverse.
	dirs  map[string]weak.Pointer[node]
	paths map[weak.Pointer[node]]string

	// fullSince is when a watch last failed for want of room (unix
	// nanoseconds, 0: never).
	fullSince atomic.Int64
}

// WatchCounts reports the tree's watch: the directories watched, those
// an edge may hold that are not (inotify's limit reached), and whether
// anyone subscribes (the counts are 0 otherwise).
func (n *node) WatchCounts() (watched, unwatched int, on bool) {
	f := n.fs
	tw := f.watch.Load()
	if tw == nil {
		return 0, 0, false
	}
	live := len(f.liveDirs())
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return len(tw.dirs), max(live-len(tw.dirs), 0), true
}

// Watch reports the changes other programs make anywhere in the node's
// tree (vfs.Watcher). The watch starts with the first subscriber and ends
// with the last.
func (n *node) Watch(fn func([]vfs.Change)) (stop func()) {
	return n.fs.subscribe(fn)
}

var _ vfs.Watcher = (*node)(nil)

// Fence returns once the changes made in the tree before the call have
// been handed to the subscribers (vfs.Watcher).
func (n *node) Fence(ctx context.Context) error {
	if tw := n.fs.watch.Load(); tw != nil {
		return tw.fence(ctx)
	}
	return nil
}

func (f *FS) subscribe(fn func([]vfs.Change)) func() {
	f.watchMu.Lock()
	defer f.watchMu.Unlock()
	tw := f.watch.Load()
	if tw == nil && f.fds.isClosed() {
		return func() {} // a closed tree changes no more
	}
	if tw == nil {
		var err error
		if tw, err = f.startWatch(); err != nil {
			slog.Warn("changes made outside gsvfs are not watched; the kernel keeps short cache times",
				"dir", f.dirName(), "err", err)
			return func() {}
		}
	}
	id, _ := tw.feed.Add(fn)
	return sync.OnceFunc(func() { f.unsubscribe(tw, id) })
}

func (f *FS) unsubscribe(tw *treeWatch, id int) {
	f.watchMu.Lock()
	defer f.watchMu.Unlock()
	// The watch may be gone already, ended by Close.
	if tw.feed.Remove(id) && f.watch.CompareAndSwap(tw, nil) {
		tw.close()
	}
}

// endWatch ends the watch, whoever subscribes: the tree is closing.
func (f *FS) endWatch() {
	f.watchMu.Lock()
	defer f.watchMu.Unlock()
	if tw := f.watch.Swap(nil); tw != nil {
		tw.close()
	}
}

// dirName is the host path of the tree's root, for messages.
func (f *FS) dirName() string {
	if p, ok := f.root.hostPath(); ok {
		return p
	}
	return "?"
}

func (f *FS) startWatch() (*treeWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	tw := &treeWatch{fs: f, w: w, done: make(chan struct{}), place: w.Add, delay: batchDelay,
		log:   bounds.NewRateLog(slog.Default(), 10*time.Second),
		dirs:  map[string]weak.Pointer[node]{},
		paths: map[weak.Pointer[node]]string{}}
	tw.marker = startMarker(w, tw.log)
	f.watch.Store(tw)
	go tw.run()
	for _, n := range f.liveDirs() {
		tw.add(n)
	}
	return tw, nil
}

// liveDirs returns the directory nodes an edge may hold.
func (f *FS) liveDirs() []*node {
	f.mu.Lock()
	defer f.mu.Unlock()
	var dirs []*node
	for _, wp := range f.nodes {
		if n := wp.Value(); n != nil && n.isDir {
			dirs = append(dirs, n)
		}
	}
	return dirs
}

// close ends the watch; the tree's nodes read as unwatched from now on.
func (tw *treeWatch) close() {
	tw.mu.Lock()
	for _, wp := range tw.dirs {
		if n := wp.Value(); n != nil {
			n.watched.Store(false)
		}
	}
	clear(tw.dirs)
	clear(tw.paths)
	tw.mu.Unlock()
	close(tw.done)
	tw.w.Close()
	tw.marker.close()
}

// watchDir watches the directory n if the tree is watched and n is not
// yet: called as an edge reaches it.
func (f *FS) watchDir(n *node) {
	if tw := f.watch.Load(); tw != nil && !n.watched.Load() {
		tw.add(n)
	}
}

// add places a watch on n at the path its descriptor now has.
func (tw *treeWatch) add(n *node) {
	if since := tw.fullSince.Load(); since != 0 && time.Since(time.Unix(0, since)) < retryFull {
		return
	}
	p, ok := n.hostPath()
	if !ok {
		return
	}
	tw.addAt(n, p)
}

// hostPath is where the directory is on the host now.
func (n *node) hostPath() (string, bool) {
	fd, err := n.hold()
	if err != nil {
		return "", false
	}
	defer n.unhold()
	p, err := os.Readlink(fdPath(fd))
	return p, err == nil && filepath.IsAbs(p)
}

func (tw *treeWatch) addAt(n *node, p string) {
	if tw.marker.holds(n) {
		return // the fence's, inside the tree: its events are never changes
	}
	if err := tw.place(p); err != nil {
		tw.failed(p, err)
		return
	}
	// The path was read from the descriptor, and could have been given
	// to another directory since: keep the watch only if it is n's.
	var st unix.Statx_t
	if statx(unix.AT_FDCWD, p, &st) != nil || idOf(&st) != n.id {
		tw.w.Remove(p)
		return
	}
	wp := weak.Make(n)
	tw.mu.Lock()
	if old, had := tw.dirs[p]; had && old != wp {
		if o := old.Value(); o != nil {
			o.watched.Store(false)
		}
		delete(tw.paths, old)
	}
	if was, had := tw.paths[wp]; had && was != p {
		delete(tw.dirs, was)
	}
	tw.dirs[p] = wp
	tw.paths[wp] = p
	tw.mu.Unlock()
	n.watched.Store(true)
}

// failed records that n could not be watched. Out of watches, the tree
// stops asking for a while and says so in the log.
func (tw *treeWatch) failed(p string, err error) {
	if errors.Is(err, unix.ENOENT) {
		return // removed meanwhile: nothing left to watch
	}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
		tw.fullSince.Store(time.Now().UnixNano())
		tw.log.Warn("inotify-full", "inotify watches used up (raise fs.inotify.max_user_watches): "+
			"directories beyond them keep short cache times", "dir", p)
		return
	}
	tw.log.Warn("inotify-add", "directory not watched: changes made outside gsvfs show after the short cache time",
		"dir", p, "err", err)
}

// forget drops the watch of a collected directory node.
func (tw *treeWatch) forget(wp weak.Pointer[node]) {
	tw.mu.Lock()
	p, ok := tw.paths[wp]
	if ok {
		delete(tw.paths, wp)
		if tw.dirs[p] == wp {
			delete(tw.dirs, p)
		} else {
			ok = false
		}
	}
	tw.mu.Unlock()
	if ok {
		tw.w.Remove(p)
	}
}

// changeKey is one entry (dir, name) of a batch, or a directory's own
// attributes (name "").
type changeKey struct {
	dir  *node
	name string
}

// batch is what run has gathered and not yet handed on.
type batch struct {
	pending map[changeKey]bool // value: the content was written
	lost    bool
	// due fires when the batch is to go out (nil: nothing gathered).
	due <-chan time.Time
}

// run gathers events into batches and hands them on.
func (tw *treeWatch) run() {
	b := batch{pending: map[changeKey]bool{}}
	for {
		select {
		case <-tw.done:
			return
		case ev, ok := <-tw.w.Events:
			if !ok {
				return
			}
			if tw.marker.owns(ev.Name) {
				tw.markerEvent(&b, ev)
				continue
			}
			if !tw.note(b.pending, ev) {
				b.lost = true
			}
		case err, ok := <-tw.w.Errors:
			if !ok {
				return
			}
			tw.log.Warn("inotify-error", "watch fell behind: the kernel's caches of the tree are dropped", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// The marker on its way may be among the events dropped.
				b.lost = true
				tw.handOn(&b)
				tw.marker.giveUp(false)
				continue
			}
		case <-b.due:
			tw.handOn(&b)
			continue
		case reply := <-tw.marker.flushes:
			tw.handOn(&b)
			close(reply)
			continue
		case <-tw.marker.overdue.C:
			tw.log.Warn("fence-overdue", "fence marker overdue: the kernel's caches of the tree are dropped",
				"after", tw.marker.patience)
			b.lost = true
			tw.handOn(&b)
			tw.marker.giveUp(false)
			continue
		}
		if b.due == nil {
			b.due = time.After(tw.delay)
		}
	}
}

// markerEvent follows an event of the fence's marker: the marker on its
// way hands on the batch at once, and then frees the fences waiting.
func (tw *treeWatch) markerEvent(b *batch, ev fsnotify.Event) {
	switch tw.marker.classify(ev) {
	case markerPassed:
		tw.handOn(b)
		tw.marker.passed()
	case markerGone:
		b.lost = true
		tw.handOn(b)
		tw.marker.giveUp(true)
	}
}

// handOn hands the batch to the subscribers (if it holds anything) and
// starts the next.
func (tw *treeWatch) handOn(b *batch) {
	if len(b.pending) > 0 || b.lost {
		tw.feed.Send(tw.changes(b.pending, b.lost))
	}
	clear(b.pending)
	b.lost = false
	b.due = nil
}

// note adds an event to the batch. A directory of the tree removed or
// moved loses its watch (inotify's watch now follows the directory to a
// path fsnotify no longer knows), and is watched again where it went. It
// reports false if changes may have gone unseen (see moved).
func (tw *treeWatch) note(pending map[changeKey]bool, ev fsnotify.Event) bool {
	tw.mu.Lock()
	parent := tw.dirs[filepath.Dir(ev.Name)].Value()
	self := tw.dirs[ev.Name].Value()
	tw.mu.Unlock()
	if parent != nil {
		key := changeKey{parent, filepath.Base(ev.Name)}
		pending[key] = pending[key] || ev.Has(fsnotify.Write)
	}
	if self == nil {
		return true
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		return tw.moved(pending, self, ev.Name)
	} else if parent == nil {
		pending[changeKey{self, ""}] = false
	}
	return true
}

// movedGap bounds the entries of a moved directory reported changed once
// it is watched again; past it the batch says changes were lost.
const movedGap = 4096

// moved watches a directory that left the path old again where it is
// now, and the watched directories below it too, whose watches fsnotify
// still knows by their old paths. A change made in them between the move
// and the new watch reached no watch, or came under the old path, which
// names nothing now: so every entry of each is reported changed. False if
// one had more than movedGap entries or could not be listed.
func (tw *treeWatch) moved(pending map[changeKey]bool, n *node, old string) bool {
	tw.mu.Lock()
	var below []string
	for p := range tw.dirs {
		if strings.HasPrefix(p, old+"/") {
			below = append(below, p)
		}
	}
	tw.mu.Unlock()
	tw.unwatch(n, old)
	now, ok := n.hostPath()
	ok = ok && !strings.HasSuffix(now, " (deleted)")
	complete := true
	if ok {
		tw.addAt(n, now)
		complete = rewatched(pending, n, now)
	}
	for _, p := range below {
		tw.mu.Lock()
		d := tw.dirs[p].Value()
		tw.mu.Unlock()
		if d == nil {
			continue
		}
		tw.unwatch(d, p)
		if ok {
			at := now + strings.TrimPrefix(p, old)
			tw.addAt(d, at)
			complete = rewatched(pending, d, at) && complete
		}
	}
	return complete
}

// rewatched reports every entry of d, watched again at at, changed.
func rewatched(pending map[changeKey]bool, d *node, at string) bool {
	f, err := os.Open(at)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(movedGap + 1)
	if err != nil && !errors.Is(err, io.EOF) || len(names) > movedGap {
		return false
	}
	for _, name := range names {
		pending[changeKey{d, name}] = true
	}
	return true
}

// unwatch removes n's watch at p.
func (tw *treeWatch) unwatch(n *node, p string) {
	wp := weak.Make(n)
	tw.mu.Lock()
	if tw.dirs[p] == wp {
		delete(tw.dirs, p)
		delete(tw.paths, wp)
	}
	tw.mu.Unlock()
	n.watched.Store(false)
	tw.w.Remove(p)
}

// withDirs adds to a batch each directory whose entries changed, so its
// attributes as they are now (its times moved) go with them: a client
// that holds the directory's attributes as its own change left them
// (the echo of its own create) keeps them, one that does not drops them.
func withDirs(pending map[changeKey]bool) {
	var dirs []*node
	for k := range pending {
		if k.name != "" {
			dirs = append(dirs, k.dir)
		}
	}
	for _, d := range dirs {
		if _, ok := pending[changeKey{d, ""}]; !ok {
			pending[changeKey{d, ""}] = false
		}
	}
}

// changes turns a batch into what the entries lead to now.
func (tw *treeWatch) changes(pending map[changeKey]bool, lost bool) []vfs.Change {
	cs := make([]vfs.Change, 0, len(pending)+1)
	if lost {
		cs = append(cs, vfs.Change{Lost: true})
	}
	withDirs(pending)
	for k, data := range pending {
		var st unix.Statx_t
		if k.name == "" {
			if k.dir.inDir(func(fd int) error { return fstatx(fd, &st) }) == nil {
				cs = append(cs, vfs.Change{Attr: toAttr(&st)})
			}
			continue
		}
		c := vfs.Change{Dir: k.dir.id.ino, Name: k.name, Data: data}
		err := k.dir.inDir(func(fd int) error { return statx(fd, k.name, &st) })
		if err == nil {
			c.Attr = toAttr(&st)
		}
		cs = append(cs, c)
	}
	return cs
}
