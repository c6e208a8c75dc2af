//go:build linux

package main

// Real workloads on the mount — git, the Go toolchain, tar and sqlite3 —
// each run the same way on a native directory, with the same results
// required. They are the programs people and agents actually run in
// /workspaces, and they use what small tests miss: renames over open
// files, fsync, mmap of shared files, record locks between processes,
// hard links, exec of a file just written, many small files.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wlNeedTool skips, loudly, where a workload's program is not installed.
func wlNeedTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("SKIPPED: %s is not installed (%v); this workload test did NOT run — install %s to run it", name, err, name)
	}
	return p
}

// wlRun runs a child process with extra environment and a bounded time,
// failing the test on error; it returns the combined output.
func wlRun(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := wlTry(dir, env, "", name, args...)
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return out
}

// wlTry is wlRun returning the error; stdin, when not empty, is fed to
// the process.
func wlTry(dir string, env []string, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (timed out after 5m)", err)
	}
	return string(out), err
}

// wlCompare fails with the lines that differ between a native result and
// the same result on the mount.
func wlCompare(t *testing.T, what, native, mounted string) {
	t.Helper()
	if native == mounted {
		return
	}
	nl, ml := strings.Split(native, "\n"), strings.Split(mounted, "\n")
	var diff []string
	for i := 0; i < len(nl) || i < len(ml); i++ {
		var a, b string
		if i < len(nl) {
			a = nl[i]
		}
		if i < len(ml) {
			b = ml[i]
		}
		if a != b {
			diff = append(diff, fmt.Sprintf("  line %d: mount %q, native %q", i+1, b, a))
		}
		if len(diff) == 20 {
			diff = append(diff, "  ...")
			break
		}
	}
	t.Errorf("%s differs between the mount and native disk (got mount, want native):\n%s", what, strings.Join(diff, "\n"))
}

// wlWriteFiles writes a map of relative paths to contents under dir.
func wlWriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// wlSnapshot describes a tree, one sorted line per entry: path, type and
// permission bits, owner, size, link count of files, sha256 of content,
// symlink target, and modification time. Two trees with the same snapshot
// are the same to any program that reads them.
func wlSnapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		mode := fs.FileMode(st.Mode & 0o7777)
		line := fmt.Sprintf("%s type=%o perm=%04o owner=%d:%d", rel, st.Mode&syscall.S_IFMT, mode, st.Uid, st.Gid)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			sum, err := wlHashFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" size=%d nlink=%d sha256=%s", st.Size, st.Nlink, sum)
		case syscall.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" size=%d -> %s", st.Size, target)
		}
		if rel != "." {
			line += fmt.Sprintf(" mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// wlHashFile returns the hex sha256 of a file's content.
func wlHashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ---------------------------------------------------------------- git

// wlGitEnv isolates git from any global or system configuration and fixes
// identities and dates, so commit ids are the same wherever it runs.
func wlGitEnv(t *testing.T) []string {
	home := t.TempDir()
	const date = "1700000000 +0000"
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Gsv Tester", "GIT_AUTHOR_EMAIL=tester@gsvfs.invalid",
		"GIT_COMMITTER_NAME=Gsv Tester", "GIT_COMMITTER_EMAIL=tester@gsvfs.invalid",
		"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date,
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "TZ=UTC",
	}
}

// wlGitTree generates a tree of a few hundred small files in nested
// directories, with an executable, a symlink, an ignored file and names
// with spaces.
func wlGitTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		".gitignore":        "*.log\nbuild/\n",
		"README.md":         "# generated tree\n",
		"name with spaces":  "spaces\n",
		"ignored.log":       "never committed\n",
		"build/out.o":       "ignored too\n",
		"a/b/c/d/e/deep.go": "package e\n",
	}
	for i := 0; i < 320; i++ {
		name := fmt.Sprintf("pkg%d/sub%d/file%03d.txt", i%9, i%4, i)
		// Sizes from empty to a few KiB; repeated content so git
		// packs deltas.
		files[name] = strings.Repeat(fmt.Sprintf("line %d of file %d\n", i%13, i), i%40)
	}
	wlWriteFiles(t, dir, files)
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pkg1/sub1/file001.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
}

