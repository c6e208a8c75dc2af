// Command metaops measures metadata operations on one directory for
// bench/fusebench.sh: it creates and closes COUNT empty files in DIR, then
// lstats each of them, then removes each of them, and prints the wall-clock
// seconds each phase took and their total, one "phase seconds" pair a line:
//
//	create 0.123456
//	stat 0.012345
//	unlink 0.234567
//	total 0.370368
//
// Usage: metaops DIR COUNT. DIR must exist; it is left as it was found.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: metaops DIR COUNT")
		os.Exit(2)
	}
	dir := os.Args[1]
	count, err := strconv.Atoi(os.Args[2])
	if err != nil || count < 1 {
		fmt.Fprintf(os.Stderr, "metaops: bad count %q\n", os.Args[2])
		os.Exit(2)
	}
	if err := run(dir, count); err != nil {
		fmt.Fprintln(os.Stderr, "metaops:", err)
		os.Exit(1)
	}
}

// run does the three phases and prints their times.
func run(dir string, count int) error {
	names := make([]string, count)
	for i := range names {
		names[i] = filepath.Join(dir, fmt.Sprintf("f%06d", i))
	}
	phases := []struct {
		name string
		op   func(string) error
	}{
		{"create", func(name string) error {
			f, err := os.Create(name)
			if err != nil {
				return err
			}
			return f.Close()
		}},
		{"stat", func(name string) error {
			_, err := os.Lstat(name)
			return err
		}},
		{"unlink", os.Remove},
	}
	var total time.Duration
	for _, p := range phases {
		start := time.Now()
		for _, name := range names {
			if err := p.op(name); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		d := time.Since(start)
		total += d
		fmt.Printf("%s %.6f\n", p.name, d.Seconds())
	}
	fmt.Printf("total %.6f\n", total.Seconds())
	return nil
}
