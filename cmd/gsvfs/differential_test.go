//go:build linux

package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
)

// The differential test applies the same random sequence of file
// operations to a native directory (ext4) and to a directory in the mount,
// and compares every operation's result (errno and returned data) and, at
// the end, the whole trees — through the mount and in the state directory.
//
// Replay a failure with the seed it prints:
//
//	GSVFS_DIFF_SEED=1234 go test -count=1 -run TestDifferential ./cmd/gsvfs
//
// GSVFS_DIFF_OPS overrides the number of operations per seed.

const (
	dfSeeds      = 8
	dfOpsDefault = 300
)

// dfNames are the path elements random paths are made of: few, so that
// operations collide (create over a directory, rename onto a file...).
var dfNames = []string{"a", "b", "c", "d", "e"}

// dfRootName is the name of the directory the operations run in. It sits
// two levels below the compared top, so that links with ".." can be
// followed and even created through without leaving the compared tree.
const dfRootName = "r"

// dfOp is one operation with all its arguments drawn in advance, so that
// both sides see exactly the same call.
type dfOp struct {
	kind   string
	p, q   string // paths relative to the root
	off    int64
	size   int64
	data   []byte
	mode   uint32
	flags  int
	target string
}

func (o dfOp) String() string {
	var b strings.Builder
	b.WriteString(o.kind + " " + o.p)
	if o.q != "" {
		b.WriteString(" -> " + o.q)
	}
	switch o.kind {
	case "create":
		fmt.Fprintf(&b, " flags=%s mode=%o", dfFlagNames(o.flags), o.mode)
	case "mkdir", "chmod":
		fmt.Fprintf(&b, " mode=%o", o.mode)
	case "write":
		fmt.Fprintf(&b, " off=%d len=%d", o.off, len(o.data))
	case "append":
		fmt.Fprintf(&b, " len=%d", len(o.data))
	case "truncate":
		fmt.Fprintf(&b, " size=%d", o.size)
	case "pread":
		fmt.Fprintf(&b, " off=%d len=%d", o.off, o.size)
	case "symlink":
		fmt.Fprintf(&b, " target=%q", o.target)
	}
	return b.String()
}

func dfFlagNames(f int) string {
	var s []string
	if f&unix.O_EXCL != 0 {
		s = append(s, "O_EXCL")
	}
	if f&unix.O_TRUNC != 0 {
		s = append(s, "O_TRUNC")
	}
	if f&unix.O_RDWR != 0 {
		s = append(s, "O_RDWR")
	}
	if len(s) == 0 {
		return "0"
	}
	return strings.Join(s, "|")
}

// dfGen draws operations from a seeded source. It keeps a rough model of
// which paths exist, fed with the native results (which are deterministic),
// so that most operations hit something; a replay draws the same sequence.
type dfGen struct {
	r     *rand.Rand
	dirs  []string // known directories; "" is the root
	files []string // known non-directories
}

// existing draws a known file (or directory, with probability pDir), or
// a random path when none is known.
func (g *dfGen) existing(pDir int) string {
	if g.r.IntN(100) < pDir || len(g.files) == 0 {
		if d := g.dirs[g.r.IntN(len(g.dirs))]; d != "" {
			return d
		}
		return g.path()
	}
	return g.files[g.r.IntN(len(g.files))]
}

// fresh draws a name in a known directory.
func (g *dfGen) fresh() string {
	return filepath.Join(g.dirs[g.r.IntN(len(g.dirs))], g.pick(dfNames))
}

// src and dst mix known paths, fresh names and random paths.
func (g *dfGen) src(pDir int) string {
	if g.r.IntN(100) < 80 {
		return g.existing(pDir)
	}
	return g.path()
}

func (g *dfGen) dst() string {
	switch x := g.r.IntN(100); {
	case x < 60:
		return g.fresh()
	case x < 85:
		return g.existing(30)
	}
	return g.path()
}

