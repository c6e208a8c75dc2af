//go:build linux

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// What other programs do to the state directory shows through the mount
// although the kernel caches stored files for a minute: the tree's watch
// drops what went stale. Each step first makes the kernel cache the old
// state (a read, a stat, a miss), then changes the disk behind the
// mount's back, then waits for the mount to show the change; without the
// watch the old state would stay for the whole cache time.
func TestOutsideChangesShow(t *testing.T) {
	for _, mode := range []struct {
		name  string
		extra []string
	}{{"passthrough", nil}, {"through-daemon", []string{"--no-passthrough"}}} {
		t.Run(mode.name, func(t *testing.T) {
			d := startMount(t, mode.extra...)
			host := filepath.Join(d.Root, "workspaces")
			m := filepath.Join(d.Mnt, "workspaces")
			o := outside{t: t, d: d}

			// Content: the same length, so only fresh pages tell.
			o.write(filepath.Join(host, "f"), "first version\n")
			o.expect("cat", "first version\n", "cat", filepath.Join(m, "f"))
			o.write(filepath.Join(host, "f"), "other version\n")
			o.eventually("a rewrite", "other version\n", "cat", filepath.Join(m, "f"))
			// A longer file: the kernel reads no further than the size it
			// caches.
			o.expect("size", "14\n", "stat", "-c", "%s", filepath.Join(m, "f"))
			o.write(filepath.Join(host, "f"), "other version, longer\n")
			o.eventually("a longer rewrite", "other version, longer\n", "cat", filepath.Join(m, "f"))

			// Attributes.
			o.expect("mode", "644\n", "stat", "-c", "%a", filepath.Join(m, "f"))
			if err := os.Chmod(filepath.Join(host, "f"), 0o600); err != nil {
				t.Fatal(err)
			}
			o.eventually("a chmod", "600\n", "stat", "-c", "%a", filepath.Join(m, "f"))

			// A miss the kernel caches, then the name made.
			o.expect("miss", "no\n", "sh", "-c", `test -e "$1" && echo yes || echo no`, "sh", filepath.Join(m, "new"))
			o.write(filepath.Join(host, "new"), "made outside\n")
			o.eventually("a new file", "made outside\n", "cat", filepath.Join(m, "new"))

			// Removal and renaming, the entries seen first.
			o.expect("ls", "f\nnew\n", "ls", m)
			if err := os.Rename(filepath.Join(host, "new"), filepath.Join(host, "renamed")); err != nil {
				t.Fatal(err)
			}
			o.eventually("a rename", "f\nrenamed\n", "ls", m)
			o.expect("renamed content", "made outside\n", "cat", filepath.Join(m, "renamed"))
			if err := os.Remove(filepath.Join(host, "renamed")); err != nil {
				t.Fatal(err)
			}
			o.eventually("a removal", "no\n", "sh", "-c", `test -e "$1" && echo yes || echo no`, "sh", filepath.Join(m, "renamed"))

			// A name the kernel never looked up, in a listing it keeps.
			o.expect("listing", "f\nf\n", "sh", "-c", `ls "$1"; ls "$1"`, "sh", m) // the second from the kernel's cache
			o.write(filepath.Join(host, "unseen"), "x")
			o.eventually("a file made outside in a listed directory", "f\nunseen\n", "ls", m)
			if err := os.Remove(filepath.Join(host, "unseen")); err != nil {
				t.Fatal(err)
			}
			o.eventually("a removal from a listed directory", "f\n", "ls", m)

			// A directory moved: its files are watched where it went.
			o.write(filepath.Join(host, "d1", "g"), "in d1\n")
			o.expect("dir", "in d1\n", "cat", filepath.Join(m, "d1", "g"))
			if err := os.Rename(filepath.Join(host, "d1"), filepath.Join(host, "d2")); err != nil {
				t.Fatal(err)
			}
			o.eventually("a directory's rename", "in d1\n", "cat", filepath.Join(m, "d2", "g"))
			o.write(filepath.Join(host, "d2", "g"), "in d2\n")
			o.eventually("a write in a moved directory", "in d2\n", "cat", filepath.Join(m, "d2", "g"))

			stats := output("cat", filepath.Join(d.Mnt, "sys", "stats"))
			for _, want := range []string{`(?m)^tree /workspaces .* watched [1-9]\d* unwatched 0$`,
				`(?m)^edge fuse \S+ watching yes dropped entries [1-9]\d* inodes [1-9]\d* all 0 pages 0$`} {
				if !regexp.MustCompile(want).MatchString(stats) {
					t.Errorf("/sys/stats has no line like %s:\n%s", want, stats)
				}
			}
		})
	}
}

