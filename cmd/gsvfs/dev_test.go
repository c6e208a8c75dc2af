//go:build linux

package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
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
		if !eventuallyContains(d.log.String, want) {
			t.Errorf("daemon log lacks %s:\n%s", want, d.log)
		}
	}
}

// eventuallyContains waits up to 5 s for get to return text holding want.
func eventuallyContains(get func() string, want string) bool {
	for range 100 {
		if strings.Contains(get(), want) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
