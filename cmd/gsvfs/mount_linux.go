package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/sysfs"
	"github.com/gsvfs/gsvfs/vfs/fusefs"
)

// readyFdEnv names the descriptor on which a background daemon reports to
// the command that started it: "ok" once the mount is ready, or the error.
const readyFdEnv = "GSVFS_READY_FD"

type mountFlags struct {
	root          string
	server        string
	foreground    bool
	noPassthrough bool
	noWatch       bool
	kernelBinds   bool
	maxOpenUser   int64
	debugFuse     bool
	cpuProfile    string
	logLevel      string
	sessions      sessionFlags
}

func mountCommand() *cobra.Command {
	var f mountFlags
	cmd := &cobra.Command{
		Use:   "mount [--server unix:PATH | tcp:HOST:PORT] [--root DIR] [--foreground] MOUNTPOINT",
		Short: "mount the tree with FUSE, serving it from a daemon in the background",
		Long: `mount serves the state directory's tree at MOUNTPOINT with FUSE. It returns
once the mount is ready and keeps serving in the background, like sshfs;
--foreground stays attached until the mount is unmounted or a signal comes.
If a daemon already serves the state directory, the mount attaches to it
over its 9P socket; --server mounts the tree of any gsvfs 9P server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.root != "" && f.server != "" {
				return errors.New("--root and --server exclude each other: a server has its own state directory")
			}
			if err := f.sessions.check(cmd); err != nil {
				return err
			}
			if err := f.checkKernelBinds(); err != nil {
				return err
			}
			if f.root == "" {
				f.root = gsvfsd.DefaultRoot()
			}
			if f.foreground || os.Getenv(readyFdEnv) != "" {
				return serveMount(cmd.OutOrStdout(), f, args[0])
			}
			f.logLevel = cmd.Flag("log-level").Value.String()
			return startDaemon(cmd.OutOrStdout(), f, args[0])
		},
	}
	cmd.Flags().StringVar(&f.root, "root", "", "state directory (default $XDG_DATA_HOME/gsvfs, /var/lib/gsvfs for root)")
	cmd.Flags().StringVar(&f.server, "server", "", "mount the tree of the 9P server at unix:PATH or tcp:HOST:PORT")
	cmd.Flags().BoolVar(&f.foreground, "foreground", false, "stay attached and log to stderr")
	cmd.Flags().BoolVar(&f.noPassthrough, "no-passthrough", false, "move file data through the daemon even where the kernel offers passthrough")
	cmd.Flags().BoolVar(&f.noWatch, "no-watch", false, "do not watch the state directory for changes made outside gsvfs; the kernel then trusts what it caches of stored files for one second only")
	cmd.Flags().BoolVar(&f.kernelBinds, "kernel-binds", false, "let the kernel serve the disk trees (/home, /workspaces, --bind directories) itself, with bind mounts over their places: native speed for everything in them; needs root (see gsvfs-mount(1) for what it changes)")
	cmd.Flags().Int64Var(&f.maxOpenUser, "max-open-per-user", 0, "files and directories one user other than root may hold open (default a quarter of the descriptor limit)")
	cmd.Flags().BoolVar(&f.debugFuse, "debug-fuse", false, "log every FUSE request")
	cmd.Flags().MarkHidden("debug-fuse")
	cmd.Flags().StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the daemon to this file until it exits")
	cmd.Flags().MarkHidden("cpuprofile")
	addSessionFlags(cmd, &f.sessions)
	return cmd
}

// serveMount mounts and serves until the mount goes away or a signal
// comes; then it unmounts cleanly.
func serveMount(stdout io.Writer, f mountFlags, mountpoint string) (err error) {
	background := os.Getenv(readyFdEnv) != ""
	if path := os.Getenv(logFileEnv); background && path != "" {
		os.Unsetenv(logFileEnv)
		daemonStderr.capAt(path, maxLogFile)
	}
	report := readyReporter()
	// Catch the signals before anyone can learn the mount is ready, so a
	// SIGTERM sent the moment it is always unmounts cleanly.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer func() {
		if err != nil && background {
			// The command that started this daemon prints the error;
			// the log keeps it too. In the foreground the one line
			// on stderr says it.
			slog.Error("mount failed", "mountpoint", mountpoint, "err", err)
		}
		if err != nil {
			report(err)
		}
	}()
	if mountpoint, err = filepath.Abs(mountpoint); err != nil {
		return err
	}
	if err := fusefs.Prepare(mountpoint); err != nil {
		return err
	}
	pidFile, err := recordMount(mountpoint)
	if err != nil {
		return err
	}
	defer pidFile.Close()
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	src, err := openSource(f, mountpoint)
	if err != nil {
		return err
	}
	defer src.close()
	becomeDaemon()
	fewerProcs()
	m, err := fusefs.New(mountpoint, src.tree, fusefs.Options{
		AllowOther:     os.Geteuid() == 0,
		NoPassthrough:  f.noPassthrough,
		NoWatch:        f.noWatch,
		MaxOpenPerUser: f.maxOpenUser,
		Debug:          f.debugFuse,
		Log:            slog.Default(),
	})
	if err != nil {
		return err
	}
	if src.mounted != nil {
		src.mounted(mountpoint)
	}
	if f.kernelBinds {
		stop := keepKernelBinds(m, src.table)
		defer stop()
	}
	if src.addEdge != nil {
		src.addEdge("fuse "+mountpoint, func() sysfs.Edge {
			w := m.WatchStats()
			return sysfs.Edge{Kernel: &sysfs.KernelDrops{Watching: w.Watching, Entries: w.Entries, Inodes: w.Inodes, Lost: w.Lost, Pages: w.Pages}}
		})
	}
	slog.Info("serving", "tree", src.name, "mountpoint", mountpoint, "pid", os.Getpid())
	fmt.Fprintf(stdout, "gsvfs: serving %s at %s (pid %d)\n", src.name, mountpoint, os.Getpid())
	report(nil)
	waitUnmount(m, sigs, src.leave)
	return nil
}

// recordMount records this process as the server of the mount at
// mountpoint, for gsvfs umount, until it exits. A daemon that served
// there before and is still leaving is waited for first, as umount
// waits for it.
func recordMount(mountpoint string) (*os.File, error) {
	if !gsvfsd.WaitMountServer(mountpoint, umountWait) {
		pid, _ := gsvfsd.MountServer(mountpoint)
		return nil, fmt.Errorf("mount point %s is still served by pid %d; run gsvfs umount %s first", mountpoint, pid, mountpoint)
	}
	return gsvfsd.MountPid(mountpoint)
}

// fewerProcs runs the FUSE daemon's Go code on half the CPUs (at least
// one) unless GOMAXPROCS says otherwise. A FUSE request is a round trip:
// the calling process waits while the daemon works, then the other way
// round, so the two share the CPUs rather than run side by side. With a
// processor per CPU the Go scheduler hands every request from the
// goroutine that read it to a woken thread on another processor (go-fuse
// starts a new reader for each request), a wake-up and a spin that cost
// more than the request itself on a small machine: on 2 CPUs, tar x of
// Go's source tree took 5.6 s with two and 4.3 s with one, and the
// daemon's CPU time fell by a third. Two tars at once lost 6 % (6.3 s
// against 6.7 s); BENCHMARKS.md has the figures.
func fewerProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	n := max(1, runtime.NumCPU()/2)
	runtime.GOMAXPROCS(n)
	slog.Debug("Go processors", "n", n)
}

// waitUnmount serves until the mount is gone; SIGINT, SIGTERM or SIGHUP
// (on sigs) unmounts first, lazily if files are still open so the daemon
// can always exit. Either way leave comes first: the daemon stops
// answering other mounts, and ends the sessions, whose mount namespaces
// hold copies of the mount that would keep it up. A lost 9P server does
// not end it: the tree waits for the server to come back.
func waitUnmount(m *fusefs.Mount, sigs <-chan os.Signal, leave func()) {
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done:
		slog.Info("mount gone; exiting", "mountpoint", m.Dir)
		leave()
	case <-mountLeft(m.Dir):
		// Unmounted here by someone else (umount, fusermount3 -u): the
		// copies in the sessions' namespaces keep the mount up until
		// they end, with the daemon serving nobody it was mounted for.
		slog.Info("unmounted; ending the sessions, whose namespaces hold the mount", "mountpoint", m.Dir)
		leave()
		<-done
		slog.Info("mount gone; exiting", "mountpoint", m.Dir)
	case sig := <-sigs:
		slog.Info("unmounting", "signal", sig.String(), "mountpoint", m.Dir)
		leave()
		unmountOrDetach(m)
	}
}

// mountLeft is closed once the gsvfs mount at dir has left this
// process's mount namespace. The kernel wakes a poll of mountinfo at
// changes of the namespace's mounts, but not at every one: an unmount
// right after a session's clone of the namespace has been seen to leave
// the poll asleep (Linux 6.18), so the table is read every second too.
// Where there is no table, the channel is never closed.
func mountLeft(dir string) <-chan struct{} {
	left := make(chan struct{})
	id := fusefs.MountID(dir)
	info, err := os.Open("/proc/self/mountinfo")
	if id == 0 || err != nil {
		slog.Warn("cannot watch the mount table; an unmount by others ends the daemon only once the sessions end", "mountpoint", dir, "err", err)
		return left
	}
	go func() {
		defer info.Close()
		for fusefs.HasMount(id) {
			fds := []unix.PollFd{{Fd: int32(info.Fd()), Events: unix.POLLPRI}}
			if _, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
				slog.Warn("watching the mount table failed", "err", err)
				return
			}
		}
		close(left)
	}()
	return left
}

// unmountOrDetach unmounts, lazily if files are still open, so the daemon
// can always exit.
func unmountOrDetach(m *fusefs.Mount) {
	if err := m.Unmount(); err != nil {
		slog.Warn("unmount failed; detaching lazily", "err", err)
		if err := fusefs.Detach(m.Dir); err != nil {
			slog.Error("detach failed", "err", err)
		}
	}
}

// readyReporter returns how this process tells the command that started
// it whether the mount came up. Outside a background start it does
// nothing.
func readyReporter() func(error) {
	fdText := os.Getenv(readyFdEnv)
	if fdText == "" {
		return func(error) {}
	}
	os.Unsetenv(readyFdEnv)
	var fd int
	fmt.Sscanf(fdText, "%d", &fd)
	pipe := os.NewFile(uintptr(fd), "ready")
	return func(err error) {
		if pipe == nil {
			return
		}
		msg := "ok"
		if err != nil {
			msg = err.Error()
		}
		fmt.Fprintln(pipe, msg)
		pipe.Close()
		pipe = nil
	}
}

// startDaemon runs `gsvfs mount` again as a detached daemon (its own
// session, output to the log: in the state directory, or for --server,
// which has none here, in the mount's runtime directory) and waits for
// it to report that the mount is ready.
func startDaemon(stdout io.Writer, f mountFlags, mountpoint string) error {
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	abs, logPath, err := daemonLogPath(f, mp)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the daemon log: %w", err)
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, daemonArgs(f, abs, mp)...)
	child.Env = append(os.Environ(), readyFdEnv+"=3", logFileEnv+"="+logPath)
	child.ExtraFiles = []*os.File{w}
	child.Stdout, child.Stderr = logFile, logFile
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if line != "ok" {
		child.Wait()
		if line == "" {
			return fmt.Errorf("the daemon exited before the mount was ready; see %s", logPath)
		}
		return errors.New(line)
	}
	pid := child.Process.Pid
	child.Process.Release()
	name := abs
	if f.server != "" {
		name = f.server
	}
	_, err = fmt.Fprintf(stdout, "gsvfs: serving %s at %s (pid %d, log %s)\n", name, mp, pid, logPath)
	return err
}

// daemonLogPath is the background daemon's state directory (made
// ready), "" for --server, and its log file.
func daemonLogPath(f mountFlags, mountpoint string) (root, log string, err error) {
	if f.server != "" {
		dir, err := gsvfsd.PrepareMountRuntime(mountpoint)
		return "", filepath.Join(dir, "gsvfs.log"), err
	}
	root, err = gsvfsd.PrepareRoot(f.root)
	return root, filepath.Join(root, "gsvfs.log"), err
}

// daemonArgs is the command line of the background daemon: this one's
// mount with the flags the daemon needs.
func daemonArgs(f mountFlags, root, mountpoint string) []string {
	var args []string
	if f.sessions.explicit["log-level"] {
		args = append(args, "--log-level", f.logLevel)
	}
	args = append(args, "mount")
	if f.server != "" {
		args = append(args, "--server", f.server)
	} else {
		args = append(args, "--root", root)
	}
	if f.noPassthrough {
		args = append(args, "--no-passthrough")
	}
	if f.noWatch {
		args = append(args, "--no-watch")
	}
	if f.kernelBinds {
		args = append(args, "--kernel-binds")
	}
	if f.maxOpenUser != 0 {
		args = append(args, "--max-open-per-user", strconv.FormatInt(f.maxOpenUser, 10))
	}
	if f.debugFuse {
		args = append(args, "--debug-fuse")
	}
	args = append(args, f.sessions.args()...)
	if f.cpuProfile != "" {
		args = append(args, "--cpuprofile", f.cpuProfile)
	}
	return append(args, mountpoint)
}
