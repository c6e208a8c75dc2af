// Package fsmodel is a model checker for one file of a file system, in
// the manner of fsx: it drives random writes, reads, truncates up and
// down, mmap reads and writes, copy_file_range, fallocate and hole
// punching at a file, keeps what the file must hold in memory, and after
// every operation reads back the range it changed and the size fstat
// gives, and every so often the whole file. A second actor (a Disk) may
// change the file behind the path under test, between operations; the
// checker then holds the path to close-to-open (a fresh open reads
// exactly the new content, at once) and to a held descriptor seeing the
// change within a bound (polled, not slept).
//
// A run is decided by its seed: a failure names the seed, the operation
// that failed and the last operations before it, and the same seed and
// count replay it. The package is for tests and for the small checker
// command internal/fsmodel/fsx, which runs it where a test cannot (an
// ordinary user's mount, a virtual machine's 9P mount); nothing else may
// import it (TestDependenciesPointOneWay).
package fsmodel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// File is an open file of the path under test: one descriptor, which
// the checker holds for a whole run (reopening it only when the actor
// replaced the file). A call the path does not support returns an error
// that wraps errors.ErrUnsupported; the checker probes each kind once.
type File interface {
	ReadAt(p []byte, off int64) (int, error) // pread: short only at EOF
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Size() (int64, error) // fstat
	Sync() error
	// MapRead copies n bytes at off out of a shared mapping of the
	// file; off+n may pass the size up to the end of its last page.
	MapRead(off, n int64) ([]byte, error)
	// MapWrite writes p at off (inside the file) through a shared
	// mapping, and msyncs it.
	MapWrite(p []byte, off int64) error
	// CopyRange is one copy_file_range(2) within the file.
	CopyRange(src, dst, n int64) (int64, error)
	// Allocate is fallocate(2) with mode 0, or FALLOC_FL_KEEP_SIZE.
	Allocate(off, n int64, keepSize bool) error
	// PunchHole is fallocate(2) with FALLOC_FL_PUNCH_HOLE|KEEP_SIZE.
	PunchHole(off, n int64) error
	Close() error
}

// Disk is the second actor: it changes the file where the path under
// test gets it from (the backing disk, a device's disk), not through it.
type Disk interface {
	WriteAt(p []byte, off int64) error // in place, no truncation
	Truncate(size int64) error
	// Replace writes content to a new file and renames it over the
	// file: a descriptor held on the old one keeps the old content.
	Replace(content []byte) error
}

// Config is one run.
type Config struct {
	Seed uint64
	Ops  int
	// Open opens the file under test read-write, creating it empty.
	// It is called once at the start, again for each fresh open the
	// actor's checks make (with create false) and after a Replace.
	Open func(create bool) (File, error)
	// Disk, if set, is the second actor: an operation in ActorEvery
	// (at random) is a change made through it instead.
	Disk       Disk
	ActorEvery int           // default 4
	Within     time.Duration // a held descriptor sees a change by then; default 1 s
	// OpenWithin bounds how long a fresh open may show the content from
	// before a change; 0 (the default) is close-to-open: at once.
	OpenWithin time.Duration
	MaxSize    int64     // default 256 KiB
	MaxLen     int64     // the largest write or read; default 64 KiB
	FullEvery  int       // whole-file check period; default 100
	Keep       int       // operations kept for a failure; default 40
	Log        io.Writer // a line per skipped kind and a summary; may be nil
	// Replay is how a failure says to run it again; by default the
	// seed and count as GSVFS_FSX_SEED and GSVFS_FSX_OPS.
	Replay string
	// Without leaves kinds of operation out of the run, each with the
	// reason given (reported among the skipped): for a path whose
	// contract does not cover them, never to hide a failure.
	Without map[string]string
}

// page is the mapping granularity the checks assume; a larger page only
// makes MapRead's tail check cover less.
const page = 4096

