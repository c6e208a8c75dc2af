package vfs

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// capable is a directory with every optional ability the helpers of
// capability.go look for, each recording that it was asked.
type capable struct {
	*StaticDir
	asked []string
}

func (c *capable) Symlink(context.Context, string, string) (Node, error) {
	c.asked = append(c.asked, "symlink")
	return c, nil
}

func (c *capable) Link(context.Context, Node, string) (Node, error) {
	c.asked = append(c.asked, "link")
	return c, nil
}

func (c *capable) Mknod(context.Context, string, uint32, uint64) (Node, error) {
	c.asked = append(c.asked, "mknod")
	return c, nil
}

func (c *capable) StatFS(context.Context) (StatFS, error) {
	c.asked = append(c.asked, "statfs")
	return StatFS{Bsize: 512, Blocks: 7}, nil
}

// TestCapabilityDefaults: a node without an optional ability gets the
// one documented answer (EPERM for making names, NoCapacity for statfs),
// and a node with it is asked.
func TestCapabilityDefaults(t *testing.T) {
	ctx := context.Background()
	bare := NewStaticDir(nil)
	calls := map[string]func(Node) (Node, error){
		"symlink": func(d Node) (Node, error) { return Symlink(ctx, d, "s", "t") },
		"link":    func(d Node) (Node, error) { return Link(ctx, d, bare, "l") },
		"mknod":   func(d Node) (Node, error) { return Mknod(ctx, d, "m", syscall.S_IFIFO|0o644, 0) },
	}
	for name, call := range calls {
		if _, err := call(bare); !errors.Is(err, syscall.EPERM) {
			t.Errorf("%s in a directory without the ability: %v, want EPERM", name, err)
		}
		c := &capable{StaticDir: bare}
		if _, err := call(c); err != nil || len(c.asked) != 1 || c.asked[0] != name {
			t.Errorf("%s in a directory with the ability: %v, asked %v", name, err, c.asked)
		}
	}
	if st, err := StatFSOf(ctx, bare); err != nil || st != NoCapacity {
		t.Errorf("statfs of a node without the ability: %+v, %v; want NoCapacity", st, err)
	}
	c := &capable{StaticDir: bare}
	if st, err := StatFSOf(ctx, c); err != nil || st.Blocks != 7 || len(c.asked) != 1 {
		t.Errorf("statfs of a node with the ability: %+v, %v, asked %v", st, err, c.asked)
	}
}
