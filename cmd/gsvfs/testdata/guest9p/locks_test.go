package guest9p

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// lockChildEnv, when set to a file path, makes the test binary act as the
// second lock owner instead of running tests (see TestMain).
const lockChildEnv = "GSVFS_GUEST_LOCK_CHILD"

// The range the child write-locks, and the flock(2) it holds on PATH.flock.
const (
	childLockStart = 10
	childLockLen   = 100
)

// lockChild takes a write lock on [childLockStart, +childLockLen) of path
// and flock(LOCK_EX) on path+".flock", says "locked" on stdout, releases
// both when it reads "unlock" on stdin (and says "unlocked"), and exits at
// EOF. Its exit status says what failed.
func lockChild(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: childLockStart, Len: childLockLen}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		fmt.Println("F_SETLK:", err)
		return 3
	}
	g, err := os.OpenFile(path+".flock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Println("open flock file:", err)
		return 2
	}
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Println("flock:", err)
		return 4
	}
	fmt.Println("locked")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "unlock" {
			continue
		}
		lk.Type = syscall.F_UNLCK
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
			fmt.Println("F_UNLCK:", err)
			return 5
		}
		if err := syscall.Flock(int(g.Fd()), syscall.LOCK_UN); err != nil {
			fmt.Println("LOCK_UN:", err)
			return 6
		}
		fmt.Println("unlocked")
	}
	return 0
}

// diodFlock is why diod fails byte-range and same-process lock checks.
const diodFlock = "it implements Tlock with flock(2) on its own descriptor per fid: whole files, owned by the fid rather than by proc_id"

