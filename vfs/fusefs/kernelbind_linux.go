//go:build linux

package fusefs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A kernel bind lays a host directory over its own place in the mount
// (mount --bind DIR MOUNT/PATH), so the kernel serves everything below
// PATH itself, at the disk's speed, and FUSE serves the rest. It is only
// right for a tree that is the host directory as it is (vfs.HostDirer):
// the caller decides which trees those are and says so again whenever
// that changes.

// KernelBind is a host directory the kernel serves in the mount's place.
type KernelBind struct {
	Path string // where, inside the mount: absolute and clean ("/workspaces")
	Dir  string // the host directory
}

// kernelBinds are the binds a Mount has laid over itself: path inside the
// mount -> host directory.
type kernelBinds struct {
	mu   sync.Mutex
	have map[string]string
	// gone is set once the mount is being unmounted: no bind is laid
	// after that.
	gone bool
}

// SetKernelBinds makes the binds over the mount what want says: it takes
// away the binds no longer wanted (lazily: open files keep working), lays
// the new ones, and lays again any the kernel dropped (it drops a bind
// whose mount point the tree told it to forget). It needs root. Binds it
// could not lay are reported and the tree keeps serving those places
// through FUSE.
func (m *Mount) SetKernelBinds(want []KernelBind) error {
	kb := &m.binds
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.gone {
		return nil
	}
	if kb.have == nil {
		kb.have = make(map[string]string)
	}
	wanted := make(map[string]string, len(want))
	for _, b := range want {
		wanted[b.Path] = b.Dir
	}
	present := m.bindPoints()
	var errs []error
	// Deepest first, so a bind is never taken away from under another.
	for _, p := range slices.Backward(slices.Sorted(maps.Keys(kb.have))) {
		if dir, ok := wanted[p]; ok && dir == kb.have[p] && present[m.target(p)] {
			continue
		}
		if present[m.target(p)] {
			if err := syscall.Unmount(m.target(p), syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
				errs = append(errs, fmt.Errorf("take the kernel bind off %s: %w", m.target(p), err))
				continue
			}
		}
		delete(kb.have, p)
	}
	for _, p := range slices.Sorted(maps.Keys(wanted)) {
		if _, ok := kb.have[p]; ok {
			continue
		}
		if err := bindOver(wanted[p], m.target(p)); err != nil {
			errs = append(errs, err)
			continue
		}
		kb.have[p] = wanted[p]
	}
	return errors.Join(errs...)
}

// KernelBinds lists the binds laid over the mount, in path order.
func (m *Mount) KernelBinds() []KernelBind {
	m.binds.mu.Lock()
	defer m.binds.mu.Unlock()
	var out []KernelBind
	for _, p := range slices.Sorted(maps.Keys(m.binds.have)) {
		out = append(out, KernelBind{Path: p, Dir: m.binds.have[p]})
	}
	return out
}

// target is where the bind of p lies on the host.
func (m *Mount) target(p string) string { return filepath.Join(m.Dir, p) }

// bindPoints reports which mount points below the mount exist now.
func (m *Mount) bindPoints() map[string]bool {
	points := make(map[string]bool)
	eachMount(func(point, _ string) {
		if strings.HasPrefix(point, m.Dir+"/") {
			points[point] = true
		}
	})
	return points
}

// bindOver lays dir over target. The target is reached through the mount
// itself, so this process serves its own lookups: go-fuse answers them
// from other goroutines while this one waits in mount(2).
func bindOver(dir, target string) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("kernel bind of %s: host directory %q is not absolute", target, dir)
	}
	if err := syscall.Mount(dir, target, "", syscall.MS_BIND, ""); err != nil {
		if err == syscall.EPERM {
			return fmt.Errorf("kernel bind of %s over %s: %w (it needs root)", dir, target, err)
		}
		return fmt.Errorf("kernel bind of %s over %s: %w", dir, target, err)
	}
	// As the FUSE mount is: no set-ID programs, no device nodes that
	// open devices. A bind takes the flags only when remounted.
	if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		syscall.Unmount(target, syscall.MNT_DETACH)
		return fmt.Errorf("kernel bind of %s over %s: make it nosuid,nodev: %w", dir, target, err)
	}
	return nil
}

// dropKernelBinds takes every bind off the mount, lazily, for good.
func (m *Mount) dropKernelBinds() {
	m.binds.mu.Lock()
	defer m.binds.mu.Unlock()
	m.binds.gone = true
	for _, p := range slices.Backward(slices.Sorted(maps.Keys(m.binds.have))) {
		syscall.Unmount(m.target(p), syscall.MNT_DETACH)
		delete(m.binds.have, p)
	}
}

// unmountBelow unmounts every mount below dir, deepest first, as
// umount -R does: the kernel binds of a mount must go before it can. A
// busy one stops it.
func unmountBelow(dir string) error {
	var below []string
	eachMount(func(point, _ string) {
		if strings.HasPrefix(point, dir+"/") {
			below = append(below, point)
		}
	})
	// Later mounts lie over earlier ones: undo them in reverse.
	for _, p := range slices.Backward(below) {
		if err := syscall.Unmount(p, 0); err != nil && err != syscall.EINVAL {
			if err == syscall.EBUSY {
				return fmt.Errorf("%s is busy: files on it are open or a process has its working directory there", p)
			}
			if os.IsNotExist(err) {
				continue
			}
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return nil
}