// wlGitResult is what must be the same natively and on the mount.
type wlGitResult struct {
	heads, lsTree, config, objects, clone, cloneLinks string
}

// wlGitWorkload runs init, add, commit, a second commit with edits,
// deletions and renames, status, gc, fsck and a local clone in dir.
func wlGitWorkload(t *testing.T, dir string) wlGitResult {
	t.Helper()
	env := wlGitEnv(t)
	git := func(args ...string) string {
		t.Helper()
		return wlRun(t, dir, env, "git", args...)
	}
	clean := func(when string) {
		t.Helper()
		if out := git("status", "--porcelain", "--ignored=no"); out != "" {
			t.Errorf("in %s, git status --porcelain %s: got %q, want empty", dir, when, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	wlGitTree(t, dir)
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	clean("after the first commit")

	// Edit, delete and rename, then commit again.
	wlWriteFiles(t, dir, map[string]string{
		"pkg0/sub0/file000.txt": "rewritten\n",
		"pkg2/new.txt":          "new file\n",
	})
	if err := os.Remove(filepath.Join(dir, "pkg3/sub3/file003.txt")); err != nil {
		t.Fatal(err)
	}
	git("mv", "pkg4/sub0/file004.txt", "pkg4/renamed.txt")
	if err := os.Chmod(filepath.Join(dir, "README.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "second")
	clean("after the second commit")

	git("gc", "-q", "--prune=now")
	if out := git("fsck", "--full", "--strict", "--no-progress"); out != "" {
		t.Errorf("in %s, git fsck: got %q, want no output", dir, out)
	}
	clean("after gc")

	var r wlGitResult
	r.heads = git("rev-parse", "HEAD", "HEAD~1", "HEAD^{tree}")
	r.lsTree = git("ls-tree", "-r", "HEAD")
	r.config = git("config", "--local", "--list")
	for _, line := range strings.Split(git("count-objects", "-v"), "\n") {
		// count: loose objects (none after gc), in-pack: objects packed.
		if strings.HasPrefix(line, "count:") || strings.HasPrefix(line, "in-pack:") || strings.HasPrefix(line, "packs:") {
			r.objects += line + "\n"
		}
	}

	// A local clone hard-links the object files where it can.
	clone := dir + "-clone"
	wlRun(t, filepath.Dir(dir), env, "git", "clone", "-q", dir, clone)
	r.clone = wlRun(t, clone, env, "git", "rev-parse", "HEAD")
	// Which object files the clone shares with the original by hard link.
	var linked []string
	filepath.WalkDir(filepath.Join(clone, ".git/objects"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			var st syscall.Stat_t
			if syscall.Stat(p, &st) == nil && st.Nlink > 1 {
				rel, _ := filepath.Rel(clone, p)
				linked = append(linked, fmt.Sprintf("%s nlink=%d", rel, st.Nlink))
			}
		}
		return nil
	})
	r.cloneLinks = strings.Join(linked, "\n")
	if out := wlRun(t, clone, env, "git", "status", "--porcelain"); out != "" {
		t.Errorf("in %s, git status --porcelain in a fresh clone: got %q, want empty", clone, out)
	}
	if out := wlRun(t, clone, env, "git", "fsck", "--full", "--strict", "--no-progress"); out != "" {
		t.Errorf("in %s, git fsck: got %q, want no output", clone, out)
	}
	return r
}

// TestWorkloadGit runs a git session on the mount and natively: the
// commits, trees, probed configuration and packs must be identical.
func TestWorkloadGit(t *testing.T) {
	wlNeedTool(t, "git")
	d := startMount(t)
	native := wlGitWorkload(t, filepath.Join(t.TempDir(), "repo"))
	mounted := wlGitWorkload(t, d.Path("workspaces/repo"))
	wlCompare(t, "git rev-parse HEAD HEAD~1 HEAD^{tree}", native.heads, mounted.heads)
	wlCompare(t, "git ls-tree -r HEAD", native.lsTree, mounted.lsTree)
	wlCompare(t, "git config --local --list (what git init probed)", native.config, mounted.config)
	wlCompare(t, "git count-objects -v after gc", native.objects, mounted.objects)
	wlCompare(t, "git rev-parse HEAD of a local clone", native.clone, mounted.clone)
	wlCompare(t, "object files a local clone hard-links", native.cloneLinks, mounted.cloneLinks)
	t.Logf("a local clone hard-links %d object files natively, %d on the mount",
		len(strings.Fields(native.cloneLinks))/2, len(strings.Fields(mounted.cloneLinks))/2)
}

// ---------------------------------------------------------------- go

// wlGoModule is a small Go program: a main package, a package with a test,
// an embedded file, and output that depends on all of them.
var wlGoModule = map[string]string{
	"go.mod": "module example.com/wlhello\n\ngo 1.22\n",
	"main.go": `package main

import (
	_ "embed"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"example.com/wlhello/greet"
)

//go:embed data.txt
var data string

func main() {
	words := strings.Fields(data)
	sort.Strings(words)
	fmt.Println(greet.Hello("gsvfs"))
	fmt.Println(strings.Join(words, ","))
	h := fnv.New64a()
	h.Write([]byte(data))
	fmt.Printf("%x\n", h.Sum64())
	fmt.Println(greet.Fib(40))
}
`,
	"data.txt": "zeta alpha mu beta omega gamma\n",
	"greet/greet.go": `// Package greet greets.
package greet

import "fmt"

// Hello returns a greeting.
func Hello(name string) string { return fmt.Sprintf("hello, %s", name) }

// Fib returns the n-th Fibonacci number.
func Fib(n int) int {
	a, b := 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}
`,
	"greet/greet_test.go": `package greet

import "testing"

func TestHello(t *testing.T) {
	if got, want := Hello("x"), "hello, x"; got != want {
		t.Errorf("Hello: got %q, want %q", got, want)
	}
}

func TestFib(t *testing.T) {
	for n, want := range []int{0, 1, 1, 2, 3, 5, 8} {
		if got := Fib(n); got != want {
			t.Errorf("Fib(%d): got %d, want %d", n, got, want)
		}
	}
}
`,
}

// wlGoWorkload writes the module into dir and builds, vets, tests and runs
// it with the given GOCACHE; it returns the program's output and the
// sha256 of the binary. Everything is built with -trimpath, so the binary
// is the same bytes wherever it is built, and the standard library is
// compiled once per cache.
func wlGoWorkload(t *testing.T, dir, cache string) (output, sum string) {
	t.Helper()
	wlWriteFiles(t, dir, wlGoModule)
	env := []string{
		"GOFLAGS=-mod=mod -trimpath", "GOCACHE=" + cache, "GOTOOLCHAIN=local",
		"GOPROXY=off", "GOWORK=off", "CGO_ENABLED=0", "GO111MODULE=on",
	}
	wlRun(t, dir, env, "go", "build", "-o", "hello", ".")
	wlRun(t, dir, env, "go", "vet", "./...")
	if out := wlRun(t, dir, env, "go", "test", "-count=1", "./..."); !strings.Contains(out, "ok  \texample.com/wlhello/greet") {
		t.Errorf("in %s, go test ./...: got %q, want an ok line for example.com/wlhello/greet", dir, out)
	}
	output = wlRun(t, dir, nil, filepath.Join(dir, "hello"))
	// Again, from the cache: the same binary.
	wlRun(t, dir, env, "go", "build", "-o", "hello2", ".")
	sum, err := wlHashFile(filepath.Join(dir, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	sum2, err := wlHashFile(filepath.Join(dir, "hello2"))
	if err != nil {
		t.Fatal(err)
	}
	if sum != sum2 {
		t.Errorf("in %s, a second build from the cache: sha256 %s, want %s (the first build's)", dir, sum2, sum)
	}
	return output, sum
}

// TestWorkloadGoBuild builds, vets, tests and runs a Go module in
// /workspaces, with the build cache on native disk and then on the mount.
func TestWorkloadGoBuild(t *testing.T) {
	wlNeedTool(t, "go")
	d := startMount(t)
	// The native runs share the user's build cache, which the test binary
	// itself was just built with, so they take seconds; the mount gets a
	// cache of its own below.
	nativeCache := filepath.Join(t.TempDir(), "gocache")
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(out)); filepath.IsAbs(c) {
			nativeCache = c
		}
	}
	start := time.Now()
	wantOut, wantSum := wlGoWorkload(t, filepath.Join(t.TempDir(), "hello"), nativeCache)
	t.Logf("build, vet, test and run natively with GOCACHE %s: %v", nativeCache, time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(wantOut, "hello, gsvfs\n") {
		t.Fatalf("native run of the program: got %q, want it to start with %q", wantOut, "hello, gsvfs\n")
	}
	for _, tc := range []struct{ name, cache string }{
		{"cache-native", nativeCache},
		{"cache-on-mount", d.Path("workspaces/gocache")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cache != nativeCache && testing.Short() {
				t.Skip("SKIPPED in -short mode: a fresh GOCACHE on the mount compiles the standard library through FUSE (about a minute)")
			}
			start := time.Now()
			got, sum := wlGoWorkload(t, d.Path("workspaces/hello-"+tc.name), tc.cache)
			t.Logf("build, vet, test and run on the mount with GOCACHE %s: %v", tc.cache, time.Since(start).Round(time.Millisecond))
			if got != wantOut {
				t.Errorf("program built on the mount printed %q, want %q (as built natively)", got, wantOut)
			}
			if sum != wantSum {
				t.Errorf("binary built on the mount: sha256 %s, want %s (as built natively, both -trimpath)", sum, wantSum)
			}
		})
	}
}

// ---------------------------------------------------------------- tar

// wlTarExtras is a small tree of what src/net/http lacks: symlinks (relative,
// absolute, dangling), a hard link, odd permissions and owners, an empty
// file and directory, and awkward names.
func wlTarExtras(t *testing.T, dir string) {
	t.Helper()
	wlWriteFiles(t, dir, map[string]string{
		"plain.txt":         "plain\n",
		"name with space":   "space\n",
		"ünïcödé.txt":       "unicode\n",
		"sub/deeper/x.txt":  "x\n",
		"empty":             "",
		"private":           "secret\n",
		"exec.sh":           "#!/bin/sh\n",
		"readonly.txt":      "ro\n",
		"owned-by-1000.txt": "owned\n",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(dir, "private"), 0o600))
	must(os.Chmod(filepath.Join(dir, "exec.sh"), 0o755))
	must(os.Chmod(filepath.Join(dir, "readonly.txt"), 0o444))
	must(os.Mkdir(filepath.Join(dir, "emptydir"), 0o700))
	must(os.Symlink("plain.txt", filepath.Join(dir, "rel-link")))
	must(os.Symlink("../plain.txt", filepath.Join(dir, "sub/up-link")))
	must(os.Symlink("/etc/hostname", filepath.Join(dir, "abs-link")))
	must(os.Symlink("nowhere/at/all", filepath.Join(dir, "dangling")))
	must(os.Link(filepath.Join(dir, "plain.txt"), filepath.Join(dir, "hard-link")))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(dir, "owned-by-1000.txt"), 1000, 1000))
		must(os.Lchown(filepath.Join(dir, "rel-link"), 1000, 1000))
	}
}

// TestWorkloadTar extracts a tarball of src/net/http (plus a tree of
// symlinks, hard links, modes and owners) on the mount and natively; the
// two trees must be the same entry for entry, and tar --diff must find
// the extracted copy equal to the archive.
func TestWorkloadTar(t *testing.T) {
	wlNeedTool(t, "tar")
	goroot := "/usr/local/go"
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	src := filepath.Join(goroot, "src/net")
	if _, err := os.Stat(filepath.Join(src, "http")); err != nil {
		t.Skipf("SKIPPED: no Go source tree to archive: %v", err)
	}
	d := startMount(t)
	work := t.TempDir()
	wlTarExtras(t, filepath.Join(work, "extras"))
	tarball := filepath.Join(work, "tree.tar")
	wlRun(t, work, nil, "tar", "-cf", tarball, "-C", src, "http", "-C", work, "extras")
	if fi, err := os.Stat(tarball); err == nil {
		t.Logf("tarball: %d bytes", fi.Size())
	}

	extract := func(dest string) time.Duration {
		t.Helper()
		if err := os.MkdirAll(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wlRun(t, work, nil, "tar", "-xf", tarball, "-C", dest)
		took := time.Since(start)
		if out, err := wlTry(work, nil, "", "tar", "--diff", "-f", tarball, "-C", dest); err != nil {
			t.Errorf("tar --diff against %s: %v, want no differences:\n%s", dest, err, out)
		}
		return took
	}
	native := filepath.Join(work, "native")
	mounted := d.Path("workspaces/untar")
	tn := extract(native)
	tm := extract(mounted)
	t.Logf("tar -xf: native %v, mount %v", tn.Round(time.Millisecond), tm.Round(time.Millisecond))
	want := wlSnapshot(t, native)
	got := wlSnapshot(t, mounted)
	if n := strings.Count(want, "\n") + 1; n < 100 {
		t.Fatalf("native extraction has %d entries, want a real tree", n)
	}
	wlCompare(t, "the extracted tree (path, mode, owner, size, links, sha256, target, mtime)", want, got)

	// Read back through the mount into a second archive: the same names
	// in the same order of a sorted listing.
	listing := func(dir string) string {
		out := wlRun(t, work, nil, "tar", "--sort=name", "--numeric-owner", "-cvvf", filepath.Join(work, filepath.Base(dir)+"-again.tar"), "-C", dir, ".")
		return out
	}
	wlCompare(t, "tar -cvv of the extracted tree", listing(native), listing(mounted))
}

// ---------------------------------------------------------------- sqlite3

// wlSQLiteLoad is SQL inserting 2,000 rows in 20 transactions.
func wlSQLiteLoad() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, x INTEGER NOT NULL, s TEXT);\n")
	b.WriteString("CREATE INDEX t_x ON t(x);\n")
	for tx := 0; tx < 20; tx++ {
		b.WriteString("BEGIN;\n")
		for i := 0; i < 100; i++ {
			n := tx*100 + i
			fmt.Fprintf(&b, "INSERT INTO t(x, s) VALUES(%d, '%s');\n", n*7919%10007, strings.Repeat("v", n%97))
		}
		b.WriteString("COMMIT;\n")
	}
	// Some churn: updates, deletes, a VACUUM that rewrites the file.
	b.WriteString("BEGIN; UPDATE t SET x = x + 1 WHERE id % 3 = 0; DELETE FROM t WHERE id % 50 = 0; COMMIT;\n")
	b.WriteString("VACUUM;\n")
	return b.String()
}

