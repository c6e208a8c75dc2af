package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/shelld"
)

// sessionFlags configure the shell sessions of /proc (gsvfs-proc(7)).
type sessionFlags struct {
	shell       string
	outputCap   int
	execTimeout time.Duration
	retention   time.Duration
	maxLive     int
}

func addSessionFlags(cmd *cobra.Command, s *sessionFlags) {
	d := shelld.DefaultConfig()
	cmd.Flags().StringVar(&s.shell, "session-shell", "", "login shell of /proc sessions (default $SHELL, else /bin/sh)")
	cmd.Flags().IntVar(&s.outputCap, "session-output", d.OutputCap, "bytes of output kept per session (the head is dropped)")
	cmd.Flags().DurationVar(&s.execTimeout, "exec-timeout", d.ExecTimeout, "time limit of a session's `exec`")
	cmd.Flags().DurationVar(&s.retention, "session-retention", d.Retention, "how long finished sessions stay in /proc")
	cmd.Flags().IntVar(&s.maxLive, "max-sessions", d.MaxLive, "sessions that may be live at once")
}

// args gives the flags back as a command line, for the background daemon.
func (s sessionFlags) args() []string {
	args := []string{"--session-output", strconv.Itoa(s.outputCap), "--exec-timeout", s.execTimeout.String(),
		"--session-retention", s.retention.String(), "--max-sessions", strconv.Itoa(s.maxLive)}
	if s.shell != "" {
		args = append(args, "--session-shell", s.shell)
	}
	return args
}

// check refuses what would mean "no limit" or "forget at once" by
// accident: negative times and counts.
func (s sessionFlags) check() error {
	if s.outputCap < 0 || s.maxLive < 0 || s.execTimeout < 0 || s.retention < 0 {
		return errors.New("--session-output, --exec-timeout, --session-retention and --max-sessions cannot be negative")
	}
	return nil
}

func (s sessionFlags) config() shelld.Config {
	return shelld.Config{Shell: s.shell, OutputCap: s.outputCap, ExecTimeout: s.execTimeout,
		Retention: s.retention, MaxLive: s.maxLive}
}
