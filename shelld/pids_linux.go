//go:build linux

package shelld

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sessionPids lists the live (not zombie) processes whose terminal
// session or process group is sid.
func sessionPids(sid int) []int {
	want := strconv.Itoa(sid)
	return livePids(func(pgrp, session string) bool { return pgrp == want || session == want })
}

// groupPids lists the live processes of process group pgid.
func groupPids(pgid int) []int {
	want := strconv.Itoa(pgid)
	return livePids(func(pgrp, _ string) bool { return pgrp == want })
}

// livePids lists, from /proc, the processes that are not zombies and
// whose process group and session ids (as text) match. It is called on
// every rmdir and while a session's waiting state is looked up, so it
// reads each /proc/PID/stat with one open, read and close into a
// reused buffer, and parses it in place.
func livePids(match func(pgrp, session string) bool) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	var pids []int
	var buf [512]byte
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat := readSmall("/proc/"+name+"/stat", buf[:])
		// "pid (comm) state ppid pgrp session ...": comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := fieldsN(stat[i+1:], 4)
		if len(f) == 4 && f[0] != "Z" && match(f[2], f[3]) {
			if pid, err := strconv.Atoi(name); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// readSmall reads the start of a small file into buf: a /proc file's
// first read is all of it, when buf is big enough.
func readSmall(path string, buf []byte) []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	if err != nil || n < 0 {
		return nil
	}
	return buf[:n]
}

// fieldsN returns the first n space-separated fields of b.
func fieldsN(b []byte, n int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		b = bytes.TrimLeft(b, " ")
		if len(b) == 0 {
			break
		}
		end := bytes.IndexByte(b, ' ')
		if end < 0 {
			end = len(b)
		}
		out = append(out, string(b[:end]))
		b = b[end:]
	}
	return out
}
