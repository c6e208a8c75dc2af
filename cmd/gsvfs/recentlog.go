package main

import (
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/shelld"
)

// maxLogLines is how many of the daemon's log lines /sys/log keeps.
const maxLogLines = 5000

// recentLog keeps the daemon's last log lines for /sys/log: a stream
// whose head is cut at a line's start once more lines than maxLogLines
// were written. slog writes each record in one call, one line.
type recentLog struct {
	log *shelld.Log

	mu     sync.Mutex
	starts []int64 // the offsets at which the kept lines start
}

// daemonLog is this process's recent log.
var daemonLog = &recentLog{log: shelld.NewLog(16<<20, time.Now)}

func (r *recentLog) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, end, _, _ := r.log.Stat()
	r.starts = append(r.starts, end)
	if over := len(r.starts) - maxLogLines; over > 0 {
		r.log.Trim(r.starts[over])
		r.starts = append(r.starts[:0], r.starts[over:]...)
	}
	return r.log.Write(p)
}
