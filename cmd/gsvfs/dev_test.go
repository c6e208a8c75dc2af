//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/devfs"
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// /dev of the tree does what the host's /dev does, as shell tools see
// it: null, zero, full, random and urandom are the same character devices
// (stat), and the same script run against the tree's and against the
// host's /dev on a nodev mount, as every FUSE mount is, gives the same
// output: a device node is the kernel's to open, never a FUSE daemon's.
func TestDevLikeHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to mount the host's /dev again, nodev")
	}
	d := startMount(t)
	const stat = `cd $1 && stat -c '%n %F %t:%T %a %U:%G' null zero full random urandom`
	const script = `D=$1
for f in null zero full random urandom; do
	printf '%s: ' $f
	printf 'head=%s' "$(head -c 4096 $D/$f 2>/dev/null | wc -c)"
	printf ' read=%s' "$( (dd if=$D/$f bs=1M count=3 2>&1 >/dev/null) | sed -n 's/.*: //p')"
	printf ' write=%s' "$( (echo hi > $D/$f) 2>&1 | sed 's/.*: //')"
	printf ' append=%s' "$( (echo hi >> $D/$f) 2>&1 | sed 's/.*: //')"
	echo
done
`
	run := func(script, dir string) string {
		out, err := exec.Command("bash", "-c", script, "bash", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("script on %s: %v\n%s", dir, err, out)
		}
		return string(out)
	}
	if got, want := run(stat, d.Path("dev")), run(stat, "/dev"); got != want {
		t.Errorf("stat of the tree's /dev:\n%s\nof the host's:\n%s", got, want)
	}
	nodev := filepath.Join(t.TempDir(), "dev")
	smMust(t, "mkdir", os.Mkdir(nodev, 0o755))
	smMust(t, "bind /dev", syscall.Mount("/dev", nodev, "", syscall.MS_BIND, ""))
	defer syscall.Unmount(nodev, syscall.MNT_DETACH)
	smMust(t, "remount nodev", syscall.Mount("", nodev, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_NODEV, ""))
	if got, want := run(script, d.Path("dev")), run(script, nodev); got != want {
		t.Errorf("/dev of the tree:\n%s\nthe host's /dev, nodev:\n%s", got, want)
	}
	if host := run(script, "/dev"); !strings.Contains(host, "zero: head=4096") {
		t.Errorf("the host's own /dev looks wrong (the test is not testing):\n%s", host)
	}
}

// A recursive walk of the whole tree ends, as one of a Linux root does
// (issue 29, item 5): each tool is given a generous bound by a context,
// and failing means it was still running then, reading a file of endless
// data. Its memory is bounded too (grep keeps a line of zeros whole).
// What a tool may say on its way is what it says of a Linux root: a
// file it cannot open, and tar's note of generated files whose times are
// now (/sys); anything else (memory exhausted) is a failure too.
func TestTreeWalksEnd(t *testing.T) {
	walkNote := regexp.MustCompile(`Permission denied$|^tar: .*: file changed as we read it$|^tar: Exiting with failure status due to previous errors$`)
	d := startMount(t)
	// A running session: its stream and wait files block, each read
	// for the yield time at most (gsvfs-proc(7)).
	procMustWrite(t, filepath.Join(procNew(t, d, "walked"), "ctl"), "exec sleep 600\n")
	// Found by every search: the walk is one, not a walk of nothing.
	smMust(t, "write", os.WriteFile(d.Path("workspaces/needle"), []byte("needle-in-the-tree\n"), 0o644))
	rg, rgErr := exec.LookPath("rg")
	for _, c := range []struct {
		name, script string
		skip         error
	}{
		{"grep -r", "grep -r needle-in-the-tree .", nil},
		{"grep -rI", "grep -rI needle-in-the-tree .", nil},
		{"rg", rg + " --no-messages -uuu needle-in-the-tree .", rgErr},
		{"find -type f -exec cat", "find . -type f -exec cat {} + | grep -a needle-in-the-tree", nil},
		{"tar c", "tar c -f - . | grep -a -o needle-in-the-tree", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != nil {
				t.Skipf("SKIPPED: %s is not installed here: %v", c.name, c.skip)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "ulimit -v 2000000; "+c.script)
			cmd.Dir = d.Mnt
			out, _ := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("%s of the whole tree was still running after 2 minutes; it said:\n%.2000s", c.name, out)
			}
			if !strings.Contains(string(out), "needle-in-the-tree") {
				t.Errorf("%s of the whole tree did not find workspaces/needle's text; it said:\n%.2000s", c.name, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line != "" && !walkNote.MatchString(line) && !strings.Contains(line, "needle-in-the-tree") {
					t.Errorf("%s of the whole tree: %s", c.name, line)
				}
			}
		})
	}
}

