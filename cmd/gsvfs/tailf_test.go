//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// tailLines is how many lines the writer appends.
const tailLines = 20

// TestTailFollowsDeviceFile is issue 30's tail -f: GNU tail follows a
// file a program on the device appends to, through /mnt/ID with no delay
// and with 25 ms added each way, every line in order, whether the writer
// opens the file for each line (echo >> f) or keeps it open. tail polls a FUSE
// file (fstat, then a read of what grew); each of its reads costs the
// device one read at most, so it is back before the next line comes.
// Before the fix one read of the kernel chased the growing file (the
// FUSE edge asked again where each short read ended, a round trip later,
// finding the next line) and the 9P clients sent read-ahead windows past
// its end: tail's reads took seconds, and to a pipe it wrote nothing
// while the file kept growing.
func TestTailFollowsDeviceFile(t *testing.T) {
	if _, err := exec.LookPath("tail"); err != nil {
		t.Skipf("SKIPPED: no tail: %v", err)
	}
	for _, delay := range []time.Duration{0, 25 * time.Millisecond} {
		t.Run(fmt.Sprint("delay=", delay), func(t *testing.T) { testTailFollows(t, delay) })
	}
}

func testTailFollows(t *testing.T, delay time.Duration) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	_, m, _ := joinedDevice(t, 13, delay, "--bind", src+":/workspaces/src")
	for _, tc := range []struct {
		name string
		held bool // the writer keeps the file open
	}{{"reopened", false}, {"held", true}} {
		t.Run(tc.name, func(t *testing.T) {
			onDisk := filepath.Join(src, tc.name)
			if err := os.WriteFile(onDisk, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			through := filepath.Join(m.Mnt, "mnt/alpha/workspaces/src", tc.name)
			if !testenv.Poll(10*time.Second, func() bool { _, err := os.Stat(through); return err == nil }) {
				t.Fatalf("%s does not show through the mount", through)
			}
			got := startTail(t, through)
			before := deviceReads(t, m.Mnt, "alpha")
			appendLines(t, onDisk, tc.held)
			lines := got.wait(tailLines, 60*time.Second)
			reads := deviceReads(t, m.Mnt, "alpha") - before
			for i := range tailLines {
				want := fmt.Sprintf("line %d", i+1)
				if i >= len(lines) {
					t.Errorf("line %d: missing, want %q (tail showed %d lines)", i+1, want, len(lines))
					break
				}
				if lines[i] != want {
					t.Errorf("line %d: %q, want %q", i+1, lines[i], want)
				}
			}
			// Each of tail's reads takes what grew, a line or more; a
			// few more for its start.
			if want := int64(tailLines + 5); reads > want {
				t.Errorf("following %d lines cost the device %d reads, want at most %d", tailLines, reads, want)
			} else {
				t.Logf("following %d lines cost the device %d reads", tailLines, reads)
			}
		})
	}
}

// appendLines appends tailLines lines to path, one every 0.2 to 0.5 s,
// opening the file for each (as echo >> f does) or holding it open.
func appendLines(t *testing.T, path string, held bool) {
	t.Helper()
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var f *os.File
	if held {
		f = open()
		defer f.Close()
	}
	pauses := []time.Duration{200 * time.Millisecond, 350 * time.Millisecond, 500 * time.Millisecond}
	for i := range tailLines {
		w := f
		if !held {
			w = open()
		}
		if _, err := fmt.Fprintf(w, "line %d\n", i+1); err != nil {
			t.Fatal(err)
		}
		if !held {
			w.Close()
		}
		time.Sleep(pauses[i%len(pauses)])
	}
}

// tailed is what a tail -f wrote, line by line, to a pipe.
type tailed struct {
	mu    sync.Mutex
	lines []string
}

// startTail runs tail -f on path, its output to a pipe, until the test
// ends.
func startTail(t *testing.T, path string) *tailed {
	t.Helper()
	cmd := exec.Command("tail", "-f", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := &tailed{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(out)
		for s.Scan() {
			got.mu.Lock()
			got.lines = append(got.lines, s.Text())
			got.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-done; cmd.Wait() })
	return got
}

// wait returns the lines once there are n, or those there are within
// limit.
func (g *tailed) wait(n int, limit time.Duration) []string {
	var lines []string
	testenv.Poll(limit, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		lines = append([]string(nil), g.lines...)
		return len(lines) >= n
	})
	return lines
}

// deviceReads is how many Treads the gateway has sent device id, from
// its /sys/stats.
func deviceReads(t *testing.T, mnt, id string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, "sys/stats"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^device ` + regexp.QuoteMeta(id) + ` requests .*$`).Find(b)
	if line == nil {
		t.Fatalf("no requests of device %s in /sys/stats:\n%s", id, b)
	}
	m := regexp.MustCompile(` read (\d+)`).FindSubmatch(line)
	if m == nil {
		return 0 // none sent yet
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}
