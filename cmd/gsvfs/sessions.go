package main

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/shelld"
)

// sessionFlags configure the shell sessions of /proc (gsvfs-proc(7)).
type sessionFlags struct {
	// explicit names the flags given on the command line: they win over
	// what /sys/config kept in the state directory.
	explicit map[string]bool

	shell       string
	outputCap   int
	execTimeout time.Duration
	retention   time.Duration
	idle        time.Duration
	maxLive     int
	umask       string // octal; empty: the umask of whoever runs the command
}

func addSessionFlags(cmd *cobra.Command, s *sessionFlags) {
	d := shelld.DefaultConfig()
	cmd.Flags().StringVar(&s.shell, "session-shell", "", "login shell of /proc sessions (default $SHELL, else /bin/sh)")
	cmd.Flags().IntVar(&s.outputCap, "session-output", d.OutputCap, "bytes of output kept per session (the head is dropped)")
	cmd.Flags().DurationVar(&s.execTimeout, "exec-timeout", d.ExecTimeout, "time limit of a session's `exec`")
	cmd.Flags().DurationVar(&s.retention, "session-retention", d.Retention, "how long finished sessions stay in /proc")
	cmd.Flags().DurationVar(&s.idle, "session-idle", d.Idle, "how long sessions never started stay in /proc while no file of them is open")
	cmd.Flags().IntVar(&s.maxLive, "max-sessions", d.MaxLive, "sessions that may be live at once")
	cmd.Flags().StringVar(&s.umask, "session-umask", "", "umask of /proc sessions, in octal (default: the umask gsvfs was started with)")
}

// args gives the flags given on the command line back, for the
// background daemon, and the umask, which check settled.
func (s sessionFlags) args() []string {
	args := []string{"--session-umask", s.umask}
	for name, value := range map[string]string{"session-output": strconv.Itoa(s.outputCap),
		"exec-timeout": s.execTimeout.String(), "session-retention": s.retention.String(),
		"session-idle": s.idle.String(),
		"max-sessions": strconv.Itoa(s.maxLive), "session-shell": s.shell, "log-level": ""} {
		if s.explicit[name] && name != "log-level" {
			args = append(args, "--"+name, value)
		}
	}
	return args
}

// check refuses what would mean "no limit" or "forget at once" by
// accident: negative times and counts; and it settles the umask now,
// before the daemon sets its own to 0: the sessions take the one of
// whoever started gsvfs unless --session-umask says otherwise.
func (s *sessionFlags) check(cmd *cobra.Command) error {
	s.explicit = map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { s.explicit[f.Name] = true })
	if s.outputCap < 0 || s.maxLive < 0 || s.execTimeout < 0 || s.retention < 0 || s.idle < 0 {
		return errors.New("--session-output, --exec-timeout, --session-retention, --session-idle and --max-sessions cannot be negative")
	}
	if s.umask == "" {
		s.umask = fmt.Sprintf("%04o", currentUmask())
	}
	if _, err := gsvfsd.ParseUmask(s.umask); err != nil {
		return err
	}
	return nil
}

// currentUmask reads the process's umask, which can only be read by
// setting it.
func currentUmask() int {
	u := syscall.Umask(0o022)
	syscall.Umask(u)
	return u
}

func (s sessionFlags) config() shelld.Config {
	c := shelld.Config{Shell: s.shell, OutputCap: s.outputCap, ExecTimeout: s.execTimeout,
		Retention: s.retention, Idle: s.idle, MaxLive: s.maxLive}
	if u, err := gsvfsd.ParseUmask(s.umask); err == nil { // check has settled it
		c.Umask = &u
	}
	return c
}
