package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/internal/client"
)

func psCommand() *cobra.Command {
	var (
		f      procFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ps [--root DIR | --server ADDR | --mount DIR] [--json]",
		Short: "list the shell sessions of /proc",
		Long: `ps lists the sessions of a running daemon's /proc: id, status, command,
age and the output kept so far; --json prints their status objects as one
JSON array. See gsvfs-ps(1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			list, err := listSessions(c)
			if err != nil {
				return err
			}
			if asJSON {
				return writeSessionsJSON(cmd.OutOrStdout(), list)
			}
			return writeSessionsTable(cmd.OutOrStdout(), list, time.Now())
		},
	}
	addProcFlags(cmd, &f)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions' status objects as one JSON array")
	return cmd
}

// listSessions reads the status of every session, in natural order of
// their names. A session that goes away while they are read is left out.
func listSessions(c client.Proc) ([]client.SessionStatus, error) {
	names, err := c.Sessions()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(names, naturalCompare)
	list := make([]client.SessionStatus, 0, len(names))
	for _, id := range names {
		st, err := client.ReadStatus(c, id)
		if errors.Is(err, client.ErrNoSession) {
			continue
		}
		if err != nil {
			return nil, err
		}
		list = append(list, st)
	}
	return list, nil
}

// writeSessionsJSON prints the status objects as the daemon sent them.
func writeSessionsJSON(w io.Writer, list []client.SessionStatus) error {
	raw := make([]json.RawMessage, len(list))
	for i, st := range list {
		raw[i] = st.Raw
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // commands are shown to people, not put into HTML
	return enc.Encode(raw)
}

// writeSessionsTable prints one aligned line per session under a header.
func writeSessionsTable(w io.Writer, list []client.SessionStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCOMMAND\tAGE\tOUTPUT")
	for _, st := range list {
		age := "-"
		if !st.StartedAt.IsZero() {
			age = humanAge(now.Sub(st.StartedAt))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(st.ID), st.Status.Status,
			printable(cmp.Or(st.Command, "-")), age, humanBytes(st.Output))
	}
	return tw.Flush()
}

// printable keeps a field on its line and in its column: a command may
// hold tabs or other control characters.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// humanAge is a duration in its largest whole unit: 42s, 5m, 3h, 2d.
func humanAge(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// humanBytes is a size as ls -h shows it: 512, 1.2K, 34K, 5.0M.
func humanBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v, unit := float64(n), 0
	for v >= 1024 && unit < len("KMGTPE") {
		v /= 1024
		unit++
	}
	suffix := "KMGTPE"[unit-1]
	if s := fmt.Sprintf("%.1f", v); len(s) <= 3 { // one digit before the point
		return s + string(suffix)
	}
	return fmt.Sprintf("%.0f%c", v, suffix)
}

// naturalCompare orders names with their runs of digits compared as
// numbers, so session 9 comes before session 10. Names it finds equal
// (7 and 07) keep the plain order, so the order is total.
func naturalCompare(a, b string) int {
	return cmp.Or(compareRuns(a, b), strings.Compare(a, b))
}

// compareRuns compares a and b run by run: digits by number, any other
// byte by its value.
func compareRuns(a, b string) int {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da == "" || db == "" {
			if c := cmp.Compare(a[0], b[0]); c != 0 {
				return c
			}
			a, b = a[1:], b[1:]
			continue
		}
		na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
		if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
			return c
		}
		a, b = a[len(da):], b[len(db):]
	}
	return cmp.Compare(len(a), len(b))
}

// leadingDigits is the run of ASCII digits s starts with.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
