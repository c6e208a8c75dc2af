package mounts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/gsvfs/gsvfs/vfs"
)

// The namespace file (/etc/namespace) lists binds and mounts in Plan 9's
// form, a line each:
//
//	bind [-a|-b|-c|-ac|-bc] OLD NEW
//	mount ADDR NEW
//	# a comment
//
// A mount serves at NEW the tree of the 9P server at ADDR, reached by a
// function the caller gives (this package speaks no protocol).
// OLD is a directory of the tree, or of the host where it lies outside
// every tree (served then with a disk tree's confinement, by a function
// the caller gives). Without -a or -b, NEW shows OLD alone; -b puts OLD
// before what NEW shows, -a after; -c makes OLD the layer where new names
// are made. A file that cannot be read is refused whole: the table keeps
// the binds it had, and says why (NamespaceError).

// nsState is what the namespace file put in the table.
type nsState struct {
	mu      sync.Mutex
	applied []applied // the lines of the text last applied, in order
	failed  string    // why the last text was refused; "" if applied
}

// bindLine is one parsed line: a bind, or a mount when addr is set.
type bindLine struct {
	n                     int
	before, after, create bool
	old, new              string
	addr                  string
}

// same reports whether two lines say the same, wherever they are in
// their files.
func (b bindLine) same(o bindLine) bool {
	b.n = o.n
	return b == o
}

// Resolvers are how the namespace reaches what lies outside the tree: a
// host directory (an OLD outside every tree) and a 9P server (a mount
// line's ADDR), returning its tree and how to let it go. The table owns
// what they return: it calls close once the lines that use it are gone.
type Resolvers struct {
	HostDir func(dir string) (root vfs.Node, close func(), err error)
	Dial    func(ctx context.Context, addr string) (root vfs.Node, close func(), err error)
}

func parseNamespace(text string) ([]bindLine, error) {
	var out []bindLine
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if f[0] == "mount" {
			if len(f) != 3 || !path.IsAbs(f[2]) || path.Clean(f[2]) != f[2] || f[2] == "/" {
				return nil, fmt.Errorf("line %d: want mount ADDR PATH, PATH clean, absolute and below /", n)
			}
			out = append(out, bindLine{n: n, addr: f[1], new: f[2]})
			continue
		}
		if f[0] != "bind" {
			return nil, fmt.Errorf("line %d: %q: want bind or mount", n, line)
		}
		b := bindLine{n: n}
		args := f[1:]
		if len(args) > 0 && strings.HasPrefix(args[0], "-") {
			for _, c := range args[0][1:] {
				switch c {
				case 'a':
					b.after = true
				case 'b':
					b.before = true
				case 'c':
					b.create = true
				default:
					return nil, fmt.Errorf("line %d: unknown flag %q", n, args[0])
				}
			}
			args = args[1:]
		}
		if len(args) != 2 || b.after && b.before {
			return nil, fmt.Errorf("line %d: want bind [-a|-b|-c] OLD NEW", n)
		}
		for _, p := range args {
			if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
				return nil, fmt.Errorf("line %d: %q is not a clean absolute path below /", n, p)
			}
		}
		b.old, b.new = args[0], args[1]
		out = append(out, b)
	}
	return out, nil
}

// ApplyNamespace makes the table's binds those of text, undoing those of
// the text applied before, as a change of them: the lines the two texts
// begin with alike keep their binds as they are, and a line that stays
// keeps what it opened outside the tree (no host directory opened again,
// no server dialed again). A text that cannot be applied changes nothing.
func (t *Table) ApplyNamespace(ctx context.Context, text string, r Resolvers) error {
	t.ns.mu.Lock()
	defer t.ns.mu.Unlock()
	lines, err := parseNamespace(text)
	if err == nil {
		err = t.applyLines(ctx, lines, r)
	}
	t.ns.failed = ""
	if err != nil {
		t.ns.failed = err.Error()
	}
	return err
}

