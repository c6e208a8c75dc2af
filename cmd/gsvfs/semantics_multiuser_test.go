//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"golang.org/x/sys/unix"
)

// Several users in one directory: permission checks, and the owners and
// modes of what each makes (sticky and set-group-ID directories too), as
// on ext4.

// smMultiUserScript runs as uid 1000 in a directory prepared by
// smMultiUserSetup; each step prints its name, exit code and output.
const smMultiUserScript = `
step() { name=$1; shift; out=$("$@" 2>&1); rc=$?; printf '%s rc=%d %s\n' "$name" "$rc" "$(printf %s "$out" | tr '\n' ' ')"; }
step read-secret cat secret
step read-public cat public
step append-public sh -c 'echo x >> public'
step truncate-public sh -c ': > public'
step create-in-root-dir touch rootonly/x
step touch-022 sh -c 'umask 022; touch shared/f022'
step touch-077 sh -c 'umask 077; touch shared/f077'
step mkdir-022 sh -c 'umask 022; mkdir shared/d022'
step mkdir-077 sh -c 'umask 077; mkdir shared/d077'
step excl-0444 sh -c 'umask 222; set -C; echo obj > shared/obj && cat shared/obj'
step excl-again sh -c 'umask 222; set -C; echo obj > shared/obj'
step write-own-0444 sh -c 'echo more >> shared/obj'
step unlink-root-file rm -f shared/rootfile
step rename-root-file mv shared/rootfile shared/stolen
step chmod-root-file chmod 0777 shared/rootfile
step write-root-0666 sh -c 'echo by-1000 >> shared/rootfile'
step chown-own-file chown 0 shared/f022
step chmod-own-file chmod 0640 shared/f077
step unlink-own-file sh -c 'touch shared/mine && rm shared/mine && echo gone'
step symlink ln -s target shared/lnk
step setgid-file sh -c 'umask 022; touch sg/f'
step setgid-dir sh -c 'umask 022; mkdir sg/d'
step setgid-chmod chmod 2755 sg/f
step readdir-secret-dir ls private
`

// smMultiUserSetup prepares dir (as root) for smMultiUserScript.
func smMultiUserSetup(t *testing.T, dir string) {
	t.Helper()
	file := func(name, content string, mode uint32) {
		p := filepath.Join(dir, name)
		smMust(t, "write "+name, os.WriteFile(p, []byte(content), 0o600))
		smMust(t, "chmod "+name, unix.Chmod(p, mode))
	}
	mkdir := func(name string, mode uint32) {
		p := filepath.Join(dir, name)
		smMust(t, "mkdir "+name, os.Mkdir(p, 0o700))
		smMust(t, "chmod "+name, unix.Chmod(p, mode))
	}
	smMust(t, "chmod top", unix.Chmod(dir, 0o755))
	file("secret", "secret data\n", 0o600)
	file("public", "public data\n", 0o644)
	mkdir("rootonly", 0o755)
	mkdir("private", 0o700)
	mkdir("shared", 0o1777)
	file("shared/rootfile", "root's\n", 0o666)
	mkdir("sg", 0o2777)
	smMust(t, "chown sg", os.Chown(filepath.Join(dir, "sg"), 0, 4242))
	smMust(t, "chmod sg", unix.Chmod(filepath.Join(dir, "sg"), 0o2777))
}

// smMultiUserResults runs the script as uid 1000 and then describes, as
// root, what it left: one line per step and per resulting file.
func smMultiUserResults(t *testing.T, dir string) (steps map[string]string, files map[string]unix.Stat_t, transcript string) {
	t.Helper()
	smMultiUserSetup(t, dir)
	out := smAsOther(t, dir, smMultiUserScript)
	steps = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		steps[name] = rest
	}
	files = map[string]unix.Stat_t{}
	var b strings.Builder
	b.WriteString(out)
	for _, name := range []string{"shared/f022", "shared/f077", "shared/d022", "shared/d077", "shared/obj",
		"shared/lnk", "shared/rootfile", "shared/mine", "sg/f", "sg/d", "public", "secret", "rootonly/x"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
			fmt.Fprintf(&b, "%s: %s\n", name, smErrName(vfs.Errno(err)))
			continue
		}
		files[name] = st
		fmt.Fprintf(&b, "%s: mode %o uid %d gid %d size %d\n", name, st.Mode, st.Uid, st.Gid, st.Size)
	}
	return steps, files, b.String()
}