// TestFcntlLocks checks POSIX record locks between two processes of the
// guest: the test and a re-executed copy of its binary (lockChild). The
// kernel client checks its own lock table first and only then sends Tlock
// (F_SETLK, F_SETLKW, and flock(2), which v9fs turns into a whole-file
// POSIX lock) or, when nothing in the guest conflicts, Tgetlock (F_GETLK).
func TestFcntlLocks(t *testing.T) {
	t.Parallel()
	d := freshDir(t)
	path := filepath.Join(d, "locked")
	writeFile(t, path, "0123456789abcdefghijklmnopqrstuvwxyz")

	exe, err := os.Executable()
	must(t, "executable", err)
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), lockChildEnv+"="+path)
	stdin, err := child.StdinPipe()
	must(t, "stdin pipe", err)
	stdout, err := child.StdoutPipe()
	must(t, "stdout pipe", err)
	child.Stderr = os.Stderr
	must(t, "start lock child", child.Start())
	defer func() {
		stdin.Close()
		child.Wait()
	}()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("lock child said %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("lock child did not say %q within 30s", want)
		}
	}
	expect("locked")
	pid := int32(child.Process.Pid)

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, "open", err)
	defer f.Close()
	setlk := func(f *os.File, cmd int, typ int16, start, n int64) error {
		lk := syscall.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
		return syscall.FcntlFlock(f.Fd(), cmd, &lk)
	}

	setlkCases := []struct {
		name       string
		typ        int16
		start, len int64
		want       syscall.Errno
		diodBug    string
	}{
		{"write lock on the child's range", syscall.F_WRLCK, childLockStart, childLockLen, syscall.EAGAIN, ""},
		{"read lock overlapping its end", syscall.F_RDLCK, childLockStart + childLockLen - 1, 5, syscall.EAGAIN, ""},
		{"write lock to EOF overlapping its start", syscall.F_WRLCK, 0, 0, syscall.EAGAIN, ""},
		{"write lock before it", syscall.F_WRLCK, 0, childLockStart, 0, diodFlock},
		{"write lock after it", syscall.F_WRLCK, childLockStart + childLockLen, 10, 0, diodFlock},
	}
	for _, c := range setlkCases {
		t.Run("F_SETLK "+c.name, func(t *testing.T) {
			if c.diodBug != "" {
				knownBug(t, "diod", c.diodBug)
			}
			wantErrno(t, "F_SETLK", setlk(f, syscall.F_SETLK, c.typ, c.start, c.len), c.want)
		})
	}
	must(t, "unlock all", setlk(f, syscall.F_SETLK, syscall.F_UNLCK, 0, 0))

	held := syscall.Flock_t{Type: syscall.F_WRLCK, Start: childLockStart, Len: childLockLen, Pid: pid}
	getlkCases := []struct {
		name       string
		start, len int64
		want       syscall.Flock_t
		diodBug    string
	}{
		{"whole file", 0, 0, held, ""},
		{"inside the child's range", childLockStart + 5, 1, held, ""},
		// Nothing in the guest conflicts, so the kernel asks the server,
		// with a Tgetlock whose type is already F_UNLCK (rewritten by
		// the local test): the answer must be "unlocked", not an error.
		{"range nobody holds", childLockStart + childLockLen, 50,
			syscall.Flock_t{Type: syscall.F_UNLCK, Start: childLockStart + childLockLen, Len: 50},
			"it answers a Tgetlock of type F_UNLCK with EINVAL"},
	}
	for _, c := range getlkCases {
		t.Run("F_GETLK "+c.name, func(t *testing.T) {
			if c.diodBug != "" {
				knownBug(t, "diod", c.diodBug)
			}
			lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: c.start, Len: c.len}
			must(t, "F_GETLK", syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk))
			got := syscall.Flock_t{Type: lk.Type, Start: lk.Start, Len: lk.Len, Pid: lk.Pid}
			if got.Type == syscall.F_UNLCK {
				got.Pid = 0 // unspecified when nothing conflicts
			}
			if got != c.want {
				t.Errorf("got type %d start %d len %d pid %d, want type %d start %d len %d pid %d",
					got.Type, got.Start, got.Len, got.Pid, c.want.Type, c.want.Start, c.want.Len, c.want.Pid)
			}
		})
	}

	t.Run("a second descriptor of this process", func(t *testing.T) {
		knownBug(t, "diod", diodFlock)
		f2, err := os.OpenFile(path, os.O_RDWR, 0)
		must(t, "open", err)
		defer f2.Close()
		const at = childLockStart + childLockLen + 100
		must(t, "F_SETLK on the first", setlk(f, syscall.F_SETLK, syscall.F_WRLCK, at, 10))
		// POSIX locks belong to the process, as on ext4.
		wantErrno(t, "F_SETLK on the second", setlk(f2, syscall.F_SETLK, syscall.F_WRLCK, at, 10), 0)
		must(t, "unlock", setlk(f, syscall.F_SETLK, syscall.F_UNLCK, 0, 0))
	})

	g, err := os.OpenFile(path+".flock", os.O_RDWR, 0)
	must(t, "open flock file", err)
	defer g.Close()
	wantErrno(t, "flock LOCK_EX|LOCK_NB held by the child", syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK)

	// An F_SETLKW already waiting when the child unlocks. The guest wakes
	// it from its own lock table before the child's Tlock(F_UNLCK) is
	// sent, so the server may see the waiter's Tlock (with the BLOCK flag)
	// first. It must hold that Tlock until the unlock arrives: answered
	// BLOCKED, v9fs would ask again only after its lock timeout (30 s by
	// default). diod answers BLOCKED, so with diod the waiter starts only
	// after the release, which the server must then grant at once.
	got := make(chan error, 1)
	waitFirst := os.Getenv(serverEnv) != "diod"
	if waitFirst {
		go func() { got <- setlk(f, syscall.F_SETLKW, syscall.F_WRLCK, 0, 0) }()
		waitSetlkw(t)
	}
	if _, err := io.WriteString(stdin, "unlock\n"); err != nil {
		t.Fatal(err)
	}
	expect("unlocked")
	if !waitFirst {
		go func() { got <- setlk(f, syscall.F_SETLKW, syscall.F_WRLCK, 0, 0) }()
	}
	select {
	case err := <-got:
		wantErrno(t, "F_SETLKW after the child released", err, 0)
	case <-time.After(10 * time.Second):
		t.Fatal("F_SETLKW still waiting 10s after the child released (the server answered BLOCKED instead of holding the request?)")
	}
	wantErrno(t, "flock LOCK_EX|LOCK_NB after the child released", syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), 0)
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Errorf("lock child: %v", err)
	}
}

// waitSetlkw waits until a thread of this process sleeps in fcntl
// F_SETLKW (/proc/self/task/TID/syscall names the call a sleeping thread
// is in, its number and arguments): the waiter is then blocked in the
// guest, which is what the unlock must find.
func waitSetlkw(t *testing.T) {
	t.Helper()
	want := fmt.Sprintf("%d", syscall.SYS_FCNTL)
	cmd := fmt.Sprintf("0x%x", syscall.F_SETLKW)
	testenv.WaitFor(t, 10*time.Second, "a thread blocked in F_SETLKW", func() bool {
		tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			if f := strings.Fields(string(b)); len(f) > 2 && f[0] == want && f[2] == cmd {
				return true
			}
		}
		return false
	})
}
