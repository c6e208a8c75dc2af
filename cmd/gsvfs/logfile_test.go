package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A capped log file is rotated at its size: the file and one older one,
// each within the cap, and the newest lines in the file itself.
func TestLogFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gsvfs.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const capSize = 10_000
	l := &logFile{out: f}
	l.capAt(path, capSize)
	for i := range 1000 { // 35 times the cap
		if _, err := fmt.Fprintf(l, "line %05d of the log, 34 bytes\n", i); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if len(cur) > capSize || len(old) > capSize || len(old) == 0 {
		t.Errorf("sizes: log %d, log.1 %d; want each within %d and an older file kept", len(cur), len(old), capSize)
	}
	if !bytes.HasSuffix(cur, []byte("line 00999 of the log, 34 bytes\n")) {
		t.Errorf("the log's last lines: %q", cur[max(0, len(cur)-80):])
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 2 {
		t.Errorf("files beside the log: %d, want the log and one older", len(ents))
	}
}

// stderrChildEnv runs TestLogFileMovesStderr as the child whose stderr is
// the log file this names.
const stderrChildEnv = "GSVFS_TEST_STDERR_LOG"

// After rotations, what is written straight to the daemon's stderr (a
// panic's trace, the runtime's last words) lands in the current log file,
// not in an unlinked one that no cap bounds. The child's stdout and stderr
// are the log, as a daemon's in the background are.
func TestLogFileMovesStderr(t *testing.T) {
	if path := os.Getenv(stderrChildEnv); path != "" {
		daemonStderr.capAt(path, 300)
		for i := range 100 { // some 10 rotations
			fmt.Fprintf(daemonStderr, "line %05d of the log, 34 bytes\n", i)
		}
		syscall.Write(2, []byte("straight to descriptor 2\n"))
		syscall.Write(1, []byte("straight to descriptor 1\n"))
		return
	}
	path := filepath.Join(t.TempDir(), "gsvfs.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := exec.Command(os.Args[0], "-test.run", "^TestLogFileMovesStderr$", "-test.count=1")
	child.Env = append(os.Environ(), stderrChildEnv+"="+path)
	child.Stdout, child.Stderr = f, f
	if err := child.Run(); err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("the child: %v\n%s", err, b)
	}
	cur, _ := os.ReadFile(path)
	if !bytes.Contains(cur, []byte("line 00099")) || !bytes.Contains(cur, []byte("straight to descriptor 2\n")) ||
		!bytes.Contains(cur, []byte("straight to descriptor 1\n")) {
		t.Errorf("the current log after rotations lacks the last line or what went straight to descriptors 1 and 2:\n%s", cur)
	}
}
