//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"golang.org/x/sys/unix"
)

// Paths: one deeper than PATH_MAX, and the ways a path might leave the
// tree.

// TestSemLongPath builds a tree deeper than PATH_MAX (4096 bytes) through
// the mount, one *at call at a time, and writes and reads a file at the
// bottom.
func TestSemLongPath(t *testing.T) {
	d := startMount(t)
	dir := smWorkdir(t, d)
	name := strings.Repeat("d", 200)
	const depth = 24 // 24 * 201 bytes > 4096
	openChain := func(top string, create bool) int {
		t.Helper()
		fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		smMust(t, "open top", err)
		for i := range depth {
			if create {
				if err := unix.Mkdirat(fd, name, 0o755); err != nil {
					t.Fatalf("mkdirat at depth %d (%d bytes): %v", i, i*(len(name)+1), err)
				}
			}
			next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				t.Fatalf("openat at depth %d (%d bytes): %v", i, i*(len(name)+1), err)
			}
			fd = next
		}
		return fd
	}
	fd := openChain(dir, true)
	defer unix.Close(fd)
	data := []byte("at the bottom of a very long path\n")
	f, err := unix.Openat(fd, "leaf", unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	smMust(t, "create leaf", err)
	if n, err := unix.Write(f, data); err != nil || n != len(data) {
		t.Errorf("write leaf: got (%d, %v), want (%d, nil)", n, err, len(data))
	}
	if err := unix.Close(f); err != nil {
		t.Fatalf("close of the leaf: %v", err)
	}
	readAt := func(dirfd int) []byte {
		t.Helper()
		f, err := unix.Openat(dirfd, "leaf", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		smMust(t, "open leaf", err)
		defer unix.Close(f)
		buf := make([]byte, 100)
		n, err := unix.Read(f, buf)
		smMust(t, "read leaf", err)
		return buf[:n]
	}
	if got := readAt(fd); !bytes.Equal(got, data) {
		t.Errorf("leaf through the mount: got %q, want %q", got, data)
	}
	var st unix.Stat_t
	smMust(t, "fstatat leaf", unix.Fstatat(fd, "leaf", &st, 0))
	if st.Size != int64(len(data)) {
		t.Errorf("fstatat leaf: got size %d, want %d", st.Size, len(data))
	}
	// The same file on the host, walked the same way.
	hfd := openChain(smHost(t, d, dir), false)
	defer unix.Close(hfd)
	if got := readAt(hfd); !bytes.Equal(got, data) {
		t.Errorf("leaf on the host: got %q, want %q", got, data)
	}
	// Reopened from scratch through the mount (fresh lookups).
	fd2 := openChain(dir, false)
	defer unix.Close(fd2)
	if got := readAt(fd2); !bytes.Equal(got, data) {
		t.Errorf("leaf through a second walk: got %q, want %q", got, data)
	}
	if total := len(dir) + depth*(len(name)+1) + len("/leaf"); total <= 4096 {
		t.Fatalf("the path is only %d bytes; want more than 4096", total)
	}
}

// TestSemEscapes checks that the daemon itself never reaches outside the
// state directory: symlinks planted there are served as symlinks (any
// resolution happens in the client's namespace, by the client's kernel),
// and operations the kernel does not resolve client-side — on the link
// itself, or on a file or directory the kernel already holds while its
// name is swapped for a symlink on the host — act inside the state
// directory only.
func TestSemEscapes(t *testing.T) {
	d := startMount(t)
	ws := filepath.Join(d.Root, "workspaces")
	mws := d.Path("workspaces")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	smMust(t, "write outside", os.WriteFile(secret, []byte("outside secret\n"), 0o644))
	smMust(t, "xattr outside", unix.Setxattr(secret, "user.secret", []byte("outside xattr"), 0))
	old := time.Unix(1000000000, 0)
	smMust(t, "chtimes outside", os.Chtimes(secret, old, old))
	smMust(t, "chtimes outside dir", os.Chtimes(outside, old, old))

	// outsideIntact fails if anything outside the state directory changed.
	outsideIntact := func(t *testing.T, step string) {
		t.Helper()
		entries, err := os.ReadDir(outside)
		smMust(t, "readdir outside", err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"secret"}) {
			t.Errorf("%s: the outside directory now holds %v, want only [secret]", step, names)
		}
		st := smLstat(t, secret)
		if st.Mode != unix.S_IFREG|0o644 || st.Uid != 0 || st.Gid != 0 || st.Size != 15 ||
			st.Mtim.Sec != old.Unix() || st.Nlink != 1 {
			t.Errorf("%s: the outside file changed: mode %o %d:%d size %d mtime %d nlink %d",
				step, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Sec, st.Nlink)
		}
		if got := string(smReadFile(t, secret)); got != "outside secret\n" {
			t.Errorf("%s: the outside file's content changed to %q", step, got)
		}
		buf := make([]byte, 100)
		if n, err := unix.Getxattr(secret, "user.secret", buf); err != nil || string(buf[:n]) != "outside xattr" {
			t.Errorf("%s: the outside file's xattr changed: %q, %v", step, buf[:max(n, 0)], err)
		}
		size, _ := unix.Listxattr(secret, nil)
		lbuf := make([]byte, max(size, 1))
		n, _ := unix.Listxattr(secret, lbuf)
		if got := strings.Trim(string(lbuf[:max(n, 0)]), "\x00"); got != "user.secret" {
			t.Errorf("%s: the outside file's xattrs are now %q, want only user.secret", step, got)
		}
		var dst unix.Stat_t
		smMust(t, "lstat outside", unix.Lstat(outside, &dst))
		if dst.Mtim.Sec != old.Unix() {
			t.Errorf("%s: the outside directory was modified (mtime %d)", step, dst.Mtim.Sec)
		}
	}

	t.Run("planted symlinks are served verbatim", func(t *testing.T) {
		links := map[string]string{
			"evil":     outside,
			"evilfile": secret,
			"up":       "../../..",
			"upetc":    "../../../../../../../../etc",
			"dangling": "/nonexistent-gsvfs-target",
		}
		for name, target := range links {
			smMust(t, "plant "+name, os.Symlink(target, filepath.Join(ws, name)))
		}
		entries, err := os.ReadDir(mws)
		smMust(t, "readdir", err)
		types := map[string]os.FileMode{}
		for _, e := range entries {
			types[e.Name()] = e.Type()
		}
		for name, target := range links {
			p := filepath.Join(mws, name)
			fi, err := os.Lstat(p)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("lstat %s through the mount: got %v, %v, want a symlink", name, fi, err)
			}
			if got, err := os.Readlink(p); err != nil || got != target {
				t.Errorf("readlink %s through the mount: got %q, %v, want %q", name, got, err, target)
			}
			if types[name] != os.ModeSymlink {
				t.Errorf("readdir type of %s: got %v, want a symlink", name, types[name])
			}
		}
		// Following an absolute link is the client's kernel resolving it in
		// the client's namespace: it reads the host file, as expected.
		if got, err := os.ReadFile(filepath.Join(mws, "evilfile")); err != nil || string(got) != "outside secret\n" {
			t.Errorf("reading through an absolute link (client-side resolution): got %q, %v", got, err)
		}
		outsideIntact(t, "after planting")
	})

	t.Run("operations on a link itself stay on the link", func(t *testing.T) {
		link := filepath.Join(mws, "evilfile")
		smMust(t, "lchown", os.Lchown(link, 1000, 1000))
		if st := smLstat(t, filepath.Join(ws, "evilfile")); st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("lchown through the mount: the link on the host is owned by %d:%d, want 1000:1000", st.Uid, st.Gid)
		}
		ts := []unix.Timespec{unix.NsecToTimespec(5e17), unix.NsecToTimespec(5e17)}
		smMust(t, "lutimes", unix.UtimesNanoAt(unix.AT_FDCWD, link, ts, unix.AT_SYMLINK_NOFOLLOW))
		// trusted.* may be set on a symlink by root; user.* may not.
		unix.Lsetxattr(link, "trusted.gsvfs", []byte("x"), 0)
		smWantErrno(t, "lsetxattr user.* on a symlink", unix.Lsetxattr(link, "user.gsvfs", []byte("x"), 0), syscall.EPERM)
		unix.Lremovexattr(link, "user.secret")
		unix.Lremovexattr(filepath.Join(mws, "evil"), "user.secret")
		smMust(t, "hard link to the symlink", unix.Linkat(unix.AT_FDCWD, link, unix.AT_FDCWD, filepath.Join(mws, "hard"), 0))
		if st := smLstat(t, filepath.Join(ws, "hard")); st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("a hard link to a planted symlink: got mode %o on the host, want a symlink", st.Mode)
		}
		smMust(t, "rename link", os.Rename(filepath.Join(mws, "hard"), filepath.Join(mws, "hard2")))
		smMust(t, "remove link", os.Remove(filepath.Join(mws, "hard2")))
		smMust(t, "remove evil", os.Remove(filepath.Join(mws, "evil")))
		smMust(t, "remove evilfile", os.Remove(link))
		outsideIntact(t, "after operating on the links")
	})

	t.Run("directory swapped for a symlink after lookup", func(t *testing.T) {
		sub := filepath.Join(mws, "sub")
		smMust(t, "mkdir", os.Mkdir(sub, 0o755))
		smMust(t, "victim", os.WriteFile(filepath.Join(sub, "victim"), []byte("v"), 0o644))
		dfd, err := unix.Open(sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		smMust(t, "open sub", err)
		defer unix.Close(dfd)
		// Another program swaps the directory for a link to the outside.
		smMust(t, "move sub away", os.Rename(filepath.Join(ws, "sub"), filepath.Join(ws, "sub.moved")))
		smMust(t, "plant link", os.Symlink(outside, filepath.Join(ws, "sub")))

		if fd, err := unix.Openat(dfd, "new", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
			unix.Write(fd, []byte("new"))
			unix.Close(fd)
		}
		unix.Mkdirat(dfd, "newdir", 0o755)
		unix.Symlinkat("t", dfd, "newlink")
		unix.Unlinkat(dfd, "victim", 0)
		smWantErrno(t, "unlinkat of the outside file's name in the held directory", unix.Unlinkat(dfd, "secret", 0), syscall.ENOENT)
		unix.Renameat(dfd, "new", dfd, "renamed")
		if fd, err := unix.Openat(dfd, "secret", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			buf := make([]byte, 100)
			n, _ := unix.Read(fd, buf)
			unix.Close(fd)
			t.Errorf("openat(held dir, secret) read %q: the daemon resolved the planted link", buf[:max(n, 0)])
		}
		got := smNames(smGetdents(t, dfd, 4096, -1))
		slices.Sort(got)
		if slices.Contains(got, "secret") {
			t.Errorf("listing the held directory shows %v: the outside directory's entries", got)
		}
		outsideIntact(t, "after operations in a directory swapped for a link")
		// What the calls did, they did in the real directory.
		for _, name := range []string{"renamed", "newdir", "newlink"} {
			if _, err := os.Lstat(filepath.Join(ws, "sub.moved", name)); err != nil {
				t.Errorf("%s in the moved directory on the host: %v", name, err)
			}
		}
	})

	t.Run("file swapped for a symlink after lookup", func(t *testing.T) {
		f := filepath.Join(mws, "f")
		smMust(t, "write", os.WriteFile(f, []byte("inside\n"), 0o644))
		pfd, err := unix.Open(f, unix.O_PATH|unix.O_CLOEXEC, 0)
		smMust(t, "open O_PATH", err)
		defer unix.Close(pfd)
		ofd, err := unix.Open(f, unix.O_RDWR|unix.O_CLOEXEC, 0)
		smMust(t, "open", err)
		defer unix.Close(ofd)
		smMust(t, "move f away", os.Rename(filepath.Join(ws, "f"), filepath.Join(ws, "f.moved")))
		smMust(t, "plant link", os.Symlink(secret, filepath.Join(ws, "f")))

		proc := fmt.Sprintf("/proc/self/fd/%d", pfd)
		// The results are logged: any error is fine, any effect outside is not.
		try := func(what string, err error) { t.Logf("%s on the held file: %s", what, smErrName(vfs.Errno(err))) }
		buf := make([]byte, 100)
		fd, err := unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		try("reopen for reading", err)
		if err == nil {
			n, _ := unix.Read(fd, buf)
			unix.Close(fd)
			if strings.Contains(string(buf[:max(n, 0)]), "outside") {
				t.Errorf("reopening the held file read %q: the daemon followed the planted link", buf[:n])
			}
		}
		fd, err = unix.Open(proc, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
		try("reopen with O_TRUNC", err)
		if err == nil {
			unix.Write(fd, []byte("pwned"))
			unix.Close(fd)
		}
		try("truncate", unix.Truncate(proc, 0))
		try("chmod", unix.Chmod(proc, 0o777))
		try("chown", unix.Fchownat(pfd, "", 1000, 1000, unix.AT_EMPTY_PATH))
		try("utimes", unix.UtimesNanoAt(unix.AT_FDCWD, proc, nil, 0))
		try("setxattr", unix.Setxattr(proc, "user.new", []byte("x"), 0))
		try("removexattr", unix.Removexattr(proc, "user.secret"))
		n, err := unix.Getxattr(proc, "user.secret", buf)
		try("getxattr", err)
		if err == nil {
			t.Errorf("getxattr on the held file returned the outside file's %q", buf[:n])
		}
		try("linkat", unix.Linkat(pfd, "", unix.AT_FDCWD, filepath.Join(mws, "f.hard"), unix.AT_EMPTY_PATH))
		// Calls on an open descriptor act on the file it opened.
		unix.Pwrite(ofd, []byte("still inside\n"), 0)
		unix.Ftruncate(ofd, 13)
		unix.Fchmod(ofd, 0o600)
		outsideIntact(t, "after operations on a file swapped for a link")
		if got := string(smReadFile(t, filepath.Join(ws, "f.moved"))); got != "still inside\n" {
			t.Errorf("writes on the open descriptor: the moved file holds %q, want %q", got, "still inside\n")
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(ws, "f.hard"), &st) == nil {
			var sst unix.Stat_t
			unix.Stat(secret, &sst)
			if st.Ino == sst.Ino {
				t.Errorf("linkat of the held file linked the outside file into the state directory")
			}
		}
	})
}