// Failure is a run's first disagreement with the model.
type Failure struct {
	Seed   uint64
	Op     int      // the failing operation's number, from 1
	Ops    int      // the run's count, for the replay line
	What   string   // the operation and what was wrong
	Trail  []string // the operations before it, oldest first
	Replay string   // how to run it again; "" for the default
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fsmodel: seed %#x, operation %d: %s\n", f.Seed, f.Op, f.What)
	fmt.Fprintf(&b, "the last %d operations:\n", len(f.Trail))
	for _, l := range f.Trail {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if f.Replay != "" {
		fmt.Fprintf(&b, "replay: %s", f.Replay)
	} else {
		fmt.Fprintf(&b, "replay: GSVFS_FSX_SEED=%#x GSVFS_FSX_OPS=%d", f.Seed, f.Ops)
	}
	return b.String()
}

// Stats says what a run did.
type Stats struct {
	Done    map[string]int    // operations done, by kind
	Skipped map[string]string // kinds the path does not support: why
}

func (s Stats) String() string {
	var b strings.Builder
	for _, k := range kinds {
		if n := s.Done[k]; n > 0 {
			fmt.Fprintf(&b, "%s %d, ", k, n)
		}
	}
	for _, k := range kinds {
		if why, ok := s.Skipped[k]; ok {
			fmt.Fprintf(&b, "%s skipped (%s), ", k, why)
		}
	}
	return strings.TrimSuffix(b.String(), ", ")
}

// The kinds of operation.
const (
	opWrite    = "write"
	opRead     = "read"
	opTruncate = "truncate"
	opMapRead  = "mapread"
	opMapWrite = "mapwrite"
	opCopy     = "copy"
	opAlloc    = "fallocate"
	opPunch    = "punch"
	opActor    = "actor"
)

var kinds = []string{opWrite, opRead, opTruncate, opMapRead, opMapWrite, opCopy, opAlloc, opPunch, opActor}

// run is the state of one run.
type run struct {
	cfg   Config
	r     *rand.Rand
	f     File
	model []byte
	n     int // the operation being done
	trail []string
	stats Stats
}

// Run checks cfg.Ops operations and returns what it did, and a *Failure
// at the first disagreement (or the error that stopped it).
func Run(cfg Config) (Stats, error) {
	cfg.defaults()
	r := &run{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		stats: Stats{Done: map[string]int{}, Skipped: map[string]string{}}}
	f, err := cfg.Open(true)
	if err != nil {
		return r.stats, fmt.Errorf("fsmodel: opening the file: %w", err)
	}
	r.f = f
	defer func() { r.f.Close() }()
	if err := r.probe(); err != nil {
		return r.stats, err
	}
	for r.n = 1; r.n <= cfg.Ops; r.n++ {
		if err := r.step(); err != nil {
			return r.stats, r.fail(err)
		}
		if r.n%cfg.FullEvery == 0 {
			if err := r.checkAll(r.f, "whole file"); err != nil {
				return r.stats, r.fail(err)
			}
		}
	}
	if err := r.checkAll(r.f, "whole file at the end"); err != nil {
		return r.stats, r.fail(err)
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "fsmodel: seed %#x, %d operations: %s\n", cfg.Seed, cfg.Ops, r.stats)
	}
	return r.stats, nil
}

func (c *Config) defaults() {
	set := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&c.MaxSize, 256<<10)
	set(&c.MaxLen, 64<<10)
	if c.ActorEvery <= 0 {
		c.ActorEvery = 4
	}
	if c.FullEvery <= 0 {
		c.FullEvery = 100
	}
	if c.Keep <= 0 {
		c.Keep = 40
	}
	if c.Within <= 0 {
		c.Within = time.Second
	}
}

// fail wraps err, the failing operation's, with the run's trail.
func (r *run) fail(err error) error {
	return &Failure{Seed: r.cfg.Seed, Op: r.n, Ops: r.cfg.Ops, What: err.Error(), Trail: r.trail, Replay: r.cfg.Replay}
}