// A reader holding a file open keeps reading it when another program
// removes or replaces its name; the name shows the change.
func TestOutsideRemovalWhileOpen(t *testing.T) {
	d := startMount(t)
	host := filepath.Join(d.Root, "workspaces")
	m := filepath.Join(d.Mnt, "workspaces")
	o := outside{t: t, d: d}
	o.write(filepath.Join(host, "held"), "held content\n")
	reader := exec.Command("sh", "-c", `exec 3<"$1"; echo open; read go; cat <&3`, "sh", filepath.Join(m, "held"))
	in, err := reader.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := reader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(out)
	if l, err := lines.ReadString('\n'); err != nil || l != "open\n" {
		t.Fatalf("reader: %q, %v", l, err)
	}
	if err := os.Remove(filepath.Join(host, "held")); err != nil {
		t.Fatal(err)
	}
	o.eventually("a removal while open", "no\n", "sh", "-c", `test -e "$1" && echo yes || echo no`, "sh", filepath.Join(m, "held"))
	o.write(filepath.Join(host, "held"), "a new file\n")
	o.eventually("a new file of the same name", "a new file\n", "cat", filepath.Join(m, "held"))
	io.WriteString(in, "go\n")
	in.Close()
	rest, _ := io.ReadAll(lines)
	if err := reader.Wait(); err != nil || string(rest) != "held content\n" {
		t.Fatalf("the open file read %q (%v), want its old content", rest, err)
	}
}

// outside changes the disk and checks the mount, from child processes.
type outside struct {
	t *testing.T
	d *daemon
}

func (o outside) write(p, text string) {
	o.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		o.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		o.t.Fatal(err)
	}
}

func output(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

// expect checks what a command shows through the mount now.
func (o outside) expect(what, want, name string, args ...string) {
	o.t.Helper()
	if got := output(name, args...); got != want {
		o.t.Fatalf("%s: %s %s gave %q, want %q", what, name, strings.Join(args, " "), got, want)
	}
}

// eventually waits for the mount to show a change made outside. The wait
// is far below the kernel's cache time, so only the watch can make it
// pass; how long it took is logged (the bench measures it).
func (o outside) eventually(what, want, name string, args ...string) {
	o.t.Helper()
	start := time.Now()
	var got string
	if !testenv.Poll(10*time.Second, func() bool { got = output(name, args...); return got == want }) {
		o.t.Fatalf("%s made outside did not show: %s %s gives %q, want %q\n%s",
			what, name, strings.Join(args, " "), got, want, o.d.log)
	}
	o.t.Logf("%s showed after %v", what, time.Since(start).Round(time.Millisecond))
}

// listingHeldAcross removes name from hostDir, on the disk, while a
// child holds mntDir (its view through the mount) open, and has the
// child read the held directory once the mount shows the directory's
// new mtime (the change's notice has come): a listing from the start
// then is the kernel's cached listing of the directory at that mtime
// (FOPEN_CACHE_DIR), so it must not be the one from before the change.
// What the held descriptor itself lists is left unchecked (POSIX leaves
// it open); the next `ls` must not show name.
func (o outside) listingHeldAcross(hostDir, mntDir, name string) {
	o.t.Helper()
	o.eventually("the name listed", "yes\n", "sh", "-c", `ls "$1" | grep -qx "$2" && echo yes || echo no`, "sh", mntDir, name)
	reader := exec.Command("perl", "-e", `$| = 1; opendir(D, $ARGV[0]) or die "$!"; print "open\n"; <STDIN>; print scalar(() = readdir(D)), "\n"`, mntDir)
	in, err := reader.StdinPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	out, err := reader.StdoutPipe()
	if err != nil {
		o.t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		o.t.Fatal(err)
	}
	defer reader.Wait()
	lines := bufio.NewReader(out)
	if l, err := lines.ReadString('\n'); err != nil || l != "open\n" {
		o.t.Fatalf("the reader holding %s: %q, %v", mntDir, l, err)
	}
	if err := os.Remove(filepath.Join(hostDir, name)); err != nil {
		o.t.Fatal(err)
	}
	o.eventually("the directory's mtime after a removal", output("stat", "-c", "%y", hostDir), "stat", "-c", "%y", mntDir)
	io.WriteString(in, "go\n")
	in.Close()
	if l, err := lines.ReadString('\n'); err != nil {
		o.t.Fatalf("the reader of the held directory: %q, %v", l, err)
	}
	o.eventually("a removal from a directory held open", "no\n", "sh", "-c", `ls "$1" | grep -qx "$2" && echo yes || echo no`, "sh", mntDir, name)
}
