package main

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// maxLogFile is the size at which a background daemon's log file is
// rotated: gsvfs.log becomes gsvfs.log.1, replacing the one before, so the
// log takes at most twice this on the disk that holds the trees, whatever
// anyone writes to /dev/log.
const maxLogFile = 8 << 20

// logFileEnv tells a daemon started in the background the log file that
// its stdout and stderr are, which it then rotates.
const logFileEnv = "GSVFS_LOG_FILE"

// logFile is where the daemon's log records go: stderr, or once capped,
// the log file that stderr was, rotated at a size.
type logFile struct {
	mu   sync.Mutex
	out  *os.File
	path string // the file out is; "" leaves it alone
	max  int64
	size int64
	// onto are the descriptors that were the log file when it was
	// capped and are moved onto each new one, so that what is written
	// to them directly (a panic's trace, the runtime's last words, a
	// library's print) goes to the current log, not to an unlinked file
	// no cap bounds.
	onto []int
}

// daemonStderr is this process's stderr, for its log. A daemon in the
// background has its stdout and stderr on the log file.
var daemonStderr = &logFile{out: os.Stderr, onto: []int{1, 2}}

// capAt makes the log file at path, which out already is, rotate at max
// bytes.
func (l *logFile) capAt(path string, max int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.path, l.max = path, max
	if fi, err := l.out.Stat(); err == nil {
		l.size = fi.Size()
	}
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path != "" && l.size > 0 && l.size+int64(len(p)) > l.max {
		l.size = 0 // a rotation that fails is tried again a file later
		if err := l.rotate(); err != nil {
			fmt.Fprintf(l.out, "gsvfs: cannot rotate the log %s: %v\n", l.path, err)
		}
	}
	n, err := l.out.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the log file to path.1 and writes on in a fresh one, onto
// which it moves the descriptors of onto. The file given at start
// (stderr) is never closed.
func (l *logFile) rotate() error {
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	for _, fd := range l.onto {
		if err := unix.Dup2(int(f.Fd()), fd); err != nil {
			fmt.Fprintf(f, "gsvfs: cannot move descriptor %d onto the log %s: %v\n", fd, l.path, err)
		}
	}
	if l.out != os.Stderr {
		l.out.Close()
	}
	l.out = f
	return nil
}