// learn updates the model after an operation's native result.
func (g *dfGen) learn(o dfOp, result string) {
	if !strings.HasPrefix(result, "ok") {
		return
	}
	drop := func(list []string, p string, below bool) []string {
		return slices.DeleteFunc(list, func(x string) bool {
			return x == p || (below && strings.HasPrefix(x, p+"/"))
		})
	}
	add := func(list []string, p string) []string {
		if slices.Contains(list, p) {
			return list
		}
		return append(list, p)
	}
	switch o.kind {
	case "create", "symlink":
		g.files = add(g.files, o.p)
	case "link":
		g.files = add(g.files, o.q)
	case "mkdir":
		g.dirs = add(g.dirs, o.p)
	case "unlink":
		g.files = drop(g.files, o.p, false)
	case "rmdir":
		g.dirs = drop(g.dirs, o.p, true)
	case "rename":
		if o.p == o.q {
			return
		}
		move := func(list []string) []string {
			out := list[:0:0]
			for _, x := range list {
				switch {
				case x == o.q || strings.HasPrefix(x, o.q+"/"):
					// replaced
				case x == o.p:
					out = append(out, o.q)
				case strings.HasPrefix(x, o.p+"/"):
					out = append(out, o.q+strings.TrimPrefix(x, o.p))
				default:
					out = append(out, x)
				}
			}
			return out
		}
		wasDir := slices.Contains(g.dirs, o.p)
		g.dirs, g.files = move(g.dirs), move(g.files)
		if !wasDir && !slices.Contains(g.files, o.q) {
			g.files = append(g.files, o.q)
		}
	}
}

