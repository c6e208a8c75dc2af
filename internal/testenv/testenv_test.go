package testenv

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The harness is for tests: a package that imported it outside its
// _test.go files would ship test helpers in the daemon.
func TestOnlyTestsImport(t *testing.T) {
	const self = "github.com/gsvfs/gsvfs/internal/testenv"
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == self {
				t.Errorf("%s imports %s: only _test.go files may", p, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d non-test Go files under %s: not the module's tree", checked, root)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Minute, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll of a condition that holds at the third look: looked %d times", n)
	}
	start := time.Now()
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Errorf("Poll of a condition that never holds said it held")
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("Poll gave up after %v, before its bound", took)
	}
}

func TestLogBuffer(t *testing.T) {
	var l LogBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			l.Write([]byte("x"))
		}
	}()
	for range 100 {
		_ = l.String() // read while written: the race detector's case
	}
	<-done
	if got := l.String(); got != strings.Repeat("x", 100) {
		t.Errorf("after 100 writes of x: %q", got)
	}
}
