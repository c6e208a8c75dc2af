package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// deviceRequests reads a gateway's /sys/stats count of the requests it
// sent each device, by type ("device ID requests TYPE N ...").
func deviceRequests(t *testing.T, stats string) map[string]map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	return parseDeviceRequests(string(b))
}

// parseDeviceRequests is deviceRequests of the text of /sys/stats (or
// of some of its lines).
func parseDeviceRequests(text string) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "device" || f[2] != "requests" {
			continue
		}
		byType := map[string]int64{}
		for i := 3; i+1 < len(f); i += 2 {
			byType[f[i]], _ = strconv.ParseInt(f[i+1], 10, 64)
		}
		out[f[1]] = byType
	}
	return out
}

// requestsSince is what after counts more than before, by type, less
// the flushes that probe a quiet link.
func requestsSince(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for typ, n := range after {
		if typ != "flush" && n != before[typ] {
			d[typ] = n - before[typ]
		}
	}
	return d
}

// total is the sum of the counts.
func total(counts map[string]int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// deviceNotices reads a gateway's /sys/stats count of the batches of
// change notices each device sent ("device ID online ... notices N").
func deviceNotices(t *testing.T, stats string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "device" && f[len(f)-2] == "notices" {
			out[f[1]], _ = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
	}
	return out
}
