//go:build linux

package main

import (
	"bufio"
	le "encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// Locks taken through the mount are the kernel's locks on the backing
// file in the state directory, so they exclude host processes working on
// the disk path, and the other way round, each kind with its own
// semantics. The parties are lock agents: child processes that run lock
// calls one at a time as the test tells them.

// lockAgentScript reads commands on stdin and answers each with one line:
//
//	open PATH                  -> fd N
//	close FD                   -> ok
//	set FD KIND TYPE START LEN -> ok | EAGAIN | ...   (F_SETLK, flock LOCK_NB)
//	wait FD KIND TYPE START LEN                       (F_SETLKW, flock)
//	intr FD KIND TYPE START LEN -> EINTR | ...        (wait, with SIGALRM every 50 ms)
//	get FD KIND TYPE START LEN -> TYPE START LEN PID  (F_GETLK)
//	read FD N                  -> the first N bytes (pread)
//
// KIND is posix, ofd or flock; TYPE r, w or u. The SIGALRM handler raises
// only while the call runs, so a tick can only interrupt the call itself.
const lockAgentScript = `
import errno, fcntl, os, resource, signal, struct, sys
_, most = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (most, most))
FMT = "hhqqi4x"
types = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK, "u": fcntl.F_UNLCK}
names = {v: k for k, v in types.items()}
class Interrupted(Exception): pass
calling = False
def tick(sig, frame):
    if calling: raise Interrupted()
signal.signal(signal.SIGALRM, tick)
def lock(fd, kind, typ, start, n, wait):
    if kind == "flock":
        how = {"r": fcntl.LOCK_SH, "w": fcntl.LOCK_EX, "u": fcntl.LOCK_UN}[typ]
        fcntl.flock(fd, how if wait else how | fcntl.LOCK_NB)
        return
    cmd = {"posix": (fcntl.F_SETLK, fcntl.F_SETLKW), "ofd": (fcntl.F_OFD_SETLK, fcntl.F_OFD_SETLKW)}[kind][wait]
    fcntl.fcntl(fd, cmd, struct.pack(FMT, types[typ], 0, start, n, 0))
for line in sys.stdin:
    w = line.split()
    try:
        if w[0] == "open":
            print("fd", os.open(w[1], os.O_RDWR))
        elif w[0] == "read":
            print(os.pread(int(w[1]), int(w[2]), 0).decode())
        elif w[0] == "close":
            os.close(int(w[1])); print("ok")
        elif w[0] == "get":
            cmd = {"posix": fcntl.F_GETLK, "ofd": fcntl.F_OFD_GETLK}[w[2]]
            t, _, s, n, pid = struct.unpack(FMT, fcntl.fcntl(int(w[1]), cmd, struct.pack(FMT, types[w[3]], 0, int(w[4]), int(w[5]), 0)))
            print(names[t], s, n, pid if t != fcntl.F_UNLCK else 0)
        elif w[0] == "intr":
            signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
            try:
                calling = True
                lock(int(w[1]), w[2], w[3], int(w[4]), int(w[5]), True)
                print("ok")
            except Interrupted:
                print("EINTR")
            finally:
                calling = False
                signal.setitimer(signal.ITIMER_REAL, 0, 0)
        else:
            lock(int(w[1]), w[2], w[3], int(w[4]), int(w[5]), w[0] == "wait")
            print("ok")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.stdout.flush()
`

// lockAgent is one running agent process.
type lockAgent struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  chan string
	name string
}

// newLockAgent starts an agent; it is killed when the test ends.
func newLockAgent(t *testing.T, name string) *lockAgent {
	t.Helper()
	return newLockAgentAs(t, name, nil)
}

// newLockAgentAs starts an agent as the user cred names (nil: this
// process's), with a python3 of the system's for another user, who may
// not reach this one's; it is killed when the test ends.
func newLockAgentAs(t *testing.T, name string, cred *syscall.Credential) *lockAgent {
	t.Helper()
	py, err := exec.LookPath("python3")
	if cred != nil {
		py, err = systemCommand("python3")
	}
	if err != nil {
		t.Skipf("SKIPPED: the lock tests drive python3, which is not installed: %v", err)
	}
	a := &lockAgent{t: t, cmd: exec.Command(py, "-c", lockAgentScript), out: make(chan string, 4), name: name}
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	a.cmd.Stderr = os.Stderr
	if a.in, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.out <- sc.Text()
		}
		close(a.out)
	}()
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	})
	return a
}

