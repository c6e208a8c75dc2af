package fusefs

import (
	"bytes"
	"os"
	"strconv"
)

// threadGroup is the process a thread belongs to (its Tgid), or the
// thread itself when /proc cannot say (it is gone).
func threadGroup(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	_, rest, ok := bytes.Cut(b, []byte("\nTgid:"))
	if !ok {
		return tid
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	tgid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil {
		return tid
	}
	return tgid
}
