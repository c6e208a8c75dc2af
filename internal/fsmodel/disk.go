package fsmodel

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PathDisk is a Disk at a path of the disk the file lives on.
type PathDisk string

// WriteAt writes p at off in place.
func (d PathDisk) WriteAt(p []byte, off int64) error {
	f, err := os.OpenFile(string(d), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(p, off)
	return errors.Join(err, f.Close())
}

// Truncate truncates the file to size.
func (d PathDisk) Truncate(size int64) error { return os.Truncate(string(d), size) }

// Replace writes content to a new file beside it and renames it over.
func (d PathDisk) Replace(content []byte) error {
	tmp := filepath.Join(filepath.Dir(string(d)), "."+filepath.Base(string(d))+".new")
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, string(d))
}

// AskDisk is a Disk in another place: each change is asked of whoever
// runs Answer on Dir (a directory both reach: the checker in a virtual
// machine and its host, through the 9P mount under test). A request is
// a file req-N, written aside and renamed into place, whose first line
// says the change ("write OFF", "truncate SIZE", "replace") and whose
// rest is the data; the answer is a file ack-N, empty or an error.
type AskDisk struct {
	Dir string
	n   int
}

// askBound bounds the wait for an answer.
const askBound = 30 * time.Second

// WriteAt asks for p written at off.
func (d *AskDisk) WriteAt(p []byte, off int64) error {
	return d.ask(fmt.Sprintf("write %d", off), p)
}

// Truncate asks for the file truncated to size.
func (d *AskDisk) Truncate(size int64) error { return d.ask(fmt.Sprintf("truncate %d", size), nil) }

// Replace asks for a file of content renamed over the file.
func (d *AskDisk) Replace(content []byte) error { return d.ask("replace", content) }

func (d *AskDisk) ask(change string, data []byte) error {
	d.n++
	req := filepath.Join(d.Dir, fmt.Sprint("req-", d.n))
	if err := os.WriteFile(req+".new", append([]byte(change+"\n"), data...), 0o644); err != nil {
		return err
	}
	if err := os.Rename(req+".new", req); err != nil {
		return err
	}
	ack := filepath.Join(d.Dir, fmt.Sprint("ack-", d.n))
	deadline := time.Now().Add(askBound)
	for {
		b, err := os.ReadFile(ack)
		if err == nil {
			os.Remove(ack)
			if len(b) > 0 {
				return errors.New(string(b))
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to %q in %s within %v", change, d.Dir, askBound)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Answer makes the changes an AskDisk asks in dir, on disk, until stop
// is closed; it returns the first error of its own (not of a change,
// which goes back to the asker).
func Answer(dir string, disk Disk, stop <-chan struct{}) error {
	for n := 1; ; {
		req := filepath.Join(dir, fmt.Sprint("req-", n))
		b, err := os.ReadFile(req)
		if err != nil {
			select {
			case <-stop:
				return nil
			case <-time.After(2 * time.Millisecond):
			}
			continue
		}
		if err := os.Remove(req); err != nil {
			return err
		}
		var msg string
		if err := apply(disk, b); err != nil {
			msg = err.Error()
		}
		ack := filepath.Join(dir, fmt.Sprint("ack-", n))
		if err := os.WriteFile(ack+".new", []byte(msg), 0o644); err != nil {
			return err
		}
		if err := os.Rename(ack+".new", ack); err != nil {
			return err
		}
		n++
	}
}

// apply makes the change of request b on disk.
func apply(disk Disk, b []byte) error {
	line, data, _ := bytes.Cut(b, []byte("\n"))
	verb, arg, _ := strings.Cut(string(line), " ")
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil && verb != "replace" {
		return fmt.Errorf("request %q: %v", line, err)
	}
	switch verb {
	case "write":
		return disk.WriteAt(data, n)
	case "truncate":
		return disk.Truncate(n)
	case "replace":
		return disk.Replace(data)
	}
	return fmt.Errorf("request %q: no such change", line)
}
