//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/devfs"
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// /dev of the tree does what the host's /dev does, as shell tools see
// it: the same script run against both gives the same output.
func TestDevLikeHost(t *testing.T) {
	d := startMount(t)
	const script = `D=$1
for f in null zero full random urandom; do
	printf '%s: ' $f
	head -c 4096 $D/$f > /tmp/dev-$$
	printf 'head4k=%s' "$(wc -c < /tmp/dev-$$)"
	if [ -s /tmp/dev-$$ ]; then if tr -d '\0' < /tmp/dev-$$ | grep -q .; then printf ',data'; else printf ',zeros'; fi; fi
	rm -f /tmp/dev-$$
	n=$(dd if=$D/$f bs=1M count=3 2>/dev/null | wc -c); printf ' read3M=%s' $n
	if echo hi > $D/$f 2>/dev/null; then printf ' write=ok'; else printf ' write=fail'; fi
	printf ' append=%s' "$( (echo hi >> $D/$f) 2>&1 | sed 's/.*: //')"
	echo
done
dd if=/dev/zero of=$D/full bs=4k count=1 2>&1 | grep -o 'No space left on device' | head -1
`
	run := func(dir string) string {
		out, err := exec.Command("bash", "-c", script, "bash", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("script on %s: %v\n%s", dir, err, out)
		}
		return string(out)
	}
	want, got := run("/dev"), run(d.Path("dev"))
	if got != want {
		t.Errorf("/dev of the tree:\n%s\nthe host's /dev:\n%s", got, want)
	}
	if !strings.Contains(want, "read3M=3145728") {
		t.Errorf("the host's own answers look wrong (the test is not testing):\n%s", want)
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
