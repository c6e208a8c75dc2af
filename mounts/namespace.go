package mounts

import (
	"bufio"
	"context"
	"fmt"
	"path"
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

// nsState is what the last namespace applied left in the table.
type nsState struct {
	mu      sync.Mutex
	text    string
	binds   map[string][]Layer // the unions it made, by NEW
	mounted map[string]func()  // the servers it mounted, by NEW: their close
	failed  string             // why the last text was refused; "" if applied
}

// bindLine is one parsed line: a bind, or a mount when addr is set.
type bindLine struct {
	n                     int
	before, after, create bool
	old, new              string
	addr                  string
}

// Resolvers are how the namespace reaches what lies outside the tree: a
// host directory (an OLD outside every tree) and a 9P server (a mount
// line's ADDR), returning its tree and how to let it go.
type Resolvers struct {
	HostDir func(dir string) (vfs.Node, error)
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
// the text applied before. hostDir serves a host directory for an OLD
// outside every tree. A text that cannot be applied changes nothing.
func (t *Table) ApplyNamespace(ctx context.Context, text string, r Resolvers) error {
	t.ns.mu.Lock()
	defer t.ns.mu.Unlock()
	lines, err := parseNamespace(text)
	if err == nil {
		err = t.applyBinds(ctx, lines, r)
	}
	if err != nil {
		t.ns.failed = err.Error()
		if old, perr := parseNamespace(t.ns.text); perr == nil {
			t.applyBinds(ctx, old, r) // the last good table again
		}
		return err
	}
	t.ns.text, t.ns.failed = text, ""
	return nil
}

// NamespaceError says why the namespace file was last refused, or "".
func (t *Table) NamespaceError() string {
	t.ns.mu.Lock()
	defer t.ns.mu.Unlock()
	return t.ns.failed
}

func (t *Table) applyBinds(ctx context.Context, lines []bindLine, r Resolvers) error {
	t.undoNamespace()
	for _, b := range lines {
		var err error
		if b.addr != "" {
			err = t.mountServer(ctx, b, r)
		} else {
			err = t.bind(ctx, b, r.HostDir)
		}
		if err != nil {
			t.undoNamespace()
			return fmt.Errorf("line %d: %w", b.n, err)
		}
	}
	return nil
}

// undoNamespace takes away what the namespace file put in the table.
func (t *Table) undoNamespace() {
	for p := range t.ns.binds {
		t.Unmount(p)
	}
	for p, closeServer := range t.ns.mounted {
		t.Unmount(p)
		closeServer()
	}
	t.ns.binds, t.ns.mounted = map[string][]Layer{}, map[string]func(){}
}

// mountServer serves a 9P server's tree at b.new.
func (t *Table) mountServer(ctx context.Context, b bindLine, r Resolvers) error {
	if r.Dial == nil {
		return fmt.Errorf("mount %s: no way to reach servers", b.addr)
	}
	root, closeServer, err := r.Dial(ctx, b.addr)
	if err != nil {
		return fmt.Errorf("mount %s: %w", b.addr, err)
	}
	if err := t.mountLocal(b.new, root, "9p "+b.addr); err != nil {
		closeServer()
		return err
	}
	t.ns.mounted[b.new] = closeServer
	return nil
}

func (t *Table) bind(ctx context.Context, b bindLine, hostDir func(string) (vfs.Node, error)) error {
	old, err := t.resolve(ctx, b.old, hostDir)
	if err != nil {
		return err
	}
	if a, err := old.Attr(ctx); err != nil || !a.IsDir() {
		return fmt.Errorf("%s is not a directory", b.old)
	}
	layer := Layer{Dir: old, Create: b.create, Name: b.old}
	layers := []Layer{layer}
	if b.before || b.after {
		have := t.ns.binds[b.new]
		if have == nil {
			if cur, err := vfs.Walk(ctx, t.Root(), strings.TrimPrefix(b.new, "/")); err == nil {
				have = []Layer{{Dir: cur, Name: b.new}} // what NEW showed
			}
		}
		if b.before {
			layers = append(layers, have...)
		} else {
			layers = append(have, layer)
		}
	}
	t.ns.binds[b.new] = layers
	if len(layers) == 1 {
		// Alone, the directory is served as it is: a plain bind, with
		// everything its tree can do.
		return t.MountAs(b.new, old, "bind "+b.old)
	}
	return t.MountAs(b.new, NewUnion(layers), "union "+b.new)
}

// resolve is OLD's directory: the tree's, where a tree serves its path,
// else the host's.
func (t *Table) resolve(ctx context.Context, p string, hostDir func(string) (vfs.Node, error)) (vfs.Node, error) {
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if t.mountAt("/"+top) != nil || t.busy("/"+top) {
		return vfs.Walk(ctx, t.Root(), strings.TrimPrefix(p, "/"))
	}
	if hostDir == nil {
		return nil, fmt.Errorf("%s is in no tree", p)
	}
	return hostDir(p)
}