func (g *dfGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// path is 1 to 3 random elements, shorter ones more often.
func (g *dfGen) path() string {
	depth := 1
	switch x := g.r.IntN(100); {
	case x >= 85:
		depth = 3
	case x >= 50:
		depth = 2
	}
	parts := make([]string, depth)
	for i := range parts {
		parts[i] = g.pick(dfNames)
	}
	return strings.Join(parts, "/")
}

func (g *dfGen) data() []byte {
	n := g.r.IntN(200)
	switch x := g.r.IntN(100); {
	case x >= 95:
		n = 50000 + g.r.IntN(30000)
	case x >= 80:
		n = 1000 + g.r.IntN(8000)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return b
}

func (g *dfGen) offset() int64 {
	switch x := g.r.IntN(100); {
	case x >= 97:
		return 1<<20 + g.r.Int64N(1000)
	case x >= 60:
		return g.r.Int64N(20000)
	}
	return g.r.Int64N(300)
}

// target draws a symlink target that, wherever the link ends up, resolves
// inside the compared tree or nowhere: a descending relative path, a climb
// to the root's parent and back down into the root, a name next to the
// root (which can only ever become a regular file), a dangling absolute
// path, the empty string, or the link itself (a loop).
func (g *dfGen) target(p string) string {
	switch g.r.IntN(10) {
	case 0:
		return "../" + dfRootName + "/" + g.path()
	case 1:
		return "../outside-" + g.pick(dfNames)
	case 2:
		return "/nonexistent-gsvfs-diff/" + g.pick(dfNames)
	case 3:
		return filepath.Base(p)
	case 4:
		if g.r.IntN(4) == 0 {
			return ""
		}
		return "./" + g.path()
	}
	return g.path()
}

var dfModes = []uint32{0o644, 0o600, 0o755, 0o444, 0o700, 0o777, 0, 0o1777, 0o2755, 0o4755, 0o640}

func (g *dfGen) next() dfOp {
	kinds := []struct {
		kind   string
		weight int
	}{
		{"create", 12}, {"write", 10}, {"append", 6}, {"truncate", 5}, {"read", 8}, {"pread", 4},
		{"rename", 10}, {"mkdir", 9}, {"rmdir", 4}, {"unlink", 5}, {"link", 5}, {"symlink", 5},
		{"readlink", 3}, {"chmod", 4}, {"lstat", 5}, {"stat", 4}, {"readdir", 5},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	x := g.r.IntN(total)
	kind := ""
	for _, k := range kinds {
		if x < k.weight {
			kind = k.kind
			break
		}
		x -= k.weight
	}
	o := dfOp{kind: kind}
	switch kind {
	case "create", "mkdir", "symlink":
		o.p = g.dst()
	case "rmdir", "readdir":
		o.p = g.src(85)
	case "rename":
		o.p = g.src(25)
	default:
		o.p = g.src(10)
	}
	switch kind {
	case "create":
		o.flags = []int{0, unix.O_EXCL, unix.O_TRUNC, unix.O_RDWR | unix.O_TRUNC}[g.r.IntN(4)]
		o.mode = dfModes[g.r.IntN(6)]
	case "write":
		o.off, o.data = g.offset(), g.data()
	case "append":
		o.data = g.data()
	case "truncate":
		o.size = g.offset()
	case "pread":
		o.off, o.size = g.offset(), int64(g.r.IntN(5000))
	case "rename", "link":
		o.q = g.dst()
	case "mkdir":
		o.mode = []uint32{0o755, 0o700, 0o777, 0o1777, 0o2755}[g.r.IntN(5)]
	case "symlink":
		o.target = g.target(o.p)
	case "chmod":
		o.mode = dfModes[g.r.IntN(len(dfModes))]
	case "readdir":
		if g.r.IntN(4) == 0 {
			o.p = "."
		}
	}
	return o
}

func dfErr(err error) string {
	if err == nil {
		return "ok"
	}
	return smErrName(vfs.Errno(err))
}

func dfSum(b []byte) string {
	return fmt.Sprintf("len=%d sha=%.12x", len(b), sha256.Sum256(b))
}

// apply runs the operation in root and describes what it returned.
func (o dfOp) apply(root string) string {
	p := filepath.Join(root, o.p)
	q := filepath.Join(root, o.q)
	switch o.kind {
	case "create":
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_CLOEXEC|o.flags|dfAccess(o.flags), o.mode)
		if err != nil {
			return dfErr(err)
		}
		return dfErr(unix.Close(fd))
	case "write", "append":
		flags := unix.O_WRONLY | unix.O_CLOEXEC
		if o.kind == "append" {
			flags |= unix.O_APPEND
		}
		fd, err := unix.Open(p, flags, 0)
		if err != nil {
			return "open " + dfErr(err)
		}
		defer unix.Close(fd)
		var n int
		if o.kind == "append" {
			n, err = unix.Write(fd, o.data)
		} else {
			n, err = unix.Pwrite(fd, o.data, o.off)
		}
		var st unix.Stat_t
		serr := unix.Fstat(fd, &st)
		return fmt.Sprintf("%s n=%d; fstat %s size=%d", dfErr(err), n, dfErr(serr), st.Size)
	case "truncate":
		return dfErr(unix.Truncate(p, o.size))
	case "read":
		b, err := os.ReadFile(p)
		if err != nil {
			return dfErr(err)
		}
		return "ok " + dfSum(b)
	case "pread":
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "open " + dfErr(err)
		}
		defer unix.Close(fd)
		buf := make([]byte, o.size)
		n, err := unix.Pread(fd, buf, o.off)
		return fmt.Sprintf("%s %s", dfErr(err), dfSum(buf[:max(n, 0)]))
	case "rename":
		return dfErr(unix.Rename(p, q))
	case "mkdir":
		return dfErr(unix.Mkdir(p, o.mode))
	case "rmdir":
		return dfErr(unix.Rmdir(p))
	case "unlink":
		return dfErr(unix.Unlink(p))
	case "link":
		return dfErr(unix.Link(p, q))
	case "symlink":
		return dfErr(unix.Symlink(o.target, p))
	case "readlink":
		buf := make([]byte, 4096)
		n, err := unix.Readlink(p, buf)
		if err != nil {
			return dfErr(err)
		}
		return fmt.Sprintf("ok %q", buf[:n])
	case "chmod":
		return dfErr(unix.Chmod(p, o.mode))
	case "lstat", "stat":
		var st unix.Stat_t
		var err error
		if o.kind == "lstat" {
			err = unix.Lstat(p, &st)
		} else {
			err = unix.Stat(p, &st)
		}
		if err != nil {
			return dfErr(err)
		}
		return dfStat(&st)
	case "readdir":
		entries, err := os.ReadDir(p)
		if err != nil {
			return dfErr(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name()+":"+e.Type().String())
		}
		return "ok " + strings.Join(names, " ")
	}
	panic("unknown op " + o.kind)
}

func dfAccess(flags int) int {
	if flags&unix.O_RDWR != 0 {
		return 0
	}
	return unix.O_WRONLY
}

// dfStat describes what a stat returns that both sides must agree on.
// Directory sizes are left out: they depend on the filesystem's history.
func dfStat(st *unix.Stat_t) string {
	s := fmt.Sprintf("mode=%o nlink=%d uid=%d gid=%d", st.Mode, st.Nlink, st.Uid, st.Gid)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		s += fmt.Sprintf(" size=%d", st.Size)
	}
	return s
}

