// Command procbench measures /proc sessions through a gsvfs mount: the
// round trip of a command written to a live shell's stdin until its
// output can be read, one-shot sessions per second (mkdir, exec true,
// wait, rmdir), and what an idle session costs the daemon in memory.
//
//	procbench -mount MNT -pid DAEMON_PID [-rounds 2000] [-oneshots 1000] [-idle 1000]
//
// It prints one line per figure, "name value unit", for bench/procbench.sh.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	mnt := flag.String("mount", "", "gsvfs mount point")
	pid := flag.Int("pid", 0, "pid of the daemon serving the mount, for its memory")
	rounds := flag.Int("rounds", 2000, "echo round trips")
	oneshots := flag.Int("oneshots", 1000, "one-shot sessions")
	idle := flag.Int("idle", 1000, "idle sessions held at once")
	flag.Parse()
	if *mnt == "" {
		fmt.Fprintln(os.Stderr, "procbench: -mount is required")
		os.Exit(2)
	}
	proc := filepath.Join(*mnt, "proc")
	steps := []func() error{
		func() error { return roundTrip(proc, *rounds) },
		func() error { return oneShots(proc, *oneshots) },
		func() error { return idleCost(proc, *pid, *idle) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			fmt.Fprintln(os.Stderr, "procbench:", err)
			os.Exit(1)
		}
	}
}

// roundTrip writes `echo rN` style commands to a live shell and measures
// until the answer is in stdout: once waiting on stream (a blocking
// read), once polling stdout as a file tool would.
func roundTrip(proc string, rounds int) error {
	dir := filepath.Join(proc, "rtt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := writeFile(filepath.Join(dir, "stdin"), "PS1='$ '\n"); err != nil {
		return err
	}
	stdin, err := os.OpenFile(filepath.Join(dir, "stdin"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer stdin.Close()
	for _, mode := range []string{"stream", "stdout"} {
		f, err := os.Open(filepath.Join(dir, mode))
		if err != nil {
			return err
		}
		start, err := settle(filepath.Join(dir, "stdout"))
		if err != nil {
			f.Close()
			return err
		}
		lat, err := echoRounds(stdin, f, start, mode == "stdout", rounds)
		f.Close()
		if err != nil {
			return fmt.Errorf("round trip via %s: %w", mode, err)
		}
		slices.Sort(lat)
		fmt.Printf("rtt_%s_p50 %.3f ms\n", mode, ms(lat[len(lat)/2]))
		fmt.Printf("rtt_%s_p99 %.3f ms\n", mode, ms(lat[len(lat)*99/100]))
	}
	return nil
}

// echoRounds runs the round trips, reading out from where it is now on.
// The answer is the line "rN": the terminal's echo of the command shows
// "echo r$((N))", never "rN".
func echoRounds(stdin, out *os.File, off int64, poll bool, rounds int) ([]time.Duration, error) {
	buf := make([]byte, 64<<10)
	var lat []time.Duration
	for i := range rounds {
		want := []byte(fmt.Sprintf("r%d\r\n", i))
		var seen []byte
		t0 := time.Now()
		if _, err := fmt.Fprintf(stdin, "echo r$((%d))\n", i); err != nil {
			return nil, err
		}
		for !bytes.Contains(seen, want) {
			// One pread: os.File.ReadAt would read on to fill buf,
			// and a stream's next read waits for more output.
			n, err := syscall.Pread(int(out.Fd()), buf, off)
			if err == syscall.EINTR {
				continue // the Go runtime's preemption signal
			}
			if err != nil {
				return nil, err
			}
			if n == 0 && poll {
				time.Sleep(50 * time.Microsecond)
			}
			if n == 0 && time.Since(t0) > 10*time.Second {
				return nil, fmt.Errorf("no answer to round %d in 10 s", i)
			}
			seen = append(seen, buf[:n]...)
			off += int64(n)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// settle waits until the shell's output has stopped (its prompt is
// out) and returns the size of stdout then.
func settle(stdout string) (int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(stdout)
		if err != nil {
			return 0, err
		}
		size := fi.Size()
		time.Sleep(200 * time.Millisecond)
		if fi2, err := os.Stat(stdout); err == nil && fi2.Size() == size && size > 0 {
			return size, nil
		}
		if time.Now().After(deadline) {
			return 0, errors.New("the shell never settled")
		}
	}
}

// oneShots runs mkdir, exec true, wait, rmdir in a loop: n sessions by
// one client, then n by four clients at once (agents run commands side
// by side).
func oneShots(proc string, n int) error {
	alone, err := shellAlone(n)
	if err != nil {
		return err
	}
	fmt.Printf("shell_alone_rate %.0f runs/s\n", alone)
	for _, clients := range []int{1, 4} {
		rate, err := oneShotRate(proc, n, clients)
		if err != nil {
			return err
		}
		fmt.Printf("oneshot_rate_%d %.0f sessions/s\n", clients, rate)
	}
	return nil
}

func oneShotRate(proc string, n, clients int) (float64, error) {
	errs := make(chan error, clients)
	t0 := time.Now()
	for c := range clients {
		go func() {
			for i := c; i < n; i += clients {
				if err := oneShot(filepath.Join(proc, fmt.Sprintf("one%d-%d", clients, i))); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// shellAlone is the reference: `$SHELL -lc true` run n times in a row
// without gsvfs, in the environment the daemon's sessions get (this
// process's, which procbench.sh sets up alike).
func shellAlone(n int) (float64, error) {
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	t0 := time.Now()
	for range n {
		if err := exec.Command(shell, "-lc", "true").Run(); err != nil {
			return 0, fmt.Errorf("%s -lc true: %w", shell, err)
		}
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// oneShot is what an agent's one-shot command costs: make the session,
// run `true` in it, wait for it, remove it.
func oneShot(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "ctl"), "exec true\n"); err != nil {
		return err
	}
	st, err := os.ReadFile(filepath.Join(dir, "wait"))
	if err != nil {
		return err
	}
	if !bytes.Contains(st, []byte(`"status":"completed"`)) {
		return fmt.Errorf("exec true: %s", st)
	}
	return os.Remove(dir)
}

// idleCost starts n interactive shells, waits until all are at their
// prompt, and reports how much the daemon's resident memory grew per
// session (the shells are processes of their own and not counted).
func idleCost(proc string, pid, n int) error {
	if pid == 0 {
		return errors.New("-pid is required for the idle cost")
	}
	runtimeSettle()
	before, err := rss(pid)
	if err != nil {
		return err
	}
	var dirs []string
	defer func() {
		for _, d := range dirs {
			os.Remove(d)
		}
	}()
	for i := range n {
		dir := filepath.Join(proc, "idle"+strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		dirs = append(dirs, dir)
		if err := writeFile(filepath.Join(dir, "ctl"), "start\n"); err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
	}
	for i, d := range dirs {
		st, err := os.ReadFile(filepath.Join(d, "wait"))
		if err != nil || !bytes.Contains(st, []byte(`"status":"waiting"`)) {
			return fmt.Errorf("idle session %d not at its prompt: %v %s", i, err, st)
		}
	}
	runtimeSettle()
	after, err := rss(pid)
	if err != nil {
		return err
	}
	fmt.Printf("idle_sessions %d sessions\n", n)
	fmt.Printf("idle_rss_per_session %.1f KiB\n", float64(after-before)/float64(n)/1024)
	return nil
}

// runtimeSettle gives the daemon's runtime a moment to return memory.
func runtimeSettle() { time.Sleep(2 * time.Second) }

// rss reads a process's resident set size in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// writeFile writes s in one write, as echo does.
func writeFile(name, s string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
