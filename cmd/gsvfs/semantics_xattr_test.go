//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"golang.org/x/sys/unix"
)

// Extended attributes through the mount, and the SELinux label the tree
// does not keep.

// TestSemXattrs sets, gets, lists and removes user.* attributes through the
// mount.
func TestSemXattrs(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	probe := filepath.Join(d.Root, "workspaces", "xattr-probe")
	smMust(t, "probe file", os.WriteFile(probe, nil, 0o644))
	if err := unix.Setxattr(probe, "user.probe", []byte("1"), 0); err != nil {
		if vfs.Errno(err) == syscall.ENOTSUP {
			t.Skipf("SKIPPED: the state directory's filesystem has no user xattrs (%v)", err)
		}
		t.Fatalf("setxattr on the host: %v", err)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}

	for _, kind := range []string{"file", "dir"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(dir, kind)
			if kind == "file" {
				smMust(t, "create", os.WriteFile(p, []byte("x"), 0o644))
			} else {
				smMust(t, "mkdir", os.Mkdir(p, 0o755))
			}
			big := bytes.Repeat([]byte("v"), 3000)
			smMust(t, "setxattr", unix.Setxattr(p, "user.one", []byte("value 1"), 0))
			smMust(t, "setxattr big", unix.Setxattr(p, "user.big", big, 0))
			smMust(t, "setxattr empty", unix.Setxattr(p, "user.empty", nil, 0))
			get := func(name string) ([]byte, error) {
				size, err := unix.Getxattr(p, name, nil)
				if err != nil {
					return nil, err
				}
				buf := make([]byte, size)
				n, err := unix.Getxattr(p, name, buf)
				return buf[:max(n, 0)], err
			}
			if v, err := get("user.one"); err != nil || string(v) != "value 1" {
				t.Errorf("getxattr user.one: got %q, %v, want %q", v, err, "value 1")
			}
			if v, err := get("user.big"); err != nil || !bytes.Equal(v, big) {
				t.Errorf("getxattr user.big: got %d bytes, %v, want %d", len(v), err, len(big))
			}
			if v, err := get("user.empty"); err != nil || len(v) != 0 {
				t.Errorf("getxattr user.empty: got %q, %v, want empty", v, err)
			}
			small := make([]byte, 3)
			_, err := unix.Getxattr(p, "user.one", small)
			smWantErrno(t, "getxattr into a too small buffer", err, syscall.ERANGE)
			size, err := unix.Listxattr(p, nil)
			smMust(t, "listxattr size", err)
			buf := make([]byte, size)
			n, err := unix.Listxattr(p, buf)
			smMust(t, "listxattr", err)
			var names []string
			for _, s := range strings.Split(string(buf[:n]), "\x00") {
				if strings.HasPrefix(s, "user.") {
					names = append(names, s)
				}
			}
			slices.Sort(names)
			if want := []string{"user.big", "user.empty", "user.one"}; !slices.Equal(names, want) {
				t.Errorf("listxattr: got %v, want %v", names, want)
			}
			smWantErrno(t, "setxattr XATTR_CREATE on an existing name", unix.Setxattr(p, "user.one", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST)
			smWantErrno(t, "setxattr XATTR_REPLACE on a missing name", unix.Setxattr(p, "user.none", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA)
			smMust(t, "setxattr XATTR_REPLACE", unix.Setxattr(p, "user.one", []byte("value 2"), unix.XATTR_REPLACE))
			hostVal := make([]byte, 64)
			hn, err := unix.Getxattr(smHost(t, d, p), "user.one", hostVal)
			if err != nil || string(hostVal[:max(hn, 0)]) != "value 2" {
				t.Errorf("getxattr on the host: got %q, %v, want %q", hostVal[:max(hn, 0)], err, "value 2")
			}
			smMust(t, "removexattr", unix.Removexattr(p, "user.one"))
			_, err = get("user.one")
			smWantErrno(t, "getxattr after removexattr", err, syscall.ENODATA)
			smWantErrno(t, "removexattr of a missing name", unix.Removexattr(p, "user.one"), syscall.ENODATA)
			_, err = get("user.never")
			smWantErrno(t, "getxattr of a name never set", err, syscall.ENODATA)
		})
	}
}

// TestSemSelinuxLabelUnsupported: a file without an SELinux label answers
// its getxattr with EOPNOTSUPP, as a filesystem without labels does, so
// that ls stops asking for every file it lists; a label a file has on the
// disk still reads through the mount, and ls -l lists as before. Needs a
// host without SELinux (with it, the kernel answers labels itself).
func TestSemSelinuxLabelUnsupported(t *testing.T) {
	if lsm, _ := os.ReadFile("/sys/kernel/security/lsm"); strings.Contains(string(lsm), "selinux") {
		t.Skip("SKIPPED: this host runs SELinux, whose kernel answers labels without asking the mount")
	}
	d := startMount(t)
	dir := smWorkdir(t, d)
	plain := filepath.Join(dir, "plain")
	labelled := filepath.Join(dir, "labelled")
	smMust(t, "create", os.WriteFile(plain, []byte("x"), 0o644))
	smMust(t, "create", os.WriteFile(labelled, []byte("x"), 0o644))
	label := []byte("system_u:object_r:gsvfs_t:s0\x00")
	if err := unix.Lsetxattr(smHost(t, d, labelled), selinuxName, label, 0); err != nil {
		t.Skipf("SKIPPED: cannot label a file on the host (SELinux enforcing, or no security xattrs here): %v", err)
	}
	buf := make([]byte, 256)
	_, err := unix.Lgetxattr(plain, selinuxName, buf)
	smWantErrno(t, "getxattr of a label a file lacks", err, syscall.EOPNOTSUPP)
	n, err := unix.Lgetxattr(labelled, selinuxName, buf)
	if err != nil || !bytes.Equal(buf[:max(n, 0)], label) {
		t.Errorf("getxattr of a file's label: got %q, %v, want %q", buf[:max(n, 0)], err, label)
	}
	_, err = unix.Lgetxattr(plain, "user.never", buf)
	smWantErrno(t, "getxattr of another missing name", err, syscall.ENODATA)
	out, err := exec.Command("ls", "-l", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "plain") || !strings.Contains(string(out), "labelled") {
		t.Errorf("ls -l: %v\n%s", err, out)
	}
}

const selinuxName = "security.selinux"
