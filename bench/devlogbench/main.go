// Command devlogbench measures what the rate limit of /dev/log costs and
// buys, through a real FUSE mount of each gsvfs binary given: the latency
// of a normal writer's line (open, write, close), first alone, then while
// an ordinary user floods /dev/log with yes(1); and how much the
// daemon's log file grew during the flood. Run it as root (the flood runs
// as -flood-uid); see BENCHMARKS.md.
//
//	go run ./bench/devlogbench -gsvfs after=/tmp/gsvfs,before=/tmp/gsvfs-old
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	bins := flag.String("gsvfs", "", "NAME=PATH,... of the gsvfs binaries to compare")
	n := flag.Int("n", 2000, "lines the normal writer writes in each phase")
	uid := flag.Int("flood-uid", 1000, "uid the flood runs as")
	flag.Parse()
	if *bins == "" || os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "usage (as root): devlogbench -gsvfs NAME=PATH,... [-n 2000] [-flood-uid 1000]")
		os.Exit(2)
	}
	fmt.Println("| gsvfs | line alone p50 / p99 | line during flood p50 / p99 | log growth during flood | /sys/stats |")
	fmt.Println("|---|---|---|---|---|")
	for _, b := range strings.Split(*bins, ",") {
		name, path, ok := strings.Cut(b, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "devlogbench: %q: want NAME=PATH\n", b)
			os.Exit(2)
		}
		if err := measure(name, path, *n, *uid); err != nil {
			fmt.Fprintf(os.Stderr, "devlogbench: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}

// measure mounts a fresh state directory with the binary at bin in the
// background and prints its row.
func measure(name, bin string, n, uid int) error {
	dir, err := os.MkdirTemp("", "devlogbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the flood's user walks to the mount
	state, mnt := filepath.Join(dir, "state"), filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if out, err := exec.Command(bin, "mount", "--root", state, mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("mount: %v\n%s", err, out)
	}
	defer exec.Command(bin, "umount", mnt).Run()
	devlog := filepath.Join(mnt, "dev", "log")
	alone, err := lines(devlog, n)
	if err != nil {
		return err
	}
	grownFrom := logSize(state)
	flood := exec.Command("sh", "-c", `exec yes "a line of an ordinary user's flood, as fast as it goes" > "$1"`, "sh", devlog)
	flood.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	if err := flood.Start(); err != nil {
		return err
	}
	start := time.Now()
	time.Sleep(time.Second) // the flood in full swing
	during, err := lines(devlog, n)
	flood.Process.Kill()
	flood.Wait()
	took := time.Since(start)
	if err != nil {
		return err
	}
	grown := logSize(state) - grownFrom
	stats, _ := os.ReadFile(filepath.Join(mnt, "sys", "stats"))
	devStats := string(regexp.MustCompile(`dev/log .*`).Find(stats))
	if devStats == "" {
		devStats = "(none)"
	}
	fmt.Printf("| %s | %s | %s | %.1f MB in %.1f s | %s |\n", name, alone, during,
		float64(grown)/1e6, took.Seconds(), devStats)
	return nil
}

// lines writes n lines to /dev/log, each with an open, a write and a
// close, and returns the median and 99th percentile of their times.
func lines(devlog string, n int) (string, error) {
	times := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		f, err := os.OpenFile(devlog, os.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		_, err = fmt.Fprintf(f, "a normal writer's line %d\n", i)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	return ms(times[n/2]) + " / " + ms(times[n*99/100]) + " ms", nil
}

// logSize is the size of the daemon's log in state, rotated part included.
func logSize(state string) int64 {
	var n int64
	for _, p := range []string{"gsvfs.log", "gsvfs.log.1"} {
		if fi, err := os.Stat(filepath.Join(state, p)); err == nil {
			n += fi.Size()
		}
	}
	return n
}