// note logs operation text for a failure's trail.
func (r *run) note(format string, args ...any) {
	r.trail = append(r.trail, fmt.Sprintf("%d: ", r.n)+fmt.Sprintf(format, args...))
	if len(r.trail) > r.cfg.Keep {
		r.trail = r.trail[1:]
	}
}

// probe tries each optional kind once on the empty file and records the
// ones the path does not support; it leaves the file empty.
func (r *run) probe() error {
	probes := []struct {
		kind string
		try  func() error
	}{
		{opMapWrite, func() error { return r.f.MapWrite([]byte{1}, 0) }},
		{opMapRead, func() error { _, err := r.f.MapRead(0, 1); return err }},
		{opCopy, func() error { _, err := r.f.CopyRange(0, page, 1); return err }},
		{opAlloc, func() error { return r.f.Allocate(0, 1, false) }},
		{opPunch, func() error { return r.f.PunchHole(0, 1) }},
	}
	if _, err := r.f.WriteAt([]byte{1}, 0); err != nil {
		return fmt.Errorf("fsmodel: probe write: %w", err)
	}
	for _, p := range probes {
		if err := p.try(); errors.Is(err, errors.ErrUnsupported) {
			r.stats.Skipped[p.kind] = err.Error()
			if r.cfg.Log != nil {
				fmt.Fprintf(r.cfg.Log, "fsmodel: %s not supported here, skipped: %v\n", p.kind, err)
			}
		} else if err != nil {
			return fmt.Errorf("fsmodel: probe %s: %w", p.kind, err)
		}
	}
	if err := r.f.Truncate(0); err != nil {
		return fmt.Errorf("fsmodel: probe truncate: %w", err)
	}
	if r.cfg.Disk == nil {
		r.stats.Skipped[opActor] = "no second actor"
	}
	for kind, why := range r.cfg.Without {
		if !slices.Contains(kinds, kind) {
			return fmt.Errorf("fsmodel: no kind of operation %q to leave out", kind)
		}
		r.stats.Skipped[kind] = "left out: " + why
	}
	return nil
}

// step picks one operation, does it on the file and the model, and
// checks what it changed.
func (r *run) step() error {
	kind := r.pick()
	r.stats.Done[kind]++
	switch kind {
	case opWrite:
		return r.write()
	case opRead:
		return r.read()
	case opTruncate:
		return r.truncate()
	case opMapRead:
		return r.mapRead()
	case opMapWrite:
		return r.mapWrite()
	case opCopy:
		return r.copyRange()
	case opAlloc:
		return r.allocate()
	case opPunch:
		return r.punch()
	default:
		return r.actor()
	}
}

// pick chooses a kind the path supports: writes and reads most, the
// actor one in ActorEvery.
func (r *run) pick() string {
	if r.cfg.Disk != nil && r.r.IntN(r.cfg.ActorEvery) == 0 {
		return opActor
	}
	weights := []struct {
		kind string
		w    int
	}{{opWrite, 6}, {opRead, 4}, {opTruncate, 2}, {opMapRead, 2}, {opMapWrite, 2}, {opCopy, 2}, {opAlloc, 1}, {opPunch, 1}}
	for {
		total := 0
		for _, w := range weights {
			total += w.w
		}
		x := r.r.IntN(total)
		for _, w := range weights {
			if x < w.w {
				if _, skip := r.stats.Skipped[w.kind]; !skip {
					return w.kind
				}
				break
			}
			x -= w.w
		}
	}
}

// span picks an offset below limit and a length of at most MaxLen.
func (r *run) span(limit int64) (off, n int64) {
	off = r.r.Int64N(max(limit, 1))
	if r.r.IntN(4) == 0 {
		off = off &^ (page - 1) // page-aligned: the kernel's paths differ
	}
	return off, 1 + r.r.Int64N(r.cfg.MaxLen)
}

