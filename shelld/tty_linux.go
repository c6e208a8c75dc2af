//go:build linux

package shelld

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Whether a terminal waits for input is read from the terminal and from
// /proc, on demand (never polled):
//
//  1. its foreground process group: TIOCGPGRP on the master side;
//  2. no input pending: the slave side polled without waiting (the poll
//     also moves what was just written into the line discipline, so a
//     line written a moment ago counts as pending, not as read);
//  3. a process of that group (its leader first, then the others, found
//     in /proc) sleeping in a system call that reads the terminal: read
//     or readv on it; select, pselect6, poll or ppoll with it among the
//     descriptors watched for reading (the sets are read from
//     /proc/PID/mem); epoll_wait on an epoll set holding it
//     (/proc/PID/fdinfo). A descriptor is the terminal when
//     /proc/PID/fd/N links to its /dev/pts/N or to /dev/tty. When a
//     process cannot be inspected (a setuid program), sleeping in
//     n_tty_read or wait_woken (/proc/PID/wchan) with the terminal as
//     its standard input counts.
//
// It uses the syscall package only. Elsewhere than on Linux a terminal
// is never found waiting (tty_other.go).

func inspect(tty *os.File, pts string, deep bool) probe {
	var p probe
	fg, err := tcgetpgrp(tty)
	if err != nil || fg <= 0 {
		return p
	}
	p.fg = fg
	if pending, err := inputPending(pts); err == nil && pending {
		return p
	}
	if ok, one := readsTerminal(fg, pts); ok {
		p.waiting, p.reader, p.readByte = true, fg, one
		return p
	}
	if busy(fg) || !deep {
		return p // the leader computes or writes: not blocked on input
	}
	// Not its leader: another process of the group (the leader may be a
	// script or make waiting for its child).
	for _, pid := range members.of(fg) {
		if pid == fg {
			continue
		}
		if ok, one := readsTerminal(pid, pts); ok {
			p.waiting, p.reader, p.readByte = true, pid, one
			return p
		}
	}
	return p
}

// inputPending reports whether the terminal holds input its reader has not
// read: a whole line in canonical mode, any byte in raw mode.
func inputPending(pts string) (bool, error) {
	fd, err := syscall.Open(pts, syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer syscall.Close(fd)
	type pollFd struct {
		fd      int32
		events  int16
		revents int16
	}
	pfd := pollFd{fd: int32(fd), events: pollIn}
	var ts syscall.Timespec
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return false, errno
		}
		return pfd.revents&pollIn != 0, nil
	}
}

const (
	pollIn     = 0x1
	pollRdNorm = 0x40
	epollIn    = 0x1
)

// Numbers of the system calls that read or wait to read, per architecture.
type readCalls struct {
	read, pread, readv, preadv, preadv2 int
	poll, ppoll, sel, pselect           int
	epollWait, epollPwait, epollPwait2  int
}

var sysnums = map[string]readCalls{
	"amd64": {read: 0, pread: 17, readv: 19, preadv: 295, preadv2: 327,
		poll: 7, ppoll: 271, sel: 23, pselect: 270,
		epollWait: 232, epollPwait: 281, epollPwait2: 441},
	"arm64": {read: 63, pread: 67, readv: 65, preadv: 69, preadv2: 286,
		poll: -1, ppoll: 73, sel: -1, pselect: 72,
		epollWait: -1, epollPwait: 22, epollPwait2: 441},
}

// readsTerminal reports whether a thread of process pid sleeps reading the
// terminal pts, and whether with read(2) of one byte.
func readsTerminal(pid int, pts string) (ok, oneByte bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return false, false
	}
	if len(tasks) > 64 {
		tasks = tasks[:64]
	}
	for _, t := range tasks {
		if ok, one := taskReads(dir, dir+"/task/"+t.Name(), pts); ok {
			return true, one
		}
	}
	return false, false
}

