package main

import (
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

func (s sessionFlags) config() shelld.Config {
	return shelld.Config{Shell: s.shell, OutputCap: s.outputCap, ExecTimeout: s.execTimeout,
		Retention: s.retention, MaxLive: s.maxLive}
}
