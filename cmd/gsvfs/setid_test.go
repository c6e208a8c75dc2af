//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// TestSetIDBitsLikeExt4 writes, truncates and O_TRUNC-opens set-ID files
// as an ordinary user and as root, through the mount and on native disk,
// and wants the same modes after: a user's change drops set-user-ID (and
// set-group-ID with group execute); root's keeps them. gsvfs clears them
// itself (FUSE_HANDLE_KILLPRIV_V2), so this guards that duty.
func TestSetIDBitsLikeExt4(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	native := testenv.SharedDir(t, "gsvfs-setid-", 0o777|os.ModeSticky) // as /tmp is
	want := setIDModes(t, native)
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"passthrough", nil}, {"no-passthrough", []string{"--no-passthrough"}}} {
		t.Run(mode.name, func(t *testing.T) {
			base := testenv.SharedDir(t, "gsvfs-setid-mnt-", 0o755)
			d := mountAt(t, filepath.Join(base, "state"), filepath.Join(base, "mnt"), mode.flags...)
			t.Cleanup(func() { d.stop(t) })
			got := setIDModes(t, d.Path("workspaces"))
			for name, w := range want {
				if got[name] != w {
					t.Errorf("%s: mode %#o on the mount, %#o on ext4", name, got[name], w)
				}
			}
		})
	}
}

// setIDModes runs each change on a fresh set-ID file in dir and returns
// the resulting modes.
func setIDModes(t *testing.T, dir string) map[string]uint32 {
	t.Helper()
	changes := map[string]string{
		"append":   `printf x >> "$1"`,
		"truncate": `truncate -s 1 "$1"`,
		"otrunc":   `: > "$1"`,
	}
	modes := map[string]uint32{}
	for _, who := range []uint32{0, 1000} {
		for change, script := range changes {
			for _, perm := range []uint32{0o4755, 0o2775, 0o2755, 0o6777} {
				name := fmt.Sprintf("%s-uid%d-%o", change, who, perm)
				p := filepath.Join(dir, name)
				asUID(t, 1000, fmt.Sprintf(`printf abc > "$1" && chmod %o "$1"`, perm), p)
				asUID(t, who, script, p)
				var st syscall.Stat_t
				if err := syscall.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
				modes[name] = st.Mode & 0o7777
			}
		}
	}
	return modes
}

func asUID(t *testing.T, uid uint32, script, arg string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script, "sh", arg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %s %s: %v\n%s", uid, script, arg, err, out)
	}
}

// TestCreateSetIDLikeExt4 creates files with set-ID modes as an ordinary
// user (open with O_CREAT, mkdir), in a plain shared directory and in a
// set-group-ID one of another group, through the mount and on native
// disk, and wants the same modes: the chown that gives a new file to its
// creator must not clear what the creator's own open keeps.
func TestCreateSetIDLikeExt4(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as another user")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skipf("SKIPPED: perl makes the files with open(2)'s own mode: %v", err)
	}
	want := createSetIDModes(t, smSharedTempDir(t))
	got := createSetIDModes(t, smSharedMount(t).Path("workspaces"))
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: mode %#o on the mount, %#o on ext4", name, got[name], w)
		}
	}
}

// createSetIDModes makes set-ID files and directories as uid 1000 in a
// plain directory and in a set-group-ID directory of group 0, under dir,
// and returns their modes.
func createSetIDModes(t *testing.T, dir string) map[string]uint32 {
	t.Helper()
	modes := map[string]uint32{}
	for sub, perm := range map[string]uint32{"plain": 0o1777, "sgid": 0o2777} {
		d := filepath.Join(dir, sub)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		chmodRaw(t, d, perm) // os.Chmod would not set the raw bits
		for _, mode := range []uint32{0o4755, 0o2755, 0o6755, 0o2745, 0o755} {
			name := fmt.Sprintf("%s/file-%o", sub, mode)
			asUID(t, 1000, fmt.Sprintf(`umask 022; perl -MFcntl -e 'sysopen(F, $ARGV[0], O_CREAT|O_WRONLY, %#o) or die "$!"' "$1"`, mode), filepath.Join(dir, name))
			modes[name] = statMode(t, filepath.Join(dir, name))
		}
		name := sub + "/dir"
		asUID(t, 1000, `umask 022; mkdir -m 2755 "$1"`, filepath.Join(dir, name))
		modes[name] = statMode(t, filepath.Join(dir, name))
	}
	return modes
}

func chmodRaw(t *testing.T, p string, mode uint32) {
	t.Helper()
	if err := syscall.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func statMode(t *testing.T, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}
