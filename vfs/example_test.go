package vfs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// greeting is a generated text file built from the parts: Leaf answers
// the directory operations, FileAttrs the attributes, the mode check and
// SetAttr, and Open alone is the file's own.
type greeting struct {
	vfs.Leaf
	vfs.FileAttrs
	name func() string
}

func (g *greeting) Open(_ context.Context, flags int) (vfs.Handle, error) {
	if err := g.CheckOpen(flags); err != nil {
		return nil, err
	}
	return vfs.BytesHandle("hello, " + g.name() + "\n"), nil // one snapshot per open
}

// A read-only generated text file: its content is made at each open, and
// the parts refuse what such a file refuses.
func Example_generatedFile() {
	ctx := context.Background()
	var f vfs.Node = &greeting{name: func() string { return "world" },
		FileAttrs: vfs.FileAttrs{Ino: vfs.NewIno(), Mode: syscall.S_IFREG | 0o444, Volatile: true}}

	h, _ := f.Open(ctx, os.O_RDONLY)
	text, _ := vfs.ReadAll(ctx, h, 1<<10)
	fmt.Print(string(text))
	_, err := f.Open(ctx, os.O_WRONLY)
	fmt.Println("write:", vfs.Errno(err))
	_, err = f.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetMode, Mode: 0o666})
	fmt.Println("chmod:", vfs.Errno(err))
	_, err = f.Lookup(ctx, "x")
	fmt.Println("lookup:", vfs.Errno(err))
	// Output:
	// hello, world
	// write: permission denied
	// chmod: operation not permitted
	// lookup: not a directory
}

// A writable control file: a FuncFile of mode 0200 whose opens run each
// complete line written (vfs.LineHandle). The truncation of a shell's `>`
// is taken and ignored; reading is refused by the mode.
func Example_controlFile() {
	ctx := context.Background()
	level := "info"
	ctl := vfs.NewFuncFile(0o200, func(context.Context, int) (vfs.Handle, error) {
		return &vfs.LineHandle{Run: func(_ context.Context, lines []string) error {
			level = strings.Join(lines, ",")
			return nil
		}}, nil
	})

	h, _ := ctl.Open(ctx, os.O_WRONLY|os.O_TRUNC)
	_, err := h.WriteAt(ctx, []byte("debug\n"), 0)
	fmt.Println("write:", err, "level:", level)
	_, err = ctl.SetAttr(ctx, vfs.SetAttr{Valid: vfs.SetSize})
	fmt.Println("truncate:", err)
	_, err = ctl.Open(ctx, os.O_RDONLY)
	fmt.Println("read:", vfs.Errno(err))
	// Output:
	// write: <nil> level: debug
	// truncate: <nil>
	// read: permission denied
}