// NamespaceError says why the namespace file was last refused, or "".
func (t *Table) NamespaceError() string {
	t.ns.mu.Lock()
	defer t.ns.mu.Unlock()
	return t.ns.failed
}

// applied is one line of the namespace as the table serves it.
type applied struct {
	line bindLine
	// res is what the line opened outside the tree: nil for a bind of
	// the tree's own directory.
	res *held
	// layers are a bind's: the union at NEW once the line applied.
	layers []Layer
	// root, what and local are the mount at NEW once the line applied.
	root  vfs.Node
	what  string
	local bool
}

// held is a tree opened outside the table (a host directory, a server)
// and how to let it go.
type held struct {
	root  vfs.Node
	close func()
}

// applyLines makes the table's namespace that of lines. A line's bind
// depends on the lines before it (they may bind what its OLD or NEW
// walks through), so the lines the old and new texts begin with alike
// keep their binds, and the rest of the old ones are taken away before
// the rest of the new ones are made, in order. What an old line opened
// goes to a new line that says the same, and is closed if none does.
// On failure, the table and what it holds are as they were.
func (t *Table) applyLines(ctx context.Context, lines []bindLine, r Resolvers) error {
	old := t.ns.applied
	keep := 0
	for keep < len(old) && keep < len(lines) && old[keep].line.same(lines[keep]) {
		keep++
	}
	o := newOpener(old[keep:], r)
	made := slices.Clone(old[:keep])
	err := t.settle(old[:keep], old[keep:])
	for i := keep; err == nil && i < len(lines); i++ {
		var a applied
		if a, err = t.applyLine(ctx, lines[i], made, o); err != nil {
			err = fmt.Errorf("line %d: %w", lines[i].n, err)
			break
		}
		made = append(made, a)
	}
	if err != nil {
		err = errors.Join(err, t.settle(old, append(made[keep:], old[keep:]...)))
		o.closeOpened()
		return err
	}
	o.closeSpare()
	t.ns.applied = made
	return nil
}

