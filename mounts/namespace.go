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

// The namespace file (/etc/namespace) lists binds in Plan 9's form, a
// line each:
//
//	bind [-a|-b|-c|-ac|-bc] OLD NEW
//	# a comment
//
// OLD is a directory of the tree, or of the host where it lies outside
// every tree (served then with a disk tree's confinement, by a function
// the caller gives). Without -a or -b, NEW shows OLD alone; -b puts OLD
// before what NEW shows, -a after; -c makes OLD the layer where new names
// are made. A file that cannot be read is refused whole: the table keeps
// the binds it had, and says why (NamespaceError).

// nsState is what the last namespace applied left in the table.
type nsState struct {
	mu     sync.Mutex
	text   string
	binds  map[string][]Layer // the unions it made, by NEW
	failed string             // why the last text was refused; "" if applied
}

// bindLine is one parsed bind.
type bindLine struct {
	n                     int
	before, after, create bool
	old, new              string
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
		if f[0] != "bind" {
			return nil, fmt.Errorf("line %d: %q: only bind lines are known", n, line)
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
func (t *Table) ApplyNamespace(ctx context.Context, text string, hostDir func(string) (vfs.Node, error)) error {
	t.ns.mu.Lock()
	defer t.ns.mu.Unlock()
	lines, err := parseNamespace(text)
	if err == nil {
		err = t.applyBinds(ctx, lines, hostDir)
	}
	if err != nil {
		t.ns.failed = err.Error()
		if old, perr := parseNamespace(t.ns.text); perr == nil {
			t.applyBinds(ctx, old, hostDir) // the last good table again
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

func (t *Table) applyBinds(ctx context.Context, lines []bindLine, hostDir func(string) (vfs.Node, error)) error {
	for p := range t.ns.binds {
		t.Unmount(p)
	}
	t.ns.binds = map[string][]Layer{}
	for _, b := range lines {
		if err := t.bind(ctx, b, hostDir); err != nil {
			for p := range t.ns.binds {
				t.Unmount(p)
			}
			t.ns.binds = map[string][]Layer{}
			return fmt.Errorf("line %d: %w", b.n, err)
		}
	}
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
	layer := Layer{Dir: old, Create: b.create}
	layers := []Layer{layer}
	if b.before || b.after {
		have := t.ns.binds[b.new]
		if have == nil {
			if cur, err := vfs.Walk(ctx, t.Root(), strings.TrimPrefix(b.new, "/")); err == nil {
				have = []Layer{{Dir: cur}}
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