func taskReads(proc, task, pts string) (ok, oneByte bool) {
	stat, err := os.ReadFile(task + "/stat")
	if err != nil {
		return false, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false, false // not sleeping interruptibly
	}
	isTTY := func(fd int) bool {
		dest, err := os.Readlink(proc + "/fd/" + strconv.Itoa(fd))
		if err != nil {
			// Not ours to inspect: its standard input and what the
			// kernel says it sleeps in will do.
			return fd == 0 && ttyWchan(task)
		}
		return dest == pts || dest == "/dev/tty"
	}
	sc, err := os.ReadFile(task + "/syscall")
	if err != nil {
		return isTTY(0) && ttyWchan(task), false
	}
	f := strings.Fields(string(sc))
	if len(f) < 7 {
		return false, false // running, or not in a system call
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 {
		return false, false
	}
	var arg [6]uint64
	for k := range arg {
		arg[k], _ = strconv.ParseUint(strings.TrimPrefix(f[k+1], "0x"), 16, 64)
	}
	n, known := sysnums[runtime.GOARCH]
	if !known {
		return isTTY(0) && ttyWchan(task), false
	}
	switch nr {
	case n.read, n.pread, n.readv, n.preadv, n.preadv2:
		return isTTY(int(arg[0])), nr == n.read && arg[2] == 1
	case n.poll, n.ppoll:
		for _, fd := range pollFds(proc, arg[0], arg[1]) {
			if isTTY(fd) {
				return true, false
			}
		}
	case n.sel, n.pselect:
		for _, fd := range selectFds(proc, arg[0], arg[1]) {
			if isTTY(fd) {
				return true, false
			}
		}
	case n.epollWait, n.epollPwait, n.epollPwait2:
		for _, fd := range epollFds(proc, int(arg[0])) {
			if isTTY(fd) {
				return true, false
			}
		}
	}
	return false, false
}

func ttyWchan(task string) bool {
	w, err := os.ReadFile(task + "/wchan")
	return err == nil && (string(w) == "n_tty_read" || string(w) == "wait_woken")
}

func readMem(proc string, addr uint64, n int) []byte {
	if addr == 0 || n <= 0 || addr > 1<<62 {
		return nil
	}
	f, err := os.Open(proc + "/mem")
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	if k, _ := f.ReadAt(b, int64(addr)); k < n {
		return nil
	}
	return b
}

// pollFds lists the descriptors a poll(2) on the array at addr watches
// for input.
func pollFds(proc string, addr, nfds uint64) []int {
	nfds = min(nfds, 256)
	b := readMem(proc, addr, int(nfds)*8)
	var fds []int
	for k := 0; k+8 <= len(b); k += 8 {
		fd := int32(binary.NativeEndian.Uint32(b[k:]))
		events := binary.NativeEndian.Uint16(b[k+4:])
		if fd >= 0 && events&(pollIn|pollRdNorm) != 0 {
			fds = append(fds, int(fd))
		}
	}
	return fds
}

// selectFds lists the descriptors in the read set of a select(2).
func selectFds(proc string, nfds, addr uint64) []int {
	nfds = min(nfds, 1024)
	b := readMem(proc, addr, int(nfds+63)/64*8)
	var fds []int
	for fd := 0; fd < int(nfds) && fd/8 < len(b); fd++ {
		// fd_set is an array of longs; in a little-endian long the bit
		// for fd is bit fd%8 of byte fd/8.
		w := fd / 64 * 8
		bit := fd % 64
		var v uint64
		if w+8 <= len(b) {
			v = binary.NativeEndian.Uint64(b[w:])
		}
		if v&(1<<bit) != 0 {
			fds = append(fds, fd)
		}
	}
	return fds
}

// epollFds lists the descriptors an epoll set watches for input, from
// /proc/PID/fdinfo/EPFD ("tfd: N events: HEX ...").
func epollFds(proc string, epfd int) []int {
	f, err := os.Open(proc + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return nil
	}
	defer f.Close()
	var fds []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 4 || w[0] != "tfd:" || w[2] != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(w[1])
		ev, err2 := strconv.ParseUint(w[3], 16, 32)
		if err1 == nil && err2 == nil && ev&epollIn != 0 {
			fds = append(fds, fd)
		}
	}
	return fds
}

// busy reports whether process pid runs or sleeps uninterruptibly (on the
// disk, say).
func busy(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // gone: look at the others
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'R' || stat[i+2] == 'D')
}

// members remembers the processes of the last process groups scanned for
// a short while: a scan of /proc costs a few milliseconds, and Status may
// be asked often while a script or make runs in front. A process that
// joins the group is seen at the next scan.
var members = groupCache{ttl: 200 * time.Millisecond, groups: map[int]groupScan{}}

type groupCache struct {
	ttl    time.Duration
	mu     sync.Mutex
	groups map[int]groupScan
}

type groupScan struct {
	at   time.Time
	pids []int
}

func (c *groupCache) of(pgrp int) []int {
	now := time.Now()
	c.mu.Lock()
	g, ok := c.groups[pgrp]
	c.mu.Unlock()
	if ok && now.Sub(g.at) < c.ttl {
		return g.pids
	}
	pids := groupPids(pgrp)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, g := range c.groups {
		if now.Sub(g.at) >= c.ttl {
			delete(c.groups, k)
		}
	}
	c.groups[pgrp] = groupScan{at: now, pids: pids}
	return pids
}
