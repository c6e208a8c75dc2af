package devices

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// write writes data to /sys/devices/id as `echo data > file` does, in
// one write, and returns the write's error.
func writeDesc(t *testing.T, g *Gateway, id, data string) error {
	t.Helper()
	ctx := context.Background()
	f, err := g.DevicesDir().Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.Open(ctx, os.O_WRONLY|os.O_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.WriteAt(ctx, []byte(data), 0)
	return err
}

func TestDescriptionWrites(t *testing.T) {
	gw := startGateway(t)
	startDevice(t, gw.token(t, "lap"), "lap")
	eventually(t, "lap online", func() bool { return gw.describeOf(t, "lap").Online })

	if err := writeDesc(t, gw.Gateway, "lap", `{"description":"the laptop"}`+"\n"); err != nil {
		t.Fatalf("writing the description: %v", err)
	}
	if got := gw.describeOf(t, "lap").Description; got != "the laptop" {
		t.Errorf("description: %q", got)
	}
	for _, c := range []struct {
		data string
		want syscall.Errno
	}{
		{`{"platform":"windows"}`, syscall.EPERM},
		{`{"description":"x","online":false}`, syscall.EPERM},
		{`{"description":`, 0}, // incomplete: more may come
		{`not json`, syscall.EINVAL},
		{`["description"]`, syscall.EINVAL},
		{`{"description":7}`, syscall.EINVAL},
		{`{"description":"a"} {"description":"b"}`, syscall.EINVAL},
	} {
		err := writeDesc(t, gw.Gateway, "lap", c.data)
		if got := vfs.Errno(err); err != nil && got != c.want || err == nil && c.want != 0 {
			t.Errorf("write %q: got %v, want %v", c.data, err, c.want)
		}
	}
	if got := gw.describeOf(t, "lap").Description; got != "the laptop" {
		t.Errorf("description after refused writes: %q", got)
	}

	// Read, edit, write back: the unchanged facts are no change.
	b := gw.describe("lap")
	edited := strings.Replace(string(b), `"the laptop"`, `"edited"`, 1)
	if err := writeDesc(t, gw.Gateway, "lap", edited); err != nil {
		t.Errorf("writing back the descriptor with a new description: %v", err)
	}
	// Kept in the store, for the next start.
	if got := gw.store.Description("lap"); got != "edited" {
		t.Errorf("stored description: %q", got)
	}
	var d descriptor
	if err := json.Unmarshal(gw.describe("lap"), &d); err != nil || d.Description != "edited" {
		t.Errorf("descriptor after edit: %+v, %v", d, err)
	}
	// The gateway's own entry takes a description too.
	if err := writeDesc(t, gw.Gateway, "gw", `{"description":"the gateway"}`); err != nil {
		t.Errorf("describing the gateway itself: %v", err)
	}
	if got := gw.describeOf(t, "gw"); got.Description != "the gateway" || got.Mount != "/" {
		t.Errorf("the gateway's own descriptor: %+v", got)
	}
}
