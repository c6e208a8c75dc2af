package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBound bounds one command a test runs: long enough for a build or a
// test suite on a loaded machine, short of the test binary's own timeout,
// so that a hung command fails the test with its name.
const runBound = 5 * time.Minute

// Run runs a command in dir, failing the test if it fails or outlives
// its bound, and returns its combined output.
func Run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// Build builds the command in the package directory pkg (with the race
// detector if race) into a fresh temporary directory, for a TestMain that
// runs it: it returns the binary's path and a function that removes it.
// Its output goes to stderr, as go test's does.
func Build(pkg string, race bool) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "gsvfs-bin-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, filepath.Base(mustAbs(pkg)))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = pkg
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("building %s: %w", pkg, err)
	}
	return bin, remove, nil
}

// mustAbs is p made absolute, or p itself if the working directory is
// gone (the name is then only a file name).
func mustAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
