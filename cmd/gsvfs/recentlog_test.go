//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/shelld"
	"github.com/gsvfs/gsvfs/vfs"
)

// /sys/log keeps the last maxLogLines lines, whole.
func TestRecentLogKeepsLastLines(t *testing.T) {
	r := &recentLog{log: shelld.NewLog(16<<20, time.Now)}
	for i := range maxLogLines + 1000 {
		fmt.Fprintf(r, "line %d\n", i)
	}
	f := vfs.NewStreamFile(r.log)
	h, err := f.Open(t.Context(), os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := h.ReadAt(t.Context(), buf, off)
		all = append(all, buf[:n]...)
		off += int64(n)
		if err == io.EOF || n == 0 {
			break
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(all), "\n"), "\n")
	if len(lines) != maxLogLines || lines[0] != "line 1000" || lines[len(lines)-1] != fmt.Sprintf("line %d", maxLogLines+999) {
		t.Errorf("kept %d lines, from %q to %q; want %d, from \"line 1000\"", len(lines), lines[0], lines[len(lines)-1], maxLogLines)
	}
}

// /sys/log grows as the daemon logs: tail -n shows the last lines, and
// tail -f follows.
func TestSysLog(t *testing.T) {
	d := startMount(t)
	if err := os.WriteFile(d.Path("dev/log"), []byte("first marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := testenv.Run(t, "/", "tail", "-n", "1", d.Path("sys/log")); !strings.Contains(out, `line="first marker"`) {
		t.Errorf("tail -n 1 /sys/log: %q", out)
	}
	// tail -f may start late on a loaded machine: write markers until it
	// shows one, each line once.
	follow := exec.Command("tail", "-n", "0", "-f", d.Path("sys/log"))
	var out testenv.LogBuffer
	follow.Stdout = &out
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30 && !strings.Contains(out.String(), "second marker"); i++ {
		if err := os.WriteFile(d.Path("dev/log"), []byte("second marker\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	follow.Process.Kill()
	follow.Wait()
	if !strings.Contains(out.String(), `line="second marker"`) || strings.Contains(out.String(), "first marker") {
		t.Errorf("tail -f /sys/log: %q", out.String())
	}
}
