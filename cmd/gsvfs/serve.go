package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/devices"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/sysfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

type serveFlags struct {
	root        string
	listen      []string
	device      string
	join        string
	joinFile    string
	noSessions  bool
	binds       []string
	refuse      []string
	insecureTCP bool
	cpuProfile  string
	sessions    sessionFlags
}

func serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--root DIR] [--listen unix:PATH | tls:HOST:PORT | tcp:HOST:PORT ...] [--device ID] [--join TOKEN]",
		Short: "serve the tree over 9P2000.L",
		Long: `serve exports the state directory's tree over 9P2000.L until SIGINT or
SIGTERM. The default listener is the unix socket gsvfs.sock in the state
directory's runtime directory ($XDG_RUNTIME_DIR/gsvfs or /run/gsvfs), which
admits only its owner and root; serve prints its path.

tls:HOST:PORT makes the daemon a gateway that devices join over TLS 1.3,
both ends authenticated (see gsvfs-devices(7)); the unix socket stays
beside it. --join TOKEN makes it a device that dials the gateway the token
names and stays joined. Plain TCP listens on loopback only, and only with
--insecure-tcp: it has no authentication, so every local user who connects
gets the server's rights (root's, for a server run as root), commands in
/proc included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.sessions.check(cmd); err != nil {
				return err
			}
			if f.root == "" {
				f.root = gsvfsd.DefaultRoot()
			}
			return runServe(cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&f.root, "root", "", "state directory (default $XDG_DATA_HOME/gsvfs, /var/lib/gsvfs for root)")
	cmd.Flags().StringArrayVar(&f.listen, "listen", nil, "where to listen: unix:PATH or tcp:HOST:PORT (repeatable; default the state directory's socket in the runtime directory)")
	cmd.Flags().StringVar(&f.device, "device", defaultDevice, "this machine's device id, in /sys/devices and at a gateway's /mnt/ID")
	cmd.Flags().StringArrayVar(&f.binds, "bind", nil, "serve the host directory HOSTDIR at PATH of the tree, as HOSTDIR:PATH (repeatable)")
	cmd.Flags().StringArrayVar(&f.refuse, "refuse", nil, "never export paths matching this pattern to a gateway, such as '**/secrets/**' (repeatable; added to the defaults, see gsvfs-devices(7))")
	cmd.Flags().StringVar(&f.join, "join", "", "join the gateway this token (from `gsvfs device token`) names, and stay joined; other users see it in ps: prefer --join-file or GSVFS_JOIN")
	cmd.Flags().StringVar(&f.joinFile, "join-file", "", "read the --join token from this file, which only its owner may read (mode 0600)")
	cmd.Flags().BoolVar(&f.noSessions, "no-sessions", false, "serve no /proc: a gateway this daemon joins gets its files, never its user's shell")
	cmd.Flags().BoolVar(&f.insecureTCP, "insecure-tcp", false, "allow an unauthenticated loopback TCP listener: every local user gets the server's rights (root's, if run as root), including running commands through /proc")
	cmd.Flags().StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the server to this file until it exits")
	cmd.Flags().MarkHidden("cpuprofile")
	addSessionFlags(cmd, &f.sessions)
	return cmd
}

// runServe serves until a signal, then closes every connection and exits.
func runServe(stdout io.Writer, f serveFlags) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	root, err := gsvfsd.PrepareRoot(f.root)
	if err != nil {
		return err
	}
	claim, err := gsvfsd.ClaimRoot(root)
	if errors.Is(err, gsvfsd.ErrServed) {
		return fmt.Errorf("a daemon already serves %s (socket %s)", root, gsvfsd.Socket(root).Addr)
	}
	if err != nil {
		return err
	}
	// Held until everything else has ended: the last thing to go.
	defer claim.Release()
	if f.join, err = joinSecret(f.join, f.joinFile); err != nil {
		return err
	}
	tlsAddrs, plain := splitTLS(f.listen)
	addrs, err := listenAddrs(root, plain, f.insecureTCP)
	if err != nil {
		return err
	}
	if err := devices.CheckID(f.device); err != nil {
		return err
	}
	warnUnauthenticated(addrs)
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	refuse := append(slices.Clone(gsvfsd.DefaultRefused), f.refuse...)
	tree, err := buildTree(root, gsvfsd.Options{Self: f.device, Sessions: f.sessions.config(), NoSessions: f.noSessions,
		Binds: f.binds, Refuse: refuse, Explicit: f.sessions.explicit,
		Facts: []sysfs.ConfigKey{
			gsvfsd.Fact("root", root), gsvfsd.Fact("listen", strings.Join(f.listen, " ")), gsvfsd.Fact("device", f.device),
			{Name: "join", Secret: true, Get: func() string { return f.join }},
			gsvfsd.Fact("bind", strings.Join(f.binds, " ")), gsvfsd.Fact("refuse", strings.Join(refuse, " ")),
			gsvfsd.Fact("insecure-tcp", strconv.FormatBool(f.insecureTCP)), gsvfsd.Fact("no-sessions", strconv.FormatBool(f.noSessions)),
		}})
	if err != nil {
		return err
	}
	defer closeTree(tree)
	becomeDaemon()
	srv, where, err := startNinep(tree, addrs)
	if err != nil {
		return err
	}
	tree.AddEdge("9p "+strings.Join(where, ","), srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	linked, joinEnded, err := startLinks(ctx, root, f, tlsAddrs, tree)
	if err != nil {
		stopNinep(srv)
		return err
	}
	where = append(where, linked...)
	slog.Info("serving", "root", root, "listen", where, "pid", os.Getpid())
	fmt.Fprintf(stdout, "gsvfs: serving %s on %s (pid %d)\n", root, strings.Join(where, ", "), os.Getpid())
	select {
	case sig := <-sigs:
		slog.Info("shutting down", "signal", sig.String())
		return stopNinep(srv)
	case err := <-joinEnded:
		// Refused for good: exit non-zero, so a service manager shows it.
		stopNinep(srv)
		return err
	}
}

// listenAddrs parses --listen, defaulting to the state directory's socket.
func listenAddrs(root string, listen []string, insecureTCP bool) ([]ninep.Address, error) {
	if len(listen) == 0 {
		return []ninep.Address{gsvfsd.Socket(root)}, nil
	}
	var addrs []ninep.Address
	for _, s := range listen {
		a, err := ninep.ParseAddress(s)
		if err != nil {
			return nil, err
		}
		if a.Network == "tcp" && !insecureTCP {
			return nil, fmt.Errorf("--listen %s: TCP has no authentication yet; add --insecure-tcp to accept that every user of this machine can connect with the server's rights", s)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// warnUnauthenticated says in the log, at every start, what an
// --insecure-tcp listener gives away: the flag is easy to leave in a script.
func warnUnauthenticated(addrs []ninep.Address) {
	for _, a := range addrs {
		if a.Network == "tcp" {
			slog.Warn("unauthenticated TCP listener: every local user who connects gets this server's rights, /proc commands included",
				"listen", a.String(), "uid", os.Getuid())
		}
	}
}

// stopNinep closes the server, giving requests in flight a few seconds.
func stopNinep(srv *ninep.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		slog.Warn("requests still running at exit", "err", err)
	}
	return nil
}

// buildTree builds the tree of the state directory root with o and what
// this process keeps for it: its version, its recent log (/sys/log) and
// the log's level (/sys/config/log-level).
func buildTree(root string, o gsvfsd.Options) (*gsvfsd.Tree, error) {
	o.Version, o.Log, o.LogLevel = version, daemonLog.log, logLevel
	return gsvfsd.Build(root, o)
}

// closeTree ends a tree this command built, saying in the log what its
// goroutines ended with.
func closeTree(t *gsvfsd.Tree) {
	if err := t.Close(); err != nil {
		slog.Warn("the tree ended with an error", "err", err)
	}
}
