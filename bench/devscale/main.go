// Command devscale joins many devices to one running gateway and
// measures what they cost it: its resident memory per idle device, how
// long `ls -l /sys/devices` takes through its mount, what the first
// `ls -la /mnt` costs (its time and the requests it sent the devices),
// and whether devices joining and leaving slow a stat on another device.
//
//	devscale -root GATEWAY_STATE -mnt GATEWAY_MOUNT -pid GATEWAY_PID -n 100 [-dial ADDR]
//
// The devices run in this process, each with its own key, token and TLS
// link, serving a one-file tree. They dial the gateway at -dial (a delay
// proxy before it, say), else where it listens. Run by
// bench/devicebench.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gsvfs/gsvfs/devices"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

func main() {
	root := flag.String("root", "", "the gateway's state directory")
	mnt := flag.String("mnt", "", "where the gateway's tree is mounted")
	pid := flag.Int("pid", 0, "the gateway daemon's pid")
	n := flag.Int("n", 100, "devices to join")
	dial := flag.String("dial", "", "the address the devices dial (default: where the gateway listens)")
	flag.Parse()
	private := filepath.Join(*root, "private")
	store, err := devices.OpenStore(private)
	check(err)
	gwID, err := devices.LoadIdentity(private)
	check(err)
	addrs, err := os.ReadFile(filepath.Join(private, "listen"))
	check(err)
	addr := strings.Fields(string(addrs))[0]
	if *dial != "" {
		addr = *dial
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	before := rss(*pid)
	tmp, err := os.MkdirTemp("", "devscale")
	check(err)
	defer os.RemoveAll(tmp)
	join := func(i int) context.CancelFunc {
		id := fmt.Sprintf("d%03d", i)
		ident, err := devices.LoadIdentity(filepath.Join(tmp, id))
		check(err)
		tok, err := store.Issue(addr, gwID.Fingerprint, id, devices.RoleDevice, time.Hour)
		check(err)
		tree := vfs.NewStaticDir(map[string]vfs.Node{"hello": vfs.NewTextFile([]byte(id + "\n"))})
		srv := ninep.NewServer(tree, ninep.ServerOptions{Log: quiet})
		ctx, cancel := context.WithCancel(context.Background())
		go devices.Join(ctx, devices.JoinOptions{Token: tok, Device: id, Identity: ident, Serve: srv.ServeConn, Log: quiet})
		return func() { cancel(); srv.Close(context.Background()) }
	}
	stops := make([]context.CancelFunc, *n+1)
	for i := 1; i <= *n; i++ {
		stops[i] = join(i)
	}
	start := time.Now()
	for online(*mnt) < *n {
		if time.Since(start) > 2*time.Minute {
			log.Fatalf("only %d of %d devices online after 2 minutes", online(*mnt), *n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	joined := time.Since(start)
	time.Sleep(2 * time.Second) // let the links go idle
	after := rss(*pid)

	// The first listing of /mnt with attributes: nothing has asked the
	// devices' roots yet on these links.
	sent := deviceRequests(*mnt)
	t0 := time.Now()
	if out, err := exec.Command("ls", "-la", filepath.Join(*mnt, "mnt")).CombinedOutput(); err != nil {
		log.Fatalf("ls -la /mnt: %v: %s", err, out)
	}
	lsMnt := time.Since(t0)
	lsMntSent, lsMntMost := sentSince(sent, deviceRequests(*mnt))

	var ls []time.Duration
	for range 7 {
		t0 := time.Now()
		check(exec.Command("ls", "-l", filepath.Join(*mnt, "sys/devices")).Run())
		ls = append(ls, time.Since(t0))
	}

	target := filepath.Join(*mnt, "mnt/d001/hello")
	statQuiet := stats(target, 300, nil)
	churn := func(stop <-chan struct{}) {
		if *n < 2 {
			return // no device but the one read
		}
		// Devices 2..n leave and join in turn; device 1 is the one read.
		for i := 2; ; i = (i-1)%(*n-1) + 2 {
			select {
			case <-stop:
				return
			default:
			}
			stops[i]()
			stops[i] = join(i)
			time.Sleep(50 * time.Millisecond)
		}
	}
	statChurn := stats(target, 300, churn)

	fmt.Printf("| %d devices joined | in %.1f s |\n", *n, joined.Seconds())
	fmt.Printf("| gateway resident memory per idle device | %.2f MiB (%d -> %d MiB) |\n",
		float64(after-before)/float64(*n)/1024, before/1024, after/1024)
	fmt.Printf("| `ls -l /sys/devices`, median of 7 | %.1f ms |\n", ms(median(ls)))
	fmt.Printf("| first `ls -la /mnt` of %d devices | %.1f ms, %d requests to them but probes (at most %d to one) |\n", *n, ms(lsMnt), lsMntSent, lsMntMost)
	fmt.Printf("| reading a device's file, p50 / p99, quiet | %.2f / %.2f ms |\n", ms(pct(statQuiet, 50)), ms(pct(statQuiet, 99)))
	fmt.Printf("| the same while other devices leave and join | %.2f / %.2f ms |\n", ms(pct(statChurn, 50)), ms(pct(statChurn, 99)))
	for i := 1; i <= *n; i++ {
		stops[i]()
	}
}

// stats times count reads of p, each an open and a read on the device
// (the kernel caches a remote file's attributes, not its opens), with
// background running meanwhile if given.
func stats(p string, count int, background func(stop <-chan struct{})) []time.Duration {
	stop := make(chan struct{})
	if background != nil {
		go background(stop)
	}
	defer close(stop)
	var out []time.Duration
	for range count {
		t0 := time.Now()
		_, err := os.ReadFile(p)
		check(err)
		out = append(out, time.Since(t0))
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

func online(mnt string) int {
	ents, _ := os.ReadDir(filepath.Join(mnt, "sys/devices"))
	k := 0
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(mnt, "sys/devices", e.Name()))
		if strings.Contains(string(b), `"online":true`) && e.Name() != "gsv" {
			k++
		}
	}
	return k
}

// deviceRequests is the requests the gateway has sent each device, from
// its /sys/stats, less the flushes: a link that has been silent a while
// is probed with one, whatever the workload.
func deviceRequests(mnt string) map[string]int64 {
	b, err := os.ReadFile(filepath.Join(mnt, "sys/stats"))
	check(err)
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "device" || f[2] != "requests" {
			continue
		}
		for i := 3; i+1 < len(f); i += 2 {
			var n int64
			fmt.Sscan(f[i+1], &n)
			if f[i] != "flush" {
				out[f[1]] += n
			}
		}
	}
	return out
}

// sentSince is how many requests went to the devices between two
// readings of deviceRequests, in all and at most to one.
func sentSince(before, after map[string]int64) (all, most int64) {
	for id, n := range after {
		d := n - before[id]
		all += d
		most = max(most, d)
	}
	return all, most
}

// rss is a process's resident memory in KiB.
func rss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int
			fmt.Sscan(f[1], &kb)
			return kb
		}
	}
	return 0
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
