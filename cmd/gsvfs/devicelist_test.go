//go:build linux

package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// `ls -la /mnt` of a gateway with devices a round trip away, the first
// since they joined, through a mount of the gateway's socket: it lists
// every device with its mode, asks each online device at most one
// request, and asks an offline one nothing. Before, the gateway asked
// the devices' roots one after another on the goroutine that read the
// mount's connection: the mount heard nothing for devices × round trip,
// gave the connection up, and ls failed with EIO.
func TestListingOfDevicesAtDelay(t *testing.T) {
	const online, delay = 5, 100 * time.Millisecond
	gw, sock := startServe(t, "--listen", "tls:127.0.0.1:0")
	dial := startDelayProxy(t, "127.0.0.1:0", "127.0.0.1:"+gatewayPort(t, gw.Root), delay)
	var ids []string
	devs := map[string]*daemon{}
	for i := range online + 1 {
		id := fmt.Sprintf("d%d", i)
		root := filepath.Join(t.TempDir(), id)
		d := launch(t, &daemon{Root: root}, "serve", "--root", root, "--device", id, "--join", joinToken(t, gw.Root, id, dial))
		t.Cleanup(func() { d.stop(t) })
		ids, devs[id] = append(ids, id), d
	}
	m := mountServer(t, sock.String())
	for _, id := range ids { // joined through the proxy, later
		testenv.WaitFor(t, 60*time.Second, id+" joined", func() bool {
			_, err := os.Stat(m.Path("sys/devices/" + id))
			return err == nil
		})
		waitOnline(t, m.Mnt, id, true, 30*time.Second)
	}
	gone := ids[online]
	// Its root seen online: /mnt names a device a moment after
	// /sys/devices says it is online.
	testenv.WaitFor(t, 30*time.Second, gone+"'s root under /mnt", func() bool {
		return exec.Command("stat", m.Path("mnt/"+gone)).Run() == nil
	})
	devs[gone].stop(t)
	waitOnline(t, m.Mnt, gone, false, 30*time.Second)

	stats := m.Path("sys/stats")
	// The devices' notices of their own start are over before the
	// listing: one may change a root while it is listed.
	quiet := func() bool {
		a := deviceNotices(t, stats)
		time.Sleep(time.Second)
		return maps.Equal(a, deviceNotices(t, stats))
	}
	testenv.WaitFor(t, 30*time.Second, "the devices' notices quiet", quiet)
	before := deviceRequests(t, stats)
	out := testenv.Run(t, m.Mnt, "ls", "-la", m.Path("mnt"))
	after := deviceRequests(t, stats)
	for _, id := range ids {
		if !regexp.MustCompile(`(?m)^dr-x------ .* ` + id + `$`).MatchString(out) {
			t.Errorf("ls -la /mnt shows no directory %s of the gateway's owner:\n%s", id, out)
		}
		want := int64(1)
		if id == gone {
			want = 0
		}
		if n := total(requestsSince(before[id], after[id])); n > want {
			t.Errorf("ls -la /mnt sent %s %d requests (%v), want at most %d", id, n, requestsSince(before[id], after[id]), want)
		}
	}
}
