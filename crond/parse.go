package crond

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// zonePrefix starts a line whose schedule is read in a named time zone:
// CRON_TZ=Europe/Paris 0 9 * * * CMD. It applies to its own line only.
const zonePrefix = "CRON_TZ="

// parse reads a crontab: each line a schedule and a command.
func parse(text string, now time.Time) (jobs []*job, bad []string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		j, err := parseLine(line, now)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%d: %s: %v", n, line, err))
			continue
		}
		if seen[j.id]++; seen[j.id] > 1 {
			j.id = fmt.Sprintf("%s-%d", j.id, seen[j.id])
		}
		jobs = append(jobs, j)
	}
	return jobs, bad
}

func parseLine(line string, now time.Time) (*job, error) {
	zone, rest, err := lineZone(line)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, fmt.Errorf("no schedule after %s: the zone applies to the line it starts", zonePrefix+zone.String())
	}
	n := 5 // minute hour day month weekday
	switch fields[0] {
	case "@every", "@at", "@in":
		n = 2
	default:
		if strings.HasPrefix(fields[0], "@") {
			n = 1
		} else if strings.Contains(fields[0], "=") {
			return nil, fmt.Errorf("variable lines are not supported (only a %s prefix, on the line it applies to)", zonePrefix)
		}
	}
	if len(fields) <= n {
		return nil, fmt.Errorf("no command after the schedule")
	}
	spec, command := strings.Join(fields[:n], " "), afterFields(rest, n)
	if line != rest {
		spec = zonePrefix + zone.String() + " " + spec
	}
	j := &job{id: jobID(spec, command), spec: spec, command: command, zone: zone, rec: &record{}}
	return j, j.schedule(fields[:n], now)
}

// lineZone splits a CRON_TZ= prefix off line: its zone (nil for the
// daemon's local time) and the rest of the line.
func lineZone(line string) (*time.Location, string, error) {
	if !strings.HasPrefix(line, zonePrefix) {
		return nil, line, nil
	}
	name, rest := strings.TrimPrefix(line, zonePrefix), ""
	if i := strings.IndexAny(name, " \t"); i >= 0 {
		name, rest = name[:i], name[i:]
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || name == "Local" {
		return nil, "", fmt.Errorf("%s%s: unknown time zone %q (want an IANA name such as Europe/Paris or UTC)", zonePrefix, name, name)
	}
	return loc, strings.TrimSpace(rest), nil
}

// schedule sets how j runs from its schedule's fields, read at now.
func (j *job) schedule(fields []string, now time.Time) error {
	switch fields[0] {
	case "@reboot":
		j.kind = atStart
		return nil
	case "@at":
		at, err := parseAt(fields[1], j.location())
		j.kind, j.next = onceAt, at
		return err
	case "@in":
		d, err := parseDuration(fields[1])
		j.kind, j.next = onceIn, now.Add(d)
		return err
	case "@every":
		d, err := parseDuration(fields[1])
		j.sched = cron.Every(d)
		j.next = j.sched.Next(now)
		return err
	}
	sched, err := cron.ParseStandard(strings.Join(fields, " "))
	if err != nil {
		return err
	}
	if s, ok := sched.(*cron.SpecSchedule); ok && j.zone != nil {
		s.Location = j.zone
	}
	j.sched, j.next = sched, sched.Next(now)
	return nil
}

// atLayouts are the times @at takes: ISO 8601 to the minute or second,
// with a zone (Z, +02:00) or without, then in the line's zone.
var atLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

func parseAt(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range atLayouts {
		if t, err := time.Parse(layout+"Z07:00", s); err == nil {
			return t, nil
		}
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("@at %q: want a time such as 2026-12-01T09:00, 2026-12-01T09:00:30Z or 2026-12-01T09:00+02:00", s)
}

// parseDuration is Go's duration syntax with days in front: 1d, 1d12h,
// 90s. A day is 24 hours.
func parseDuration(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n > 10000 {
			return 0, fmt.Errorf("duration %q: want a count of days such as 1d or 2d12h", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want one such as 90s, 30m, 1h30m, 1d or 1d12h", s)
	}
	return days + d, nil
}

// afterFields is what follows the first n fields of line, its spacing
// kept: a command is given to the shell as written.
func afterFields(line string, n int) string {
	rest := line
	for range n {
		rest = strings.TrimLeft(rest, " \t")
		rest = rest[strings.IndexAny(rest+" ", " \t"):]
	}
	return strings.TrimSpace(rest)
}

// jobID names a job after its command's first word and the hash of its
// schedule and command, so the name stays while other lines change, and
// while the line's place in the file or its schedule's spacing does.
func jobID(spec, command string) string {
	word := filepath.Base(strings.Fields(command)[0])
	var b strings.Builder
	for _, c := range strings.ToLower(word) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	name := b.String()
	if name == "" {
		name = "job"
	}
	sum := sha256.Sum256([]byte(spec + "\x00" + command))
	return name[:min(len(name), 16)] + "-" + hex.EncodeToString(sum[:2])
}
