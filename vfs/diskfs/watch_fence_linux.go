//go:build linux

package diskfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/internal/bounds"
)

// The fence of a watch (vfs.Watcher.Fence; see the top of watch_linux.go
// for why a marker). Its mutex is taken after f.watchMu and never
// together with treeWatch.mu or the feed's.

// markerPatience bounds how long a marker may be on its way. Past it the
// marker is taken for lost, as in an overflow of the queue: the batch
// goes out saying changes were lost, which frees the waiters honestly,
// and a fence can never hang on a marker that will not come. A var for
// tests: a marker takes it as it starts.
var markerPatience = 5 * time.Second

// marker is a watch's fence: a file of its own whose writes queue an
// event behind every event queued before, and the fences waiting for it.
type marker struct {
	log *bounds.RateLog
	// flushes carries the fences of a watch without a marker to run,
	// which hands on what it holds and closes the channel sent.
	flushes chan chan struct{}
	// overdue fires once the marker on its way is past patience
	// (markerPatience when the watch started).
	overdue  *time.Timer
	patience time.Duration
	// dir is the private directory the marker files are made in ("":
	// none could be), and dirID who it is.
	dir   string
	dirID fileID

	mu sync.Mutex
	// file is the marker (nil: none; a fence hands on what run holds),
	// path its name in the events, epoch the count of files made (each
	// is named by it: a marker written to an earlier file that comes late
	// names another file, and is passed over).
	file  *os.File
	path  string
	epoch int
	// sent closes once the marker on its way is seen (nil: none on its
	// way); next once the one after it is, which run writes on seeing
	// sent's for the fences that came meanwhile (nil: none came).
	sent, next chan struct{}
	closed     bool
}

// startMarker makes the marker of the watch w, or logs why there is none.
func startMarker(w *fsnotify.Watcher, log *bounds.RateLog) *marker {
	m := &marker{log: log, flushes: make(chan chan struct{}),
		overdue: time.NewTimer(markerPatience), patience: markerPatience}
	m.overdue.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.makeLocked(w); err != nil {
		m.noMarkerLocked(err)
	}
	return m
}

func (m *marker) makeLocked(w *fsnotify.Watcher) error {
	dir, err := os.MkdirTemp("", "gsvfs-fence-")
	if err != nil {
		return err
	}
	m.dir = dir
	var st unix.Statx_t
	if err := statx(unix.AT_FDCWD, dir, &st); err != nil {
		return err
	}
	m.dirID = idOf(&st)
	if err := w.Add(dir); err != nil {
		return err
	}
	return m.renewLocked()
}

// renewLocked puts a new marker file in place of the current one. It is
// made empty: its creation queues no write, so only markers do.
func (m *marker) renewLocked() error {
	m.dropFileLocked()
	m.epoch++
	p := filepath.Join(m.dir, fmt.Sprint("m", m.epoch))
	file, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	m.file, m.path = file, p
	return nil
}

func (m *marker) dropFileLocked() {
	if m.file != nil {
		m.file.Close()
		os.Remove(m.path)
		m.file, m.path = nil, ""
	}
}

// noMarkerLocked leaves the watch without a marker, saying why.
func (m *marker) noMarkerLocked(err error) {
	m.dropFileLocked()
	m.log.Warn("fence-marker", "no fence marker: a change made outside gsvfs may reach a client after a reply that followed it",
		"err", err)
}

// markerByte is what a marker writes, at offset 0: the file stays one
// byte long.
var markerByte = []byte{0}

// writeLocked sends a marker, reporting false if it could not (then the
// watch has no marker from now on).
func (m *marker) writeLocked() bool {
	if _, err := m.file.WriteAt(markerByte, 0); err != nil {
		m.noMarkerLocked(err)
		return false
	}
	m.overdue.Reset(m.patience)
	return true
}

// wait returns what closes once a marker written after the call has been
// seen and the batch before it handed on; nil if there is no marker
// (then run is to hand on what it holds).
func (m *marker) wait() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.file == nil {
		return nil
	}
	if m.sent != nil {
		// The marker on its way may have been written before the
		// caller's changes: wait for the next, which serves everyone
		// who comes until it is written.
		if m.next == nil {
			m.next = make(chan struct{})
		}
		return m.next
	}
	if !m.writeLocked() {
		return nil
	}
	m.sent = make(chan struct{})
	return m.sent
}

// owns says an event is of the marker's directory or lies in it: never
// a change of the tree.
func (m *marker) owns(name string) bool {
	return m.dir != "" && (name == m.dir || strings.HasPrefix(name, m.dir+"/"))
}

// holds says n is the marker's directory, which the tree must not watch
// (its watch is the marker's, under another path perhaps).
func (m *marker) holds(n *node) bool { return m.dir != "" && n.id == m.dirID }

// What an event of the marker's directory means to run.
const (
	markerNothing = iota // an earlier file's, or the creation of one
	markerPassed         // the marker on its way
	markerGone           // the marker or its directory went (first word of it)
)

func (m *marker) classify(ev fsnotify.Event) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case ev.Name == m.path && ev.Has(fsnotify.Write) && m.sent != nil:
		return markerPassed
	case m.file != nil && (ev.Name == m.dir || ev.Name == m.path) && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
		return markerGone
	}
	return markerNothing
}

// passed frees the fences waiting for the marker on its way, run having
// handed on the batch before it, and sends the next for those that came
// meanwhile.
func (m *marker) passed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sent == nil {
		return // closed meanwhile
	}
	m.overdue.Stop()
	close(m.sent)
	m.sent, m.next = m.next, nil
	if m.sent != nil && (m.file == nil || !m.writeLocked()) {
		// Without a marker, what run handed on just now is all a
		// fence gets.
		release(&m.sent)
	}
}

// giveUp frees every fence waiting: the marker on its way may never come
// (the queue overflowed, it is overdue) or cannot (gone). run has just
// handed on a batch saying changes were lost, which covers whatever they
// waited for. A marker that comes yet must not count: a new file takes
// the place of the one it was written to. A marker gone (someone cleans
// the temporary directory) is not made again.
func (m *marker) giveUp(gone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.overdue.Stop()
	onItsWay := m.sent != nil
	release(&m.sent)
	release(&m.next)
	switch {
	case m.closed || m.file == nil:
	case gone:
		m.noMarkerLocked(fmt.Errorf("%s removed", m.dir))
	case onItsWay:
		if err := m.renewLocked(); err != nil {
			m.noMarkerLocked(err)
		}
	}
}

// close frees every fence waiting, and removes the marker.
func (m *marker) close() {
	m.mu.Lock()
	m.closed = true
	m.overdue.Stop()
	release(&m.sent)
	release(&m.next)
	m.dropFileLocked()
	m.mu.Unlock()
	if m.dir != "" {
		os.RemoveAll(m.dir)
	}
}

// release closes *ch if set, and clears it.
func release(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// fence waits until a marker written after the call has been seen and
// the batch before it handed on; without a marker, until run has handed
// on what it holds.
func (tw *treeWatch) fence(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	passed := tw.marker.wait()
	if passed == nil {
		reply := make(chan struct{})
		select {
		case tw.marker.flushes <- reply:
		case <-tw.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		passed = reply
	}
	select {
	case <-passed:
		return nil
	case <-tw.done:
		return nil // nothing more will be handed on
	case <-ctx.Done():
		return ctx.Err()
	}
}