// TestSemMultiUser runs the same sequence as uid 1000 on a native
// directory and in the mount (daemon as root, allow_other,
// default_permissions): permission checks, ownership and modes of new
// files, sticky and set-group-ID directories must be exactly ext4's.
func TestSemMultiUser(t *testing.T) {
	d := smSharedMount(t)
	native := filepath.Join(smSharedTempDir(t), "native")
	smMust(t, "mkdir native", os.Mkdir(native, 0o755))
	mounted := smWorkdir(t, d)

	nSteps, nFiles, nText := smMultiUserResults(t, native)
	mSteps, mFiles, mText := smMultiUserResults(t, mounted)
	t.Logf("native transcript:\n%s", nText)
	if nText != mText {
		t.Errorf("results differ between native ext4 and the mount.\nnative:\n%s\nmount:\n%s", nText, mText)
	}

	// What ext4 gives, spelled out, checked on both.
	wantSteps := map[string]string{
		"read-secret":        "rc=1 cat: secret: Permission denied",
		"read-public":        "rc=0 public data",
		"append-public":      "Permission denied",
		"truncate-public":    "Permission denied",
		"create-in-root-dir": "Permission denied",
		"touch-022":          "rc=0",
		"excl-0444":          "rc=0 obj",
		"excl-again":         "File exists",
		"write-own-0444":     "Permission denied",
		"unlink-root-file":   "Operation not permitted",
		"rename-root-file":   "Operation not permitted",
		"chmod-root-file":    "Operation not permitted",
		"write-root-0666":    "rc=0",
		"chown-own-file":     "Operation not permitted",
		"chmod-own-file":     "rc=0",
		"unlink-own-file":    "rc=0 gone",
		"readdir-secret-dir": "Permission denied",
	}
	type fileWant struct {
		mode     uint32
		uid, gid uint32
	}
	wantFiles := map[string]fileWant{
		"shared/f022":     {unix.S_IFREG | 0o644, smOther, smOther},
		"shared/f077":     {unix.S_IFREG | 0o640, smOther, smOther},
		"shared/d022":     {unix.S_IFDIR | 0o755, smOther, smOther},
		"shared/d077":     {unix.S_IFDIR | 0o700, smOther, smOther},
		"shared/obj":      {unix.S_IFREG | 0o444, smOther, smOther},
		"shared/lnk":      {unix.S_IFLNK | 0o777, smOther, smOther},
		"shared/rootfile": {unix.S_IFREG | 0o666, 0, 0},
		"sg/f":            {unix.S_IFREG | 0o755, smOther, 4242}, // S_ISGID dropped: 1000 is not in group 4242
		"sg/d":            {unix.S_IFDIR | 0o2755, smOther, 4242},
	}
	for _, side := range []struct {
		name  string
		steps map[string]string
		files map[string]unix.Stat_t
	}{{"native", nSteps, nFiles}, {"mount", mSteps, mFiles}} {
		for step, want := range wantSteps {
			if got := side.steps[step]; !strings.Contains(got, want) {
				t.Errorf("%s: step %s: got %q, want it to contain %q", side.name, step, got, want)
			}
		}
		for name, want := range wantFiles {
			st, ok := side.files[name]
			if !ok || st.Mode != want.mode || st.Uid != want.uid || st.Gid != want.gid {
				t.Errorf("%s: %s: got mode %o %d:%d (exists %v), want mode %o %d:%d",
					side.name, name, st.Mode, st.Uid, st.Gid, ok, want.mode, want.uid, want.gid)
			}
		}
	}
	// The state directory holds the same ownership and modes as the
	// mount shows.
	for name, st := range mFiles {
		var host unix.Stat_t
		p := smHost(t, d, filepath.Join(mounted, name))
		if err := unix.Lstat(p, &host); err != nil {
			t.Errorf("host %s: %v", name, err)
			continue
		}
		if host.Mode != st.Mode || host.Uid != st.Uid || host.Gid != st.Gid || host.Size != st.Size {
			t.Errorf("host %s: got mode %o %d:%d size %d, want as via the mount: mode %o %d:%d size %d",
				name, host.Mode, host.Uid, host.Gid, host.Size, st.Mode, st.Uid, st.Gid, st.Size)
		}
	}
}
