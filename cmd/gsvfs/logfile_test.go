package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