// dfTree describes every entry under top: type, mode, owner, nlink, size,
// content hash or link target, and which entries are hard links of each
// other.
func dfTree(t *testing.T, top string) map[string]string {
	t.Helper()
	out := map[string]string{}
	byIno := map[uint64][]string{}
	err := filepath.WalkDir(top, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		desc := dfStat(&st)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + dfSum(b)
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" target=%q", target)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			byIno[st.Ino] = append(byIno[st.Ino], rel)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", top, err)
	}
	for _, names := range byIno {
		if len(names) > 1 {
			slices.Sort(names)
			for _, n := range names {
				out[n] += " links=" + strings.Join(names, ",")
			}
		}
	}
	return out
}

// dfCompareTrees reports every difference between two tree descriptions.
func dfCompareTrees(want, got map[string]string) []string {
	var diffs []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing, want %s", p, w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected %s", p, g))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// dfSandbox makes top/u/r under base and returns top and the root r.
func dfSandbox(t *testing.T, base string) (top, root string) {
	t.Helper()
	top = base
	root = filepath.Join(top, "u", dfRootName)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, filepath.Join(top, "u"), root} {
		if err := unix.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return top, root
}

// dfRun applies one seed's sequence to both sides and compares.
func dfRun(t *testing.T, d *daemon, mode string, seed uint64, ops int) {
	replay := fmt.Sprintf("replay: GSVFS_DIFF_SEED=%d go test -count=1 -run 'TestDifferential/^%s$' ./cmd/gsvfs", seed, mode)
	t.Logf("seed %d, %d ops (%s)", seed, ops, replay)
	nTop, nRoot := dfSandbox(t, filepath.Join(t.TempDir(), "native"))
	mTop, mRoot := dfSandbox(t, d.Path(filepath.Join("workspaces", fmt.Sprintf("diff-%d", seed))))
	g := &dfGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dirs: []string{""}}
	var history []string
	okOps := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for i := range ops {
		o := g.next()
		want := o.apply(nRoot)
		got := o.apply(mRoot)
		g.learn(o, want)
		history = append(history, fmt.Sprintf("#%d %s = %s", i, o, want))
		if strings.HasPrefix(want, "ok") {
			okOps[o.kind]++
		}
		if got != want {
			t.Fatalf("seed %d, op #%d %s:\n  got  %s\n  want %s (native)\nlast ops:\n  %s\n%s",
				seed, i, o, got, want, strings.Join(history[max(0, len(history)-25):], "\n  "), replay)
		}
		if time.Now().After(deadline) {
			t.Logf("seed %d: stopping after %d ops: 20s time budget used", seed, i+1)
			break
		}
	}
	want := dfTree(t, nTop)
	t.Logf("seed %d: %d ops, succeeded by kind %v; final tree of %d entries", seed, len(history), okOps, len(want))
	for _, side := range []struct{ name, top string }{{"mount", mTop}, {"state directory", smHost(t, d, mTop)}} {
		if diffs := dfCompareTrees(want, dfTree(t, side.top)); len(diffs) > 0 {
			t.Errorf("seed %d: final tree in the %s differs from native in %d places:\n  %s\nlast ops:\n  %s\n%s",
				seed, side.name, len(diffs), strings.Join(diffs[:min(len(diffs), 30)], "\n  "),
				strings.Join(history[max(0, len(history)-25):], "\n  "), replay)
		}
	}
	if len(want) < 5 {
		t.Errorf("seed %d: the final tree has only %d entries; the generator is not exercising much", seed, len(want))
	}
}

// TestDifferential compares random operation sequences on the mount with
// the same sequences on native ext4.
func TestDifferential(t *testing.T) {
	ops := dfOpsDefault
	if s := os.Getenv("GSVFS_DIFF_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("GSVFS_DIFF_OPS=%q: %v", s, err)
		}
		ops = n
	}
	var seeds []uint64
	if s := os.Getenv("GSVFS_DIFF_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GSVFS_DIFF_SEED=%q: %v", s, err)
		}
		seeds = []uint64{seed}
	} else {
		base := uint64(time.Now().UnixNano()) % 1e9
		for i := range uint64(dfSeeds) {
			seeds = append(seeds, base+i)
		}
	}
	smEachMode(t, func(t *testing.T, mode string, d *daemon) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				dfRun(t, d, mode, seed, ops)
			})
		}
	})
}