// systemCommand finds name in the system's own directories of commands.
func systemCommand(name string) (string, error) {
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// send gives the agent a command without waiting for its answer.
func (a *lockAgent) send(format string, args ...any) {
	a.t.Helper()
	if _, err := fmt.Fprintf(a.in, format+"\n", args...); err != nil {
		a.t.Fatalf("%s: %v", a.name, err)
	}
}

// answer is the agent's answer to its last command. A lock call that
// never returns fails the test rather than hanging it.
func (a *lockAgent) answer() string {
	a.t.Helper()
	select {
	case s, ok := <-a.out:
		if !ok {
			a.t.Fatalf("%s exited", a.name)
		}
		return s
	case <-time.After(procBound):
		a.t.Fatalf("%s did not answer within %v", a.name, procBound)
	}
	return ""
}

// do sends a command and returns the answer.
func (a *lockAgent) do(format string, args ...any) string {
	a.t.Helper()
	a.send(format, args...)
	return a.answer()
}

// must runs a command whose answer must be want.
func (a *lockAgent) must(want, format string, args ...any) {
	a.t.Helper()
	if got := a.do(format, args...); got != want {
		a.t.Fatalf("%s: %s: got %q, want %q", a.name, fmt.Sprintf(format, args...), got, want)
	}
}

// open opens path in the agent and returns the descriptor.
func (a *lockAgent) open(path string) int {
	a.t.Helper()
	got := a.do("open %s", path)
	n, err := strconv.Atoi(strings.TrimPrefix(got, "fd "))
	if err != nil {
		a.t.Fatalf("%s: open %s: %s", a.name, path, got)
	}
	return n
}

// lockFile makes workspaces/NAME and returns its path on the mount and
// on the disk.
func lockFile(t *testing.T, d *daemon, name string) (mnt, disk string) {
	t.Helper()
	mnt = d.Path("workspaces/" + name)
	if err := os.WriteFile(mnt, []byte(strings.Repeat("x", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	return mnt, filepath.Join(d.Root, "workspaces", name)
}

// Each kind of lock taken through the mount excludes the same kind taken
// on the disk path by a host process, in both directions, and the lock is
// free to the other side once let go.
func TestLocksCrossMountAndDisk(t *testing.T) {
	d := startMount(t)
	for _, kind := range []string{"posix", "ofd", "flock"} {
		for _, dir := range []string{"mount->disk", "disk->mount"} {
			t.Run(kind+" "+dir, func(t *testing.T) {
				mnt, disk := lockFile(t, d, "cross-"+kind+"-"+dir[:4])
				holdAt, tryAt := mnt, disk
				if dir == "disk->mount" {
					holdAt, tryAt = disk, mnt
				}
				holder, other := newLockAgent(t, "holder"), newLockAgent(t, "other")
				hfd, ofd := holder.open(holdAt), other.open(tryAt)
				holder.must("ok", "set %d %s w 0 0", hfd, kind)
				other.must("EAGAIN", "set %d %s r 0 0", ofd, kind)
				other.must("EAGAIN", "set %d %s w 0 0", ofd, kind)
				holder.must("ok", "set %d %s u 0 0", hfd, kind)
				other.must("ok", "set %d %s w 0 0", ofd, kind)
				holder.must("EAGAIN", "set %d %s r 0 0", hfd, kind)
			})
		}
	}
	t.Run("byte ranges", func(t *testing.T) {
		mnt, disk := lockFile(t, d, "ranges")
		m, h := newLockAgent(t, "mount"), newLockAgent(t, "host")
		mfd, hfd := m.open(mnt), h.open(disk)
		m.must("ok", "set %d posix w 10 100", mfd)
		h.must("ok", "set %d posix w 0 10", hfd)
		h.must("ok", "set %d posix w 110 10", hfd)
		h.must("EAGAIN", "set %d posix r 109 1", hfd)
		m.must("ok", "set %d posix r 10 100", mfd) // relocked to read: shared now
		h.must("ok", "set %d posix r 50 10", hfd)
		h.must("EAGAIN", "set %d posix w 50 10", hfd)
		m.must("ok", "set %d posix u 40 30", mfd) // a hole in the middle
		h.must("ok", "set %d posix u 0 0", hfd)
		h.must("ok", "set %d posix w 40 30", hfd)
		h.must("EAGAIN", "set %d posix w 39 1", hfd)
	})
}

// POSIX locks through the mount belong to the process, as on a local
// disk: two processes exclude each other, two descriptors of one process
// share its locks, and closing any descriptor of the file drops them all.
// OFD locks and flock belong to the open file.
func TestLocksPerProcessAndPerOpen(t *testing.T) {
	d := startMount(t)
	mnt, disk := lockFile(t, d, "owners")
	a, b, host := newLockAgent(t, "a"), newLockAgent(t, "b"), newLockAgent(t, "host")
	a1, a2, bfd, hfd := a.open(mnt), a.open(mnt), b.open(mnt), host.open(disk)

	a.must("ok", "set %d posix w 0 0", a1)
	b.must("EAGAIN", "set %d posix r 0 0", bfd)
	a.must("ok", "set %d posix w 0 0", a2) // the same process: its own lock
	a.must("ok", "set %d posix u 100 0", a2)
	host.must("ok", "set %d posix w 100 0", hfd) // unlocked through the other descriptor
	host.must("EAGAIN", "set %d posix w 0 1", hfd)
	host.must("ok", "set %d posix u 0 0", hfd)

	a3 := a.open(mnt)
	a.must("ok", "close %d", a3) // any close drops the process's locks
	b.must("ok", "set %d posix w 0 0", bfd)
	host.must("EAGAIN", "set %d posix w 0 0", hfd)
	b.must("ok", "set %d posix u 0 0", bfd)

	for _, kind := range []string{"ofd", "flock"} {
		a.must("ok", "set %d %s w 0 0", a1, kind)
		a.must("EAGAIN", "set %d %s w 0 0", a2, kind) // another open file, even in one process
		a.must("ok", "close %d", a2)
		host.must("EAGAIN", "set %d %s w 0 0", hfd, kind) // a close of another open keeps it
		a.must("ok", "close %d", a1)                      // the open file's last close drops it
		host.must("ok", "wait %d %s w 0 0", hfd, kind)
		host.must("ok", "set %d %s u 0 0", hfd, kind)
		a1, a2 = a.open(mnt), a.open(mnt)
	}
}

// The locks of a process killed with SIGKILL go with it.
func TestLocksGoWithTheirProcess(t *testing.T) {
	d := startMount(t)
	for _, kind := range []string{"posix", "ofd", "flock"} {
		t.Run(kind, func(t *testing.T) {
			mnt, disk := lockFile(t, d, "death-"+kind)
			victim, host := newLockAgent(t, "victim"), newLockAgent(t, "host")
			vfd, hfd := victim.open(mnt), host.open(disk)
			victim.must("ok", "set %d %s w 0 0", vfd, kind)
			host.must("EAGAIN", "set %d %s w 0 0", hfd, kind)
			victim.cmd.Process.Signal(syscall.SIGKILL)
			victim.cmd.Wait()
			// The OFD and flock locks go when the kernel releases the open
			// file, which may come just after the process is reaped.
			host.must("ok", "wait %d %s w 0 0", hfd, kind)
		})
	}
}

// F_GETLK through the mount reports the lock in the way: a host process's
// or another mount user's, with its range and process.
func TestLocksGetlk(t *testing.T) {
	d := startMount(t)
	mnt, disk := lockFile(t, d, "getlk")
	host, a, b := newLockAgent(t, "host"), newLockAgent(t, "a"), newLockAgent(t, "b")
	hfd, afd, bfd := host.open(disk), a.open(mnt), b.open(mnt)
	host.must("ok", "set %d posix w 10 100", hfd)
	a.must(fmt.Sprintf("w 10 100 %d", host.cmd.Process.Pid), "get %d posix w 0 0", afd)
	a.must("u 110 10 0", "get %d posix w 110 10", afd)
	host.must("ok", "set %d posix u 0 0", hfd)

	a.must("ok", "set %d posix r 0 50", afd)
	b.must(fmt.Sprintf("r 0 50 %d", a.cmd.Process.Pid), "get %d posix w 20 0", bfd)
	b.must("u 20 10 0", "get %d posix r 20 10", bfd)
	host.must(fmt.Sprintf("r 0 50 %d", -1), "get %d ofd w 0 0", hfd) // OFD locks name no process
}

// F_SETLKW through the mount waits for the holder, and a signal ends the
// wait with EINTR without taking the lock.
func TestLocksWaitAndInterrupt(t *testing.T) {
	d := startMount(t)
	for _, kind := range []string{"posix", "ofd", "flock"} {
		t.Run(kind, func(t *testing.T) {
			mnt, disk := lockFile(t, d, "wait-"+kind)
			host, waiter, check := newLockAgent(t, "host"), newLockAgent(t, "waiter"), newLockAgent(t, "check")
			hfd, wfd, cfd := host.open(disk), waiter.open(mnt), check.open(disk)
			host.must("ok", "set %d %s w 0 0", hfd, kind)
			waiter.must("EINTR", "intr %d %s w 0 0", wfd, kind)
			host.must("ok", "set %d %s u 0 0", hfd, kind)
			check.must("ok", "set %d %s w 0 0", cfd, kind) // the interrupted waiter took nothing
			waiter.send("wait %d %s w 0 0", wfd, kind)
			check.must("ok", "set %d %s u 0 0", cfd, kind)
			if got := waiter.answer(); got != "ok" {
				t.Fatalf("F_SETLKW after the release: %s", got)
			}
			host.must("EAGAIN", "set %d %s w 0 0", hfd, kind) // the waiter holds it now
		})
	}
}

// The reproduction of issue 17 item 14: a /proc session with cwd
// /workspaces/t runs SQLite in the state directory while two processes
// write the same database through the mount, in WAL and in rollback
// journal mode. The database must stay whole and keep every row. Without
// passthrough (a mount by an ordinary user) the rollback journal works
// too; WAL's shared memory cannot be shared with such a mount (gsvfs(7)).
func TestSQLiteMountAndDiskAtOnce(t *testing.T) {
	sqlite, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skipf("SKIPPED: sqlite3 is not installed (.ci/run installs it): %v", err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		modes []string
	}{
		{"passthrough", nil, []string{"wal", "delete"}},
		{"no-passthrough", []string{"--no-passthrough"}, []string{"delete"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := procMount(t, nil, c.flags...)
			if err := os.Mkdir(d.Path("workspaces/t"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, mode := range c.modes {
				t.Run(mode, func(t *testing.T) { sqliteBothWays(t, d, sqlite, mode) })
			}
		})
	}
}

// sqliteBothWays runs the writers of TestSQLiteMountAndDiskAtOnce on a
// database in journal mode mode and checks the result.
func sqliteBothWays(t *testing.T, d *daemon, sqlite, mode string) {
	const rows = 200
	dir, db := d.Path("workspaces/t"), "db-"+mode
	testenv.Run(t, dir, sqlite, db, "PRAGMA journal_mode="+mode+"; CREATE TABLE t(who TEXT, n INT);")
	writers := []string{"session", "mount1", "mount2"}
	for _, who := range writers {
		var b strings.Builder
		b.WriteString(".bail on\n.timeout 60000\n")
		for i := range rows {
			fmt.Fprintf(&b, "BEGIN IMMEDIATE; INSERT INTO t VALUES('%s', %d); COMMIT;\n", who, i)
		}
		if err := os.WriteFile(filepath.Join(dir, db+"-"+who+".sql"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	session := procNew(t, d, "sqlite-"+mode)
	procMustWrite(t, filepath.Join(session, "ctl"),
		fmt.Sprintf("cwd /workspaces/t\nexec %s %s < %s-session.sql\n", sqlite, db, db))
	var mounted []*exec.Cmd
	for _, who := range writers[1:] {
		c := exec.Command(sqlite, db)
		c.Dir = dir
		in, err := os.Open(filepath.Join(dir, db+"-"+who+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		c.Stdin, c.Stdout, c.Stderr = in, os.Stderr, os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		mounted = append(mounted, c)
	}
	for i, c := range mounted {
		if err := c.Wait(); err != nil {
			t.Errorf("sqlite3 through the mount (%s): %v", writers[i+1], err)
		}
	}
	if st := procWaitEnd(t, session); st.exit() != "0" {
		t.Errorf("sqlite3 in the session: %s, exit %s; output:\n%s", st.Status, st.exit(), procOutput(t, session))
	}
	disk := filepath.Join(d.Root, "workspaces", "t")
	got := testenv.Run(t, disk, sqlite, db, "PRAGMA integrity_check; SELECT who, count(*), count(DISTINCT n) FROM t GROUP BY who ORDER BY who;")
	want := fmt.Sprintf("ok\nmount1|%d|%[1]d\nmount2|%[1]d|%[1]d\nsession|%[1]d|%[1]d\n", rows)
	if got != want {
		t.Errorf("the database after writes both ways:\n%s\nwant:\n%s", got, want)
	}
}

// Tlock and Tgetlock through the daemon's 9P socket are the kernel's locks
// on the backing file: a host process's lock blocks them and is reported,
// theirs blocks the host process, a blocking Tlock waits for the host's
// release, and a flushed one gives up without taking the lock.
func TestNinepLocksCrossDisk(t *testing.T) {
	d := startMount(t)
	_, disk := lockFile(t, d, "ninep")
	host := newLockAgent(t, "host")
	hfd := host.open(disk)
	c := floodConn(t, gsvfsd.Socket(d.Root).Addr, "ninep") // fid 2, open for reading
	rpc := func(typ uint8, tag uint16, body ...[]byte) (uint8, []byte) {
		t.Helper()
		return rpc9(t, c, typ, tag, body...)
	}
	const (
		tlock, tgetlock, tflush = 52, 54, 108
		rdlck, wrlck, unlck     = 0, 1, 2
		success, blocked        = 0, 1
	)
	lockBody := func(typ uint8, flags uint32, start, length uint64) [][]byte {
		return [][]byte{le32(2), {typ}, le32(flags), le64(start), le64(length), le32(4242), str9("client")}
	}
	status := func(typ uint8, r []byte) string {
		if typ == 7 {
			return fmt.Sprintf("Rlerror %d", le32At(r, 0))
		}
		return map[byte]string{success: "success", blocked: "blocked"}[r[0]]
	}

	host.must("ok", "set %d posix w 10 100", hfd)
	if got := status(rpc(tlock, 1, lockBody(rdlck, 0, 0, 0)...)); got != "blocked" {
		t.Errorf("Tlock over the host's lock: %s, want blocked", got)
	}
	typ, r := rpc(tgetlock, 2, le32(2), []byte{rdlck}, le64(0), le64(0), le32(4242), str9("client"))
	if typ != 55 || r[0] != wrlck || le64At(r, 1) != 10 || le64At(r, 9) != 100 || le32At(r, 17) != uint32(host.cmd.Process.Pid) {
		t.Errorf("Tgetlock over the host's lock: type %d %x, want Rgetlock write 10+100 pid %d", typ, r, host.cmd.Process.Pid)
	}
	if got := status(rpc(tlock, 3, lockBody(rdlck, 0, 0, 10)...)); got != "success" {
		t.Errorf("Tlock beside the host's lock: %s, want success", got)
	}
	host.must("EAGAIN", "set %d posix w 0 1", hfd)

	// A blocking Tlock waits until the host lets go.
	if _, err := c.Write(floodFrame(tlock, 4, lockBody(rdlck, 1, 50, 1)...)); err != nil {
		t.Fatal(err)
	}
	host.must("ok", "set %d posix u 0 0", hfd)
	if got := status(ninepReply(t, c, 4)); got != "success" {
		t.Errorf("blocking Tlock after the host's release: %s, want success", got)
	}
	host.must("EAGAIN", "set %d posix w 50 1", hfd)
	host.must("ok", "set %d posix w 51 0", hfd)

	// One the client flushes gives up and holds nothing.
	if _, err := c.Write(floodFrame(tlock, 5, lockBody(rdlck, 1, 60, 1)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(floodFrame(tflush, 6, []byte{5, 0})); err != nil {
		t.Fatal(err)
	}
	for {
		typ, _ := ninepReply(t, c, 0)
		if typ == 109 { // Rflush; an Rlerror for the Tlock may come before it
			break
		}
		if typ != 7 {
			t.Fatalf("flushed Tlock answered with message type %d", typ)
		}
	}
	host.must("ok", "set %d posix u 0 0", hfd)
	if got := status(rpc(tlock, 7, lockBody(unlck, 0, 0, 0)...)); got != "success" {
		t.Errorf("Tlock unlock: %s", got)
	}
	host.must("ok", "set %d posix w 0 0", hfd)

	// Clunking the fid lets its locks go.
	host.must("ok", "set %d posix u 0 0", hfd)
	if got := status(rpc(tlock, 8, lockBody(rdlck, 0, 0, 0)...)); got != "success" {
		t.Errorf("Tlock on the whole file: %s", got)
	}
	host.must("EAGAIN", "set %d posix w 0 0", hfd)
	if typ, _ := rpc(120, 9, le32(2)); typ != 121 {
		t.Fatalf("Tclunk: message type %d", typ)
	}
	host.must("ok", "set %d posix w 0 0", hfd)
}

// A 9P client cannot make the daemon hold a description per lock owner
// without bound, nor pass it a malformed lock. The bound follows the
// daemon's descriptor limit, here held at 4096 (a connection may then
// hold 1024 files open, and lock 256 owners' descriptions).
func TestNinepLocksRogueClient(t *testing.T) {
	vfstest.NeedFUSE(t)
	base := t.TempDir()
	root, mnt := filepath.Join(base, "state"), filepath.Join(base, "mnt")
	smMust(t, "mkdir", os.Mkdir(mnt, 0o755))
	d := launch(t, &daemon{Root: root, Mnt: mnt, prefix: fileLimited(t, 4096)}, "mount", "--foreground", "--root", root, mnt)
	t.Cleanup(func() { d.stop(t) })
	lockFile(t, d, "rogue")
	c := floodConn(t, gsvfsd.Socket(d.Root).Addr, "rogue") // fid 2, open for reading
	lock := func(typ uint8, start, length uint64, proc uint32) string {
		t.Helper()
		if _, err := c.Write(floodFrame(52, 1, le32(2), []byte{typ}, le32(0), le64(start), le64(length), le32(proc), str9("rogue"))); err != nil {
			t.Fatal(err)
		}
		switch typ, r := ninepReply(t, c, 1); {
		case typ == 7:
			return syscall.Errno(le32At(r, 0)).Error()
		case typ == 53 && r[0] == 0:
			return "success"
		default:
			return fmt.Sprintf("type %d %x", typ, r)
		}
	}
	for _, tc := range []struct {
		what          string
		typ           uint8
		start, length uint64
		want          syscall.Errno
	}{
		{"an unknown lock type", 7, 0, 0, syscall.EINVAL},
		{"a start past the largest offset", 0, 1 << 63, 1, syscall.EINVAL},
		{"a length past it", 0, 1, 1<<63 + 5, syscall.EINVAL},
	} {
		if got := lock(tc.typ, tc.start, tc.length, 1); got != tc.want.Error() {
			t.Errorf("Tlock with %s: %s, want %v", tc.what, got, tc.want)
		}
	}
	proc := uint32(1)
	for ; proc < 5000; proc++ {
		if got := lock(0, 0, 0, proc); got != "success" {
			if got != syscall.ENOLCK.Error() || proc < 100 {
				t.Fatalf("read lock of proc %d: %s, want success then ENOLCK", proc, got)
			}
			break
		}
	}
	if proc == 5000 {
		t.Fatal("4999 lock owners of one connection each held a description")
	}
	if proc-1 != 256 {
		t.Errorf("%d lock owners of one connection held a description, want 256: a quarter of the 1024 files it may hold open", proc-1)
	}
	if typ, _ := rpc9(t, c, 120, 9, le32(2)); typ != 121 {
		t.Fatalf("Tclunk: message type %d", typ)
	}
	// The clunk gave every description back: a new connection's owners
	// lock as many again.
	c = floodConn(t, gsvfsd.Socket(d.Root).Addr, "rogue")
	for p := uint32(1); p < proc; p++ {
		if got := lock(0, 0, 0, p); got != "success" {
			t.Fatalf("after the clunk, read lock of proc %d: %s", p, got)
		}
	}
}

// fileLimited is a command prefix that runs a program with a descriptor
// limit of n that it may not raise (no CAP_SYS_RESOURCE).
func fileLimited(t *testing.T, n int) []string {
	t.Helper()
	for _, tool := range []string{"prlimit", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: %s (util-linux) is needed to hold the daemon's descriptor limit: %v", tool, err)
		}
	}
	return []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", n, n), "setpriv", "--bounding-set=-sys_resource"}
}

// rpc9 sends one request and returns the type and body of its reply.
func rpc9(t *testing.T, c net.Conn, typ uint8, tag uint16, body ...[]byte) (uint8, []byte) {
	t.Helper()
	if _, err := c.Write(floodFrame(typ, tag, body...)); err != nil {
		t.Fatal(err)
	}
	return ninepReply(t, c, tag)
}

// ninepReply reads one reply and returns its type and body; want is its
// tag (0: any).
func ninepReply(t *testing.T, c net.Conn, want uint16) (uint8, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(procBound))
	var hdr [7]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, le32At(hdr[:], 0)-7)
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	if tag := uint16(hdr[5]) | uint16(hdr[6])<<8; want != 0 && tag != want {
		t.Fatalf("reply with tag %d, want %d", tag, want)
	}
	return hdr[4], body
}

func le32At(b []byte, i int) uint32 { return le.LittleEndian.Uint32(b[i:]) }
func le64At(b []byte, i int) uint64 { return le.LittleEndian.Uint64(b[i:]) }

// Taking a lock through the mount drops what the kernel cached of the
// file's data, so a process that locks before it reads sees what a host
// process wrote while the lock was free, as NFS clients do. Passthrough
// caches nothing in the mount, so the mount here has it off, and no
// watch, so nothing else drops the cache within its second.
func TestLocksRefreshCachedData(t *testing.T) {
	d := startMount(t, "--no-passthrough", "--no-watch")
	for kind, news := range map[string]string{"posix": "PSX1", "ofd": "OFD2", "flock": "FLK3"} {
		t.Run(kind, func(t *testing.T) {
			mnt, disk := lockFile(t, d, "cached-"+kind)
			a := newLockAgent(t, "reader")
			afd := a.open(mnt)
			a.must("xxxx", "read %d 4", afd) // now in the page cache
			f, err := os.OpenFile(disk, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt([]byte(news), 0)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			a.must("ok", "set %d %s r 0 0", afd, kind)
			a.must(news, "read %d 4", afd)
			a.must("ok", "set %d %s u 0 0", afd, kind)
		})
	}
}

// Files with no disk behind them keep their locks in the daemon's memory,
// with the same rules between the mount's processes.
func TestLocksSyntheticFiles(t *testing.T) {
	d := startMount(t)
	a, b := newLockAgent(t, "a"), newLockAgent(t, "b")
	file := d.Path("sys/config/log-level") // /dev's are device nodes: not the daemon's to open
	afd, bfd := a.open(file), b.open(file)
	a.must("ok", "set %d posix w 0 10", afd)
	b.must("EAGAIN", "set %d posix r 5 1", bfd)
	b.must(fmt.Sprintf("w 0 10 %d", a.cmd.Process.Pid), "get %d posix r 0 0", bfd)
	b.must("ok", "set %d posix w 10 0", bfd)
	a.must("ok", "set %d flock w 0 0", afd)
	b.must("EAGAIN", "set %d flock r 0 0", bfd)
	a.must("ok", "close %d", afd) // its last close: both go, the moment after
	b.must("ok", "wait %d posix w 0 0", bfd)
	b.must("ok", "wait %d flock w 0 0", bfd)
}

// A mount attached to the daemon that serves the state directory sends its
// locks to that daemon (Tlock), so they too are the backing file's: they
// exclude host processes and the first mount's users, each way.
func TestLocksThroughAttachedMount(t *testing.T) {
	first := startMount(t)
	second := mountAt(t, first.Root, filepath.Join(smSharedTempDir(t), "second"))
	t.Cleanup(func() { second.stop(t) })
	mnt1, disk := lockFile(t, first, "attached")
	mnt2 := second.Path("workspaces/attached")
	for _, kind := range []string{"posix", "ofd", "flock"} {
		t.Run(kind, func(t *testing.T) {
			att, host, one := newLockAgent(t, "attached"), newLockAgent(t, "host"), newLockAgent(t, "first mount")
			afd, hfd, ofd := att.open(mnt2), host.open(disk), one.open(mnt1)
			att.must("ok", "set %d %s w 0 0", afd, kind)
			host.must("EAGAIN", "set %d %s r 0 0", hfd, kind)
			one.must("EAGAIN", "set %d %s r 0 0", ofd, kind)
			att.must("ok", "close %d", afd) // the close lets it go
			host.must("ok", "wait %d %s w 0 0", hfd, kind)
			afd = att.open(mnt2)
			att.must("EAGAIN", "set %d %s r 0 0", afd, kind)
			if kind == "posix" { // F_OFD_GETLK names no process
				att.must(fmt.Sprintf("w 0 0 %d", host.cmd.Process.Pid), "get %d %s r 0 0", afd, kind)
			}
			host.must("ok", "set %d %s u 0 0", hfd, kind)
			att.must("ok", "wait %d %s r 0 0", afd, kind)
		})
	}
}

// An ordinary user who takes locks on file after file until the mount
// refuses (ENOLCK) has used up only its own budget: root and another user
// still lock, and the user locks again once its locks are gone. (Before,
// the budget was the whole mount's, and such a loop left every other user
// with ENOLCK.)
func TestLocksBudgetPerUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as other users")
	}
	// 2000 opens a user: a quarter of it, 500, is the user's lock budget,
	// well under the 1024 that one mount's users had together before.
	d := smSharedMount(t, "--max-open-per-user", "2000")
	const files = 1100
	dir := filepath.Join(d.Root, "workspaces", "budget")
	smMust(t, "mkdir", os.Mkdir(dir, 0o777))
	smMust(t, "chmod", os.Chmod(dir, 0o777))
	for i := range files + 2 {
		p := filepath.Join(dir, fmt.Sprint("f", i))
		smMust(t, "create", os.WriteFile(p, nil, 0o666))
		smMust(t, "chmod", os.Chmod(p, 0o666))
	}
	file := func(i int) string { return d.Path(fmt.Sprint("workspaces/budget/f", i)) }
	as := func(uid uint32) *syscall.Credential {
		return &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
	}

	hog := newLockAgentAs(t, "uid 1000", as(smOther))
	held, last := 0, ""
	for ; held < files; held++ {
		if last = hog.do("set %d posix w 0 0", hog.open(file(held))); last != "ok" {
			break
		}
	}
	if last != "ENOLCK" {
		t.Fatalf("uid %d locked %d files and then got %q; want ENOLCK at its budget", smOther, held, last)
	}
	t.Logf("uid %d holds write locks on %d files, then ENOLCK", smOther, held)

	root := newLockAgent(t, "root")
	root.must("ok", "set %d posix w 0 0", root.open(file(files)))
	other := newLockAgentAs(t, "uid 1001", as(smOther+1))
	other.must("ok", "set %d posix w 0 0", other.open(file(files+1)))

	// The user's locks go with its process, and its budget with them.
	hog.cmd.Process.Kill()
	hog.cmd.Wait()
	again := newLockAgentAs(t, "uid 1000 again", as(smOther))
	again.must("ok", "set %d posix w 0 0", again.open(file(0)))
}