// settle makes each NEW of the lines touched serve what the last line of
// state at that path made, or nothing if none is there.
func (t *Table) settle(state, touched []applied) error {
	var errs []error
	paths := map[string]bool{}
	for _, a := range touched {
		paths[a.line.new] = true
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		a, ok := lastAt(state, p)
		if !ok {
			t.Unmount(p)
			continue
		}
		if err := t.mount(p, a.root, a.what, a.local); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lastAt is the last line of made at p.
func lastAt(made []applied, p string) (applied, bool) {
	for i := len(made) - 1; i >= 0; i-- {
		if made[i].line.new == p {
			return made[i], true
		}
	}
	return applied{}, false
}

// applyLine makes the bind or mount of b, made being the lines applied
// before it.
func (t *Table) applyLine(ctx context.Context, b bindLine, made []applied, o *opener) (applied, error) {
	if b.addr != "" {
		return t.mountServer(ctx, b, o)
	}
	return t.bind(ctx, b, made, o)
}

// mountServer serves a 9P server's tree at b.new.
func (t *Table) mountServer(ctx context.Context, b bindLine, o *opener) (applied, error) {
	res, err := o.dial(ctx, b)
	if err != nil {
		return applied{}, fmt.Errorf("mount %s: %w", b.addr, err)
	}
	a := applied{line: b, res: res, root: res.root, what: "9p " + b.addr, local: true}
	return a, t.mount(b.new, a.root, a.what, a.local)
}

func (t *Table) bind(ctx context.Context, b bindLine, made []applied, o *opener) (applied, error) {
	old, res, err := t.resolve(ctx, b, o)
	if err != nil {
		return applied{}, err
	}
	if a, err := old.Attr(ctx); err != nil || !a.IsDir() {
		return applied{}, fmt.Errorf("%s is not a directory", b.old)
	}
	layer := Layer{Dir: old, Create: b.create, Name: b.old}
	layers := []Layer{layer}
	if b.before || b.after {
		have := lastBind(made, b.new)
		if have == nil {
			if cur, err := vfs.Walk(ctx, t.Root(), strings.TrimPrefix(b.new, "/")); err == nil {
				have = []Layer{{Dir: cur, Name: b.new}} // what NEW showed
			}
		}
		if b.before {
			layers = append(layers, have...)
		} else {
			layers = append(slices.Clone(have), layer)
		}
	}
	a := applied{line: b, res: res, layers: layers, root: old, what: "bind " + b.old}
	if len(layers) > 1 {
		a.root, a.what = NewUnion(layers), "union "+b.new
	}
	// Alone, the directory is served as it is: a plain bind, with
	// everything its tree can do.
	return a, t.mount(b.new, a.root, a.what, a.local)
}

// lastBind is the union the last bind line of made at p left there.
func lastBind(made []applied, p string) []Layer {
	for i := len(made) - 1; i >= 0; i-- {
		if a := made[i]; a.line.new == p && a.line.addr == "" {
			return a.layers
		}
	}
	return nil
}

// resolve is b's OLD directory: the tree's, where a tree serves its
// path, else the host's, which it returns as held too.
func (t *Table) resolve(ctx context.Context, b bindLine, o *opener) (vfs.Node, *held, error) {
	p := b.old
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if t.mountAt("/"+top) != nil || t.busy("/"+top) {
		n, err := vfs.Walk(ctx, t.Root(), strings.TrimPrefix(p, "/"))
		return n, nil, err
	}
	res, err := o.hostDir(b)
	if err != nil {
		return nil, nil, err
	}
	return res.root, res, nil
}

// opener opens what the lines of one apply reach outside the tree: for
// a line that the text applied before had too, what that line held
// (spare), else anew (opened).
type opener struct {
	r      Resolvers
	spare  []applied // the old lines whose held the new ones may take
	opened []*held
}

func newOpener(old []applied, r Resolvers) *opener {
	var spare []applied
	for _, a := range old {
		if a.res != nil {
			spare = append(spare, a)
		}
	}
	return &opener{r: r, spare: spare}
}

// take hands over what an old line saying the same as b held.
func (o *opener) take(b bindLine) (*held, bool) {
	i := slices.IndexFunc(o.spare, func(a applied) bool { return a.line.same(b) })
	if i < 0 {
		return nil, false
	}
	res := o.spare[i].res
	o.spare = slices.Delete(o.spare, i, i+1)
	return res, true
}

// hostDir serves b's OLD, a host directory.
func (o *opener) hostDir(b bindLine) (*held, error) {
	if res, ok := o.take(b); ok {
		return res, nil
	}
	if o.r.HostDir == nil {
		return nil, fmt.Errorf("%s is in no tree", b.old)
	}
	return o.made(o.r.HostDir(b.old))
}

// dial reaches the server of b's ADDR.
func (o *opener) dial(ctx context.Context, b bindLine) (*held, error) {
	if res, ok := o.take(b); ok {
		return res, nil
	}
	if o.r.Dial == nil {
		return nil, errors.New("no way to reach servers")
	}
	return o.made(o.r.Dial(ctx, b.addr))
}

// made records what a resolver opened.
func (o *opener) made(root vfs.Node, close func(), err error) (*held, error) {
	if err != nil {
		return nil, err
	}
	if close == nil {
		close = func() {}
	}
	res := &held{root: root, close: close}
	o.opened = append(o.opened, res)
	return res, nil
}

// closeOpened lets go what the apply opened: it failed.
func (o *opener) closeOpened() {
	for _, res := range o.opened {
		res.close()
	}
}

// closeSpare lets go what old lines held that no new line took: the
// apply succeeded.
func (o *opener) closeSpare() {
	for _, a := range o.spare {
		a.res.close()
	}
}