// wlSQLiteWorkload creates a database in dir in the given journal mode,
// loads it and checks it; it returns the summary query's output.
func wlSQLiteWorkload(t *testing.T, dir, journal string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "test.db")
	mode, err := wlTry(dir, nil, "PRAGMA journal_mode="+journal+";\n", "sqlite3", "-bail", db)
	if err != nil || strings.TrimSpace(mode) != journal {
		t.Fatalf("in %s, PRAGMA journal_mode=%s: got %q (%v), want %q", dir, journal, strings.TrimSpace(mode), err, journal)
	}
	if out, err := wlTry(dir, nil, wlSQLiteLoad(), "sqlite3", "-bail", db); err != nil || out != "" {
		t.Fatalf("in %s, loading 2,000 rows: %v\n%s", dir, err, out)
	}
	return wlSQLiteCheck(t, dir, db, "", "summary query",
		"SELECT count(*), sum(x), sum(length(s)), max(id) FROM t;\nPRAGMA journal_mode;\n")
}

// wlSQLiteCheck runs PRAGMA integrity_check on db in dir, which must say
// ok (after says when, in the failure), and then the query sql, which
// must succeed (what names it); it returns the query's output.
func wlSQLiteCheck(t *testing.T, dir, db, after, what, sql string) string {
	t.Helper()
	if out, err := wlTry(dir, nil, "PRAGMA integrity_check;\n", "sqlite3", "-bail", db); err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("in %s, PRAGMA integrity_check%s: got %q (%v), want \"ok\"", dir, after, strings.TrimSpace(out), err)
	}
	out, err := wlTry(dir, nil, sql, "sqlite3", "-bail", db)
	if err != nil {
		t.Fatalf("in %s, %s: %v\n%s", dir, what, err, out)
	}
	return out
}