// data is n bytes for operation r.n at off: never zero, so a hole or a
// lost write shows, and different from operation to operation.
func (r *run) data(off, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(1 + (off+int64(i)+int64(r.n)*131)%251)
	}
	return b
}

// size is the model's size.
func (r *run) size() int64 { return int64(len(r.model)) }

// resize makes the model size bytes long, zero-filling a growth.
func (r *run) resize(size int64) {
	if size <= r.size() {
		r.model = r.model[:size]
		return
	}
	r.model = append(r.model, make([]byte, size-r.size())...)
}

// put writes p at off into the model, growing it as a write would.
func (r *run) put(p []byte, off int64) {
	if end := off + int64(len(p)); end > r.size() {
		r.resize(end)
	}
	copy(r.model[off:], p)
}

func (r *run) write() error {
	off, n := r.span(r.cfg.MaxSize)
	n = min(n, r.cfg.MaxSize-off)
	r.note("write %#x..%#x (%d bytes), size %#x", off, off+n, n, r.size())
	p := r.data(off, n)
	if w, err := r.f.WriteAt(p, off); err != nil || w != len(p) {
		return fmt.Errorf("write %d bytes at %#x: wrote %d, %v", n, off, w, err)
	}
	r.put(p, off)
	return r.checkRange(off, n)
}

func (r *run) read() error {
	off, n := r.span(r.size() + page)
	r.note("read %#x..%#x, size %#x", off, off+n, r.size())
	return r.checkRange(off, n)
}

func (r *run) truncate() error {
	old := r.size()
	size := r.r.Int64N(r.cfg.MaxSize + 1)
	if r.r.IntN(4) == 0 {
		size = size &^ (page - 1)
	}
	r.note("truncate %#x -> %#x", old, size)
	if err := r.f.Truncate(size); err != nil {
		return fmt.Errorf("truncate from %#x to %#x: %v", old, size, err)
	}
	r.resize(size)
	// The pages about both ends: a grown part must read as zeros, a
	// shrunk one must be gone.
	lo := max(min(old, size)-page, 0)
	return r.checkRange(lo, max(old, size)+page-lo)
}

func (r *run) mapRead() error {
	if r.size() == 0 {
		return r.read()
	}
	off, n := r.span(r.size())
	end := min(off+n, (r.size()+page-1)&^(page-1)) // up to the last page's end
	r.note("mapread %#x..%#x, size %#x", off, end, r.size())
	got, err := r.f.MapRead(off, end-off)
	if err != nil {
		return fmt.Errorf("mapread %#x..%#x at size %#x: %v", off, end, r.size(), err)
	}
	want := make([]byte, end-off)
	if off < r.size() {
		copy(want, r.model[off:])
	}
	return compare("a mapping (past EOF: zeros)", off, got, want)
}

func (r *run) mapWrite() error {
	if r.size() == 0 {
		return r.write()
	}
	off, n := r.span(r.size())
	n = min(n, r.size()-off)
	r.note("mapwrite %#x..%#x, size %#x", off, off+n, r.size())
	p := r.data(off, n)
	if err := r.f.MapWrite(p, off); err != nil {
		return fmt.Errorf("mapwrite %d bytes at %#x, size %#x: %v", n, off, r.size(), err)
	}
	r.put(p, off)
	return r.checkRange(off, n)
}

