//go:build linux

package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fsType is what /proc/self/mountinfo calls a gsvfs mount.
const fsType = "fuse.gsvfs"

// Prepare checks that dir can take a new mount, clearing a dead gsvfs
// mount left by a daemon that was killed (its mount point answers
// ENOTCONN). It returns an error a person can act on.
func Prepare(dir string) error {
	if typ, ok := mountedAt(dir); ok {
		if typ != fsType || !dead(dir) {
			return fmt.Errorf("mount point %s is already mounted (%s); run gsvfs umount %s first", dir, typ, dir)
		}
		if err := detach(dir, true); err != nil {
			return fmt.Errorf("mount point %s is a dead gsvfs mount and could not be cleared: %w", dir, err)
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mount point %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("mount point %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("mount point %s is not a directory", dir)
	}
	return checkDevFuse()
}

// checkDevFuse says why /dev/fuse cannot be used, before go-fuse and
// fusermount3 fail with less helpful words.
func checkDevFuse() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no /dev/fuse: load the fuse module, or give the container /dev/fuse")
	case errors.Is(err, os.ErrPermission):
		return errors.New("cannot open /dev/fuse: permission denied; it must be readable and writable by you (Debian makes it mode 0666)")
	case err != nil:
		return fmt.Errorf("cannot open /dev/fuse: %w", err)
	}
	f.Close()
	return nil
}

// dead reports whether the FUSE mount at dir has lost its daemon. statfs
// asks the daemon every time; stat may be answered from the kernel's
// attribute cache for a while after the daemon died.
func dead(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == syscall.ENOTCONN
}

// Unmount detaches the gsvfs mount at dir; the daemon serving it then
// exits. It refuses a directory that is not a gsvfs mount.
func Unmount(dir string) error {
	typ, ok := mountedAt(dir)
	if !ok {
		return fmt.Errorf("%s is not a mount point", dir)
	}
	if typ != fsType {
		return fmt.Errorf("%s is a %s mount, not gsvfs", dir, typ)
	}
	if os.Geteuid() != 0 {
		return detach(dir, false)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// A busy mount is tried again for a moment: the daemon's own check of
	// its kernel binds holds the mount while it runs, and may lay a bind
	// again between the binds' unmount and the mount's.
	deadline := time.Now().Add(busyGrace)
	for {
		err := unmountTree(abs)
		if !errors.Is(err, errBusy) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(busyGrace / 40)
	}
}

// busyGrace is how long Unmount keeps trying a busy mount. A process
// with a file open there keeps it busy for longer, and is told so.
const busyGrace = 2 * time.Second

// errBusy is what a busy mount's error wraps.
var errBusy = errors.New("files on it are open or a process has its working directory there")

// busy is the error for the busy mount at dir.
func busy(dir string) error { return fmt.Errorf("%s is busy: %w", dir, errBusy) }

// unmountTree unmounts, as root, the mount at dir and the kernel binds
// laid over it (gsvfs mount --kernel-binds), which hold it busy until
// they go.
func unmountTree(dir string) error {
	if err := unmountBelow(dir); err != nil {
		return err
	}
	return detach(dir, false)
}

// Detach unmounts dir lazily: the mount leaves the namespace at once and
// goes away when its last open file closes.
func Detach(dir string) error { return detach(dir, true) }

// detach unmounts dir: directly as root, else through fusermount3. lazy
// detaches even a busy or dead mount.
func detach(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		if err := syscall.Unmount(dir, flags); err != nil {
			if err == syscall.EBUSY {
				return busy(dir)
			}
			return err
		}
		return nil
	}
	args := []string{"-u", dir}
	if lazy {
		args = []string{"-uz", dir}
	}
	out, err := exec.Command("fusermount3", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fusermount3 %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountedAt reports the filesystem type mounted at dir, if any.
func mountedAt(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	typ, found := "", false
	eachMount(func(mi mountLine) {
		if mi.point == abs {
			typ, found = mi.fstype, true // the last one stacked wins
		}
	})
	return typ, found
}

// Mounts lists the mount points of the gsvfs FUSE mounts this process
// sees, in the order they were made.
func Mounts() []string {
	var points []string
	eachMount(func(mi mountLine) {
		if mi.fstype == fsType {
			points = append(points, mi.point)
		}
	})
	return points
}

// MountID is the id of the gsvfs mount stacked last at dir in this
// process's mount namespace, 0 if there is none.
func MountID(dir string) uint64 {
	var id uint64
	eachMount(func(mi mountLine) {
		if mi.point == dir && mi.fstype == fsType {
			id = mi.id
		}
	})
	return id
}

// HasMount reports whether the mount of id is in this process's mount
// namespace.
func HasMount(id uint64) bool {
	found := false
	eachMount(func(mi mountLine) { found = found || mi.id == id })
	return found
}

// mountLine is one line of /proc/self/mountinfo.
type mountLine struct {
	id, parent uint64 // the mount's id and its parent's, as statx's STATX_MNT_ID
	point      string
	fstype     string
	source     string // device and directory of its root: "8:1 /srv/x"
}

// eachMount calls fn for every line of /proc/self/mountinfo (none where
// there is no such file), in the file's order: a mount after its parent
// and after those it lies over.
func eachMount(fn func(mountLine)) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		id, err1 := strconv.ParseUint(fields[0], 10, 64)
		parent, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				fn(mountLine{id: id, parent: parent, point: unescapeMount(fields[4]), fstype: fields[i+1], source: fields[2] + " " + fields[3]})
				break
			}
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