// TestWorkloadSQLite loads databases on the mount and natively, in
// rollback-journal and WAL mode; both must pass integrity_check and hold
// the same rows.
func TestWorkloadSQLite(t *testing.T) {
	wlNeedTool(t, "sqlite3")
	d := startMount(t)
	for _, journal := range []string{"delete", "wal"} {
		t.Run(journal, func(t *testing.T) {
			want := wlSQLiteWorkload(t, filepath.Join(t.TempDir(), "db"), journal)
			start := time.Now()
			got := wlSQLiteWorkload(t, d.Path("workspaces/sqlite-"+journal), journal)
			t.Logf("journal_mode=%s on the mount: %v", journal, time.Since(start).Round(time.Millisecond))
			if got != want {
				t.Errorf("SELECT count(*), sum(x), ... on the mount: got %q, want %q (as natively)", got, want)
			}
			if !strings.HasPrefix(want, "1960|") {
				t.Errorf("native summary %q, want 1960 rows left after the deletes", want)
			}
		})
	}
}

// wlSQLiteConcurrent runs two sqlite3 processes that each insert 200 rows
// into one database at the same time, one transaction per row, waiting
// on each other's locks; it returns the final per-writer counts.
func wlSQLiteConcurrent(t *testing.T, dir, journal string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "shared.db")
	setup := "PRAGMA journal_mode=" + journal + ";\nCREATE TABLE w(writer INTEGER, n INTEGER);\n"
	if out, err := wlTry(dir, nil, setup, "sqlite3", "-bail", db); err != nil {
		t.Fatalf("in %s, creating the shared database: %v\n%s", dir, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	results := make(chan result, 2)
	for w := 1; w <= 2; w++ {
		var b strings.Builder
		b.WriteString(".timeout 30000\n")
		for i := 0; i < 200; i++ {
			fmt.Fprintf(&b, "BEGIN IMMEDIATE; INSERT INTO w VALUES(%d, %d); COMMIT;\n", w, i)
		}
		cmd := exec.CommandContext(ctx, "sqlite3", "-bail", db)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(b.String())
		cmd.WaitDelay = 5 * time.Second
		go func() {
			out, err := cmd.CombinedOutput()
			results <- result{out, err}
		}()
	}
	for i := 0; i < 2; i++ {
		r := <-results
		if r.err != nil || len(r.out) != 0 {
			t.Errorf("in %s, a concurrent sqlite3 writer: %v\n%s", dir, r.err, r.out)
		}
	}
	return wlSQLiteCheck(t, dir, db, " after concurrent writers", "counting rows",
		"SELECT count(*) FROM w;\nSELECT writer, count(*), count(DISTINCT n) FROM w GROUP BY writer;\n")
}

// TestWorkloadSQLiteConcurrentWriters has two sqlite3 processes write one
// database on the mount at once: the record locks between them must hold,
// so no insert is lost and the file stays sound.
func TestWorkloadSQLiteConcurrentWriters(t *testing.T) {
	wlNeedTool(t, "sqlite3")
	d := startMount(t)
	const want = "400\n1|200|200\n2|200|200\n"
	for _, journal := range []string{"delete", "wal"} {
		t.Run(journal, func(t *testing.T) {
			if got := wlSQLiteConcurrent(t, filepath.Join(t.TempDir(), "db"), journal); got != want {
				t.Fatalf("natively, the concurrent writers left %q, want %q; the test itself is wrong", got, want)
			}
			start := time.Now()
			got := wlSQLiteConcurrent(t, d.Path("workspaces/concurrent-"+journal), journal)
			t.Logf("two writers, journal_mode=%s, on the mount: %v", journal, time.Since(start).Round(time.Millisecond))
			if got != want {
				t.Errorf("rows after two concurrent writers on the mount: got %q, want %q", got, want)
			}
		})
	}
}