// copyRange copies a range of the file to a place that does not overlap
// it, as a program would: copy_file_range again after a short copy,
// until the source's end.
func (r *run) copyRange() error {
	if r.size() == 0 {
		return r.write()
	}
	src, n := r.span(r.size())
	n = min(n, r.size()-src)
	dst := r.r.Int64N(r.cfg.MaxSize - n)
	if dst < src+n && src < dst+n { // overlapping: copy_file_range refuses it
		dst = src + n
		if dst+n > r.cfg.MaxSize {
			return r.read()
		}
	}
	r.note("copy %#x..%#x to %#x, size %#x", src, src+n, dst, r.size())
	want := bytes.Clone(r.model[src : src+n])
	for done := int64(0); done < n; {
		c, err := r.f.CopyRange(src+done, dst+done, n-done)
		if err != nil {
			return fmt.Errorf("copy_file_range %#x to %#x, %d bytes, after %d copied: %v", src+done, dst+done, n-done, done, err)
		}
		if c == 0 {
			return fmt.Errorf("copy_file_range %#x to %#x, %d bytes, returned 0 before the source's end (size %#x)", src+done, dst+done, n-done, r.size())
		}
		done += c
	}
	r.put(want, dst)
	return r.checkRange(dst, n)
}

func (r *run) allocate() error {
	off, n := r.span(r.cfg.MaxSize)
	n = min(n, r.cfg.MaxSize-off)
	keep := r.r.IntN(2) == 0
	r.note("fallocate %#x..%#x keep-size=%v, size %#x", off, off+n, keep, r.size())
	if err := r.f.Allocate(off, n, keep); err != nil {
		return fmt.Errorf("fallocate %#x..%#x keep-size=%v: %v", off, off+n, keep, err)
	}
	if !keep && off+n > r.size() {
		r.resize(off + n)
	}
	return r.checkRange(off, n)
}

func (r *run) punch() error {
	if r.size() == 0 {
		return r.write()
	}
	off, n := r.span(r.size())
	r.note("punch %#x..%#x, size %#x", off, off+n, r.size())
	if err := r.f.PunchHole(off, n); err != nil {
		return fmt.Errorf("punch %#x..%#x: %v", off, off+n, err)
	}
	if end := min(off+n, r.size()); off < end {
		clear(r.model[off:end])
	}
	return r.checkRange(off, n)
}

// checkRange reads n bytes at off through the held descriptor, and its
// size, and compares them with the model.
func (r *run) checkRange(off, n int64) error {
	if err := r.checkSize(r.f, "fstat"); err != nil {
		return err
	}
	got, err := readRange(r.f, off, n)
	if err != nil {
		return fmt.Errorf("reading back %#x..%#x: %v", off, off+n, err)
	}
	return compare("reading back", off, got, r.want(off, n))
}

// want is what n bytes read at off must return.
func (r *run) want(off, n int64) []byte {
	if off >= r.size() {
		return []byte{}
	}
	return r.model[off:min(off+n, r.size())]
}

func (r *run) checkSize(f File, how string) error {
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("%s: %v", how, err)
	}
	if size != r.size() {
		return fmt.Errorf("%s says size %#x, want %#x", how, size, r.size())
	}
	return nil
}

// checkAll compares the whole file, read through f, with the model.
func (r *run) checkAll(f File, what string) error {
	if err := r.checkSize(f, what+": fstat"); err != nil {
		return err
	}
	got, err := readRange(f, 0, r.size()+page)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	return compare(what, 0, got, r.model)
}

// readRange preads up to n bytes at off, again after a short read,
// until n or EOF.
func readRange(f File, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	got := int64(0)
	for got < n {
		m, err := f.ReadAt(b[got:], off+got)
		got += int64(m)
		if err == io.EOF || (err == nil && m == 0) {
			break
		}
		if err != nil {
			return b[:got], err
		}
	}
	return b[:got], nil
}

// compare says how got, read at off, differs from want.
func compare(what string, off int64, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	at := off + int64(i)
	return fmt.Errorf("%s %#x..%#x: %d bytes, want %d; first difference at %#x: got %s, want %s",
		what, off, off+int64(len(want)), len(got), len(want), at, excerpt(got, i), excerpt(want, i))
}

// excerpt shows a few bytes of b from i.
func excerpt(b []byte, i int) string {
	if i >= len(b) {
		return "EOF"
	}
	return fmt.Sprintf("% x", b[i:min(i+16, len(b))])
}