// A line written to /dev/log goes to the daemon's log with the writer's
// uid, as it is, without a terminal in between.
func TestDevLog(t *testing.T) {
	d := smSharedMount(t)
	out := smAsOther(t, "/", "printf 'from uid 1000\\nsecond line' > "+d.Path("dev/log")+" && echo ok")
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("writing /dev/log as uid 1000: %q", out)
	}
	for _, want := range []string{`uid=1000 line="from uid 1000"`, `uid=1000 line="second line"`} {
		if !testenv.Poll(5*time.Second, func() bool { return strings.Contains(d.log.String(), want) }) {
			t.Errorf("daemon log lacks %s:\n%s", want, d.log)
		}
	}
}

// An ordinary user flooding /dev/log (yes into it, and a loop that opens
// it again for each line) for a few seconds grows the background daemon's
// log file by at most that user's share: the burst and the rate for the
// time it took, twice over for what the log adds to each line. The
// flood's writes all succeed, another writer's line still gets through,
// and /sys/stats counts what was dropped.
func TestDevLogFloodBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	vfstest.NeedFUSE(t)
	base := smSharedTempDir(t)
	root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	pid, _ := lcBackground(t, "", root, mnt)
	defer lcUmount(t, mnt, pid)
	logSize := func() int64 {
		var n int64
		for _, p := range []string{"gsvfs.log", "gsvfs.log.1"} {
			if fi, err := os.Stat(filepath.Join(root, p)); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	before, start := logSize(), time.Now()
	out := smAsOther(t, filepath.Join(mnt, "dev"), `
		timeout 3 sh -c 'yes "flood line from an ordinary user, as fast as it goes" > log'; echo yes $?
		timeout 3 sh -c 'while :; do echo "one open per line" >> log || exit 9; done'; echo loop $?`)
	took := time.Since(start)
	if strings.TrimSpace(out) != "yes 124\nloop 124" {
		t.Errorf("the flood's writes: %q; want both loops cut only by their timeout", out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "dev", "log"), []byte("root after the flood\n"), 0); err != nil {
		t.Fatal(err)
	}
	stats, _ := os.ReadFile(filepath.Join(mnt, "sys", "stats"))
	grown, most := logSize()-before, 2*(devfs.DefaultBurst+int64(took.Seconds()+1)*devfs.DefaultRate)
	t.Logf("the log grew by %d bytes in %v of flood (allowed %d); %s", grown, took.Round(time.Millisecond), most,
		regexp.MustCompile(`dev/log .*`).Find(stats))
	if grown > most {
		t.Errorf("the daemon's log grew by %d bytes during %v of flood; want at most %d", grown, took, most)
	}
	if m := regexp.MustCompile(`dev/log lines \d+ written .* dropped lines (\d+) `).FindSubmatch(stats); m == nil || string(m[1]) == "0" {
		t.Errorf("/sys/stats: %q; want a dev/log line with the dropped lines counted", stats)
	}
	logText := func() string { b, _ := os.ReadFile(filepath.Join(root, "gsvfs.log")); return string(b) }
	if !testenv.Poll(5*time.Second, func() bool { return strings.Contains(logText(), `uid=0 line="root after the flood"`) }) {
		t.Errorf("root's line after the flood is not in the log")
	}
}
