// Command gsvfs exports a machine, its shell sessions and the machines it
// knows as one Unix file tree, over FUSE and 9P2000.L. This package is
// wiring only: each command lives in a file of its own.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/gsvfs/gsvfs/shelld"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	shelld.RunInit() // a session's program, started in a mount namespace of its own
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gsvfs:", err)
		os.Exit(exitStatus(err))
	}
}

// exitError ends gsvfs with a status of its own, which a service manager
// can tell from other failures (gsvfs-serve(1) EXIT STATUS).
type exitError struct {
	error
	status int
}

func (e exitError) Unwrap() error { return e.error }

// exitRefused is the status of a device its gateway refused for good:
// sysexits' EX_CONFIG, since only a new token or key can change that.
const exitRefused = 78

// exitStatus is 1, or the status an exitError in err carries.
func exitStatus(err error) int {
	var e exitError
	if errors.As(err, &e) {
		return e.status
	}
	return 1
}

func rootCommand() *cobra.Command {
	var level string
	root := &cobra.Command{
		Use:   "gsvfs",
		Short: "one Unix file tree over your machines, served over FUSE and 9P",
		Long: `gsvfs serves /home, /workspaces, /etc, /sys, /proc and /dev as one file tree
that people and agents use with plain file tools. See gsvfs(1) and gsvfs(7).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return setupLog(level)
		},
	}
	root.PersistentFlags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(mountCommand(), serveCommand(), umountCommand(), attachCommand(), psCommand(), deviceCommand(), versionCommand())
	return root
}

// setupLog sends structured logs to stderr at the chosen level, and keeps
// the last lines for /sys/log.
func setupLog(level string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("bad --log-level %q: want debug, info, warn or error", level)
	}
	logLevel.Set(l)
	out := io.MultiWriter(daemonStderr, daemonLog)
	slog.SetDefault(slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: logLevel})))
	return nil
}

// logLevel is the level the log keeps, changed live through
// /sys/config/log-level.
var logLevel = new(slog.LevelVar)
