// Command fsx runs the fsmodel checker on one file, for the integration
// tests that cannot run it in their own process: as an ordinary user on
// that user's mount, and inside the vm9p guest on the kernel's 9P client
// (built static, CGO_ENABLED=0). It prints the run's summary and exits 0,
// or prints the failure (seed, operation, trail, replay line) and exits 1.
//
//	fsx -file MNT/f [-disk DISK/f | -ask DIR] [-seed N] [-ops N] [-within 1s] [-open-within 0]
//	    [-without KIND,... -why TEXT]
//
// -disk makes it the second actor too: it changes DISK/f, the same file
// as the path under test sees it, between operations. -ask DIR has
// another process make those changes, asked through DIR (where the disk
// is out of reach: the host's, from the VM); see fsmodel.AskDisk. The seed and the
// count default to $GSVFS_FSX_SEED and $GSVFS_FSX_OPS, then to a seed
// from the clock and 20,000.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gsvfs/gsvfs/internal/fsmodel"
)

func main() {
	file := flag.String("file", "", "the file under test (created, emptied)")
	disk := flag.String("disk", "", "the same file on its disk, for the second actor; none if empty")
	ask := flag.String("ask", "", "a directory where another process answers the second actor's changes (fsmodel.Answer)")
	seed := flag.Uint64("seed", envUint("GSVFS_FSX_SEED", uint64(time.Now().UnixNano())), "the run's seed")
	ops := flag.Int("ops", int(envUint("GSVFS_FSX_OPS", 20000)), "operations")
	within := flag.Duration("within", time.Second, "how soon a held descriptor must see the actor's change")
	replay := flag.String("replay", "", "how a failure says to run it again (the test's command line)")
	openWithin := flag.Duration("open-within", 0, "how soon a fresh open must see it; 0: at once (close-to-open)")
	without := flag.String("without", "", "kinds of operation to leave out, comma-separated (mapread,mapwrite)")
	why := flag.String("why", "", "why they are left out, for the summary")
	flag.Parse()
	if *file == "" {
		fmt.Fprintln(os.Stderr, "fsx: -file is required")
		os.Exit(2)
	}
	cfg := fsmodel.Config{Seed: *seed, Ops: *ops, Open: fsmodel.OpenPath(*file), Within: *within, OpenWithin: *openWithin, Log: os.Stdout, Replay: *replay}
	for _, kind := range strings.FieldsFunc(*without, func(r rune) bool { return r == ',' }) {
		if cfg.Without == nil {
			cfg.Without = map[string]string{}
		}
		cfg.Without[kind] = *why
	}
	switch {
	case *disk != "":
		cfg.Disk = fsmodel.PathDisk(*disk)
	case *ask != "":
		cfg.Disk = &fsmodel.AskDisk{Dir: *ask}
	}
	if _, err := fsmodel.Run(cfg); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

// envUint is $name as a number (0x for hex), or def.
func envUint(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 0, 64); err == nil {
		return v
	}
	return def
}
