// Command ninepbench measures a 9P2000.L server through one neutral client,
// github.com/hugelgupf/p9's, so that two servers (diod and gsvfs serve) can be
// compared on equal terms. bench/ninepbench.sh drives it.
//
// In a fresh directory it writes one file sequentially, one Twrite of the
// largest payload the negotiated msize allows at a time, then Tfsync; reads it
// back with Treads of the same size (nothing is dropped: the server's page
// cache is part of what is measured); creates many small files; then stats
// each of them the way a stat storm does, one Twalk from the directory fid,
// one Tgetattr and one Tclunk per file; and removes everything it made.
//
// hugelgupf/p9's client offers its msize in Tversion but ignores the msize
// the server answers with, so a server that negotiates down (diod caps at
// 64 KiB) would receive messages larger than it agreed to. ninepbench
// therefore asks the server first, on a short connection of its own, and
// gives the client the smaller of the two.
//
// The client also asks for "9P2000.L.Google.7" and steps down only when the
// server answers EAGAIN, which only gVisor-style servers do; diod answers EIO
// and the client gives up. So the connection handed to the client rewrites
// its Tversion to plain "9P2000.L", for every server alike, and the client
// speaks plain 9P2000.L everywhere. The same wrapper sends each message with
// one writev, as the client does on a bare *net.UnixConn.
//
// With -pid it reads the server's utime+stime from /proc/PID/stat around
// each phase and reports the server's CPU time per GB moved and per file.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// 9P message types the probe and plainConn look at, and other constants.
const (
	msgTversion = 100
	msgRversion = 101
	msgRlerror  = 7
	msgTattach  = 104
	noTag       = 0xffff
	atRemoveDir = 0x200 // AT_REMOVEDIR for Tunlinkat
	clockTicks  = 100   // USER_HZ: /proc/PID/stat counts in 1/100 s on Linux
)

type config struct {
	socket  string
	aname   string
	uname   string
	uid     uint32
	walk    []string
	msize   uint32
	size    int64
	files   int
	pid     int
	timeout time.Duration
}

// Result is what -json prints, one object on one line.
type Result struct {
	Socket           string  `json:"socket"`
	Aname            string  `json:"aname"`
	Walk             string  `json:"walk"`
	MsizeOffered     uint32  `json:"msize_offered"`
	MsizeNegotiated  uint32  `json:"msize_negotiated"`
	ServerVersion    string  `json:"server_version"`
	IOUnit           uint32  `json:"iounit"`
	Chunk            int     `json:"chunk"`
	Bytes            int64   `json:"bytes"`
	Files            int     `json:"files"`
	WriteSeconds     float64 `json:"write_s"`
	WriteMBps        float64 `json:"write_MBps"`
	ReadSeconds      float64 `json:"read_s"`
	ReadMBps         float64 `json:"read_MBps"`
	CreateSeconds    float64 `json:"create_s"`
	CreateOps        float64 `json:"create_ops"`
	StatSeconds      float64 `json:"stat_s"`
	StatOps          float64 `json:"stat_ops"`
	UnlinkSeconds    float64 `json:"unlink_s"`
	UnlinkOps        float64 `json:"unlink_ops"`
	Unlink           string  `json:"unlink_by"`
	ServerPID        int     `json:"server_pid,omitempty"`
	WriteCPUPerGB    float64 `json:"write_cpu_s_per_GB,omitempty"`
	ReadCPUPerGB     float64 `json:"read_cpu_s_per_GB,omitempty"`
	CreateCPUPerFile float64 `json:"create_cpu_us_per_file,omitempty"`
	StatCPUPerFile   float64 `json:"stat_cpu_us_per_file,omitempty"`
}

func main() {
	var cfg config
	var walk, size string
	var msize uint
	var asJSON bool
	flag.StringVar(&cfg.socket, "socket", "", "unix socket of the 9P2000.L server (required)")
	flag.StringVar(&cfg.aname, "aname", "", "attach name")
	flag.StringVar(&cfg.uname, "uname", "", "user name to attach as (the client itself sends none)")
	uid := flag.Int64("uid", -1, "numeric user id to attach as (n_uname); -1: none")
	flag.StringVar(&walk, "walk", "", "slash-separated path to walk from the attach root before working, e.g. workspaces")
	flag.UintVar(&msize, "msize", 1<<20, "msize to offer; the server may negotiate it down")
	flag.StringVar(&size, "size", "512M", "bytes to write and read back (suffixes K, M, G: powers of 1024)")
	flag.IntVar(&cfg.files, "files", 10000, "small files to create and stat")
	flag.IntVar(&cfg.pid, "pid", 0, "server process whose CPU time to measure (0: none)")
	flag.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "give up after this long (the client has no deadlines)")
	flag.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	flag.Parse()
	if cfg.socket == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: ninepbench -socket PATH [-aname NAME] [-uname NAME] [-uid N] [-walk PATH] [-msize N] [-size N] [-files N] [-pid PID] [-json]")
		os.Exit(2)
	}
	cfg.uid = uint32(p9.NoUID)
	if *uid >= 0 {
		cfg.uid = uint32(*uid)
	}
	for _, c := range strings.Split(walk, "/") {
		if c != "" {
			cfg.walk = append(cfg.walk, c)
		}
	}
	n, err := parseSize(size)
	if err != nil || n <= 0 {
		fatalf("bad -size %q", size)
	}
	cfg.size = n
	if msize < 4096 || msize > 1<<30 {
		fatalf("bad -msize %d", msize)
	}
	cfg.msize = uint32(msize)
	if cfg.files < 1 {
		fatalf("-files must be at least 1")
	}

	// hugelgupf/p9's client has no deadlines: a stuck server would hang us.
	time.AfterFunc(cfg.timeout, func() { fatalf("timed out after %v", cfg.timeout) })

	r, err := run(cfg)
	if err != nil {
		fatalf("%v", err)
	}
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return
	}
	fmt.Printf("server %s, version %s, msize offered %d, negotiated %d, iounit %d, %d bytes per Twrite/Tread\n",
		r.Socket, r.ServerVersion, r.MsizeOffered, r.MsizeNegotiated, r.IOUnit, r.Chunk)
	fmt.Printf("write  %8.1f MB/s  %d bytes in %.3f s, Tfsync included%s\n", r.WriteMBps, r.Bytes, r.WriteSeconds, cpuNote(r.WriteCPUPerGB, "s/GB"))
	fmt.Printf("read   %8.1f MB/s  %d bytes in %.3f s%s\n", r.ReadMBps, r.Bytes, r.ReadSeconds, cpuNote(r.ReadCPUPerGB, "s/GB"))
	fmt.Printf("create %8.0f ops/s %d files in %.3f s (walk, lcreate, write, clunk)%s\n", r.CreateOps, r.Files, r.CreateSeconds, cpuNote(r.CreateCPUPerFile, "µs/file"))
	fmt.Printf("stat   %8.0f ops/s %d files in %.3f s (walk, getattr, clunk)%s\n", r.StatOps, r.Files, r.StatSeconds, cpuNote(r.StatCPUPerFile, "µs/file"))
	fmt.Printf("unlink %8.0f ops/s %d files in %.3f s (%s)\n", r.UnlinkOps, r.Files, r.UnlinkSeconds, r.Unlink)
}

func cpuNote(v float64, unit string) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("; server CPU %.3g %s", v, unit)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ninepbench: "+format+"\n", args...)
	os.Exit(1)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// probeMsize sends one Tversion on its own connection and returns the msize
// and version string the server answers with.
func probeMsize(socket string, offer uint32) (uint32, string, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	const version = "9P2000.L"
	msg := make([]byte, 0, 32)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(4+1+2+4+2+len(version)))
	msg = append(msg, msgTversion)
	msg = binary.LittleEndian.AppendUint16(msg, noTag)
	msg = binary.LittleEndian.AppendUint32(msg, offer)
	msg = binary.LittleEndian.AppendUint16(msg, uint16(len(version)))
	msg = append(msg, version...)
	if _, err := c.Write(msg); err != nil {
		return 0, "", fmt.Errorf("Tversion: %w", err)
	}
	var hdr [7]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, "", fmt.Errorf("Rversion: %w", err)
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size < 7 || size > 1<<16 {
		return 0, "", fmt.Errorf("Rversion: bad size %d", size)
	}
	body := make([]byte, size-7)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, "", fmt.Errorf("Rversion: %w", err)
	}
	switch {
	case hdr[4] == msgRlerror && len(body) >= 4:
		return 0, "", fmt.Errorf("Tversion: server error %d", binary.LittleEndian.Uint32(body))
	case hdr[4] != msgRversion || len(body) < 6:
		return 0, "", fmt.Errorf("Tversion: unexpected reply type %d", hdr[4])
	}
	msize := binary.LittleEndian.Uint32(body)
	vlen := int(binary.LittleEndian.Uint16(body[4:]))
	if 6+vlen > len(body) {
		return 0, "", errors.New("Rversion: short version string")
	}
	return msize, string(body[6 : 6+vlen]), nil
}

// plainConn is the client's connection. It gathers the pieces the client
// writes for one message (header, fixed part, payload) and sends them with
// one writev once the message is complete, as net.Buffers.WriteTo does on a
// bare *net.UnixConn. It rewrites two messages on the way: Tversion asks for
// plain "9P2000.L", and Tattach carries the -uname and -uid given (the
// client sends an empty uname and no uid, which diod refuses). It holds on
// to the slices of one message until the message is complete: the client's
// send keeps them untouched until its WriteTo returns. Reads go to the
// *net.UnixConn, and SyscallConn lets the client use readv. (Embedding
// *net.UnixConn would hand net.Buffers.WriteTo the connection's own writev
// and skip Write.)
type plainConn struct {
	uc      *net.UnixConn
	uname   string
	uid     uint32
	pending net.Buffers
	have    int // bytes in pending
	size    int // size of the message being gathered; 0 until known
}

func (c *plainConn) Write(p []byte) (int, error) {
	c.pending = append(c.pending, p)
	c.have += len(p)
	if c.size == 0 {
		if c.have < 5 {
			return len(p), nil
		}
		c.size = int(binary.LittleEndian.Uint32(bytesOf(c.pending, 4)))
	}
	switch {
	case c.have < c.size:
		return len(p), nil
	case c.have > c.size:
		return 0, fmt.Errorf("client wrote %d bytes for a %d-byte message", c.have, c.size)
	}
	bufs := c.pending
	switch bytesOf(bufs, 5)[4] {
	case msgTversion:
		bufs = net.Buffers{plainVersion(bytesOf(bufs, c.size))}
	case msgTattach:
		m, err := withUser(bytesOf(bufs, c.size), c.uname, c.uid)
		if err != nil {
			return 0, err
		}
		bufs = net.Buffers{m}
	}
	c.pending, c.have, c.size = c.pending[:0], 0, 0
	if _, err := bufs.WriteTo(c.uc); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *plainConn) Read(p []byte) (int, error)            { return c.uc.Read(p) }
func (c *plainConn) Close() error                          { return c.uc.Close() }
func (c *plainConn) SyscallConn() (syscall.RawConn, error) { return c.uc.SyscallConn() }

// bytesOf returns the first n bytes of bufs, copied.
func bytesOf(bufs net.Buffers, n int) []byte {
	b := make([]byte, 0, n)
	for _, x := range bufs {
		if len(b)+len(x) >= n {
			return append(b, x[:n-len(b)]...)
		}
		b = append(b, x...)
	}
	return b
}

// plainVersion returns a Tversion like msg that asks for "9P2000.L".
func plainVersion(msg []byte) []byte {
	const version = "9P2000.L"
	out := binary.LittleEndian.AppendUint32(nil, uint32(13+len(version)))
	out = append(out, msg[4:11]...) // type, tag, msize
	out = binary.LittleEndian.AppendUint16(out, uint16(len(version)))
	return append(out, version...)
}

// withUser returns the Tattach msg with uname and n_uname replaced:
// size[4] type[1] tag[2] fid[4] afid[4] uname[s] aname[s] n_uname[4].
func withUser(msg []byte, uname string, uid uint32) ([]byte, error) {
	bad := errors.New("cannot parse the client's Tattach")
	if len(msg) < 17 {
		return nil, bad
	}
	i := 17 + int(binary.LittleEndian.Uint16(msg[15:])) // past uname
	if i+2 > len(msg) {
		return nil, bad
	}
	j := i + 2 + int(binary.LittleEndian.Uint16(msg[i:])) // past aname
	if j+4 != len(msg) {
		return nil, bad
	}
	out := append([]byte(nil), msg[:15]...)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(uname)))
	out = append(out, uname...)
	out = append(out, msg[i:j]...)
	out = binary.LittleEndian.AppendUint32(out, uid)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, nil
}

// payloadFor returns the Twrite/Tread payload hugelgupf/p9's client uses for
// msize: msize minus its largest fixed message part, rounded down to 512.
// The fixed part is not exported, but WithMessageSize refuses any msize not
// larger than it, which finds it.
func payloadFor(msize uint32) int {
	fixed := uint32(0)
	for m := uint32(1); m < 4096; m++ {
		if p9.WithMessageSize(m)(&p9.Client{}) == nil {
			fixed = m - 1
			break
		}
	}
	p := msize - fixed
	if p > 512 && p%512 != 0 {
		p -= p % 512
	}
	return int(p)
}

func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime is 14, stime 15
	if len(f) < 13 {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("cannot parse /proc/PID/stat")
	}
	return u + st, nil
}

// phase times fn and, with a server pid, the server's CPU seconds during it.
func phase(pid int, fn func() error) (secs, cpu float64, err error) {
	var t0 int64
	if pid > 0 {
		if t0, err = cpuTicks(pid); err != nil {
			return 0, 0, err
		}
	}
	start := time.Now()
	if err := fn(); err != nil {
		return 0, 0, err
	}
	secs = time.Since(start).Seconds()
	if pid > 0 {
		t1, err := cpuTicks(pid)
		if err != nil {
			return 0, 0, err
		}
		cpu = float64(t1-t0) / clockTicks
	}
	return secs, cpu, nil
}

func run(cfg config) (*Result, error) {
	r := &Result{Socket: cfg.socket, Aname: cfg.aname, Walk: strings.Join(cfg.walk, "/"),
		MsizeOffered: cfg.msize, Bytes: cfg.size, Files: cfg.files, ServerPID: cfg.pid}
	got, version, err := probeMsize(cfg.socket, cfg.msize)
	if err != nil {
		return nil, fmt.Errorf("msize probe: %w", err)
	}
	if got == 0 || got > cfg.msize {
		return nil, fmt.Errorf("server answered Tversion msize %d to an offer of %d", got, cfg.msize)
	}
	r.MsizeNegotiated, r.ServerVersion = got, version

	conn, err := net.Dial("unix", cfg.socket)
	if err != nil {
		return nil, err
	}
	client, err := p9.NewClient(&plainConn{uc: conn.(*net.UnixConn), uname: cfg.uname, uid: cfg.uid}, p9.WithMessageSize(got))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("version: %w", err)
	}
	defer client.Close()
	if v := client.Version(); v != 0 {
		r.ServerVersion = fmt.Sprintf("9P2000.L.Google.%d", v)
	}
	attach, err := client.Attach(cfg.aname)
	if err != nil {
		return nil, fmt.Errorf("attach %q: %w", cfg.aname, err)
	}
	defer attach.Close()
	root := attach
	if len(cfg.walk) > 0 {
		if _, root, err = attach.Walk(cfg.walk); err != nil {
			return nil, fmt.Errorf("walk %s: %w", r.Walk, err)
		}
		defer root.Close()
	}

	name := fmt.Sprintf("ninepbench.%d.%d", os.Getpid(), time.Now().UnixNano())
	if _, err := root.Mkdir(name, 0o755, p9.NoUID, p9.NoGID); err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", name, err)
	}
	_, dir, err := root.Walk([]string{name})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", name, err)
	}
	benchErr := bench(cfg, r, dir)
	// Clean up whatever is left, even after a failure.
	unlink(dir, "big", 0)
	if benchErr != nil {
		for i := 0; i < cfg.files; i++ {
			unlink(dir, smallName(i), 0)
		}
	}
	dir.Close()
	if err := unlink(root, name, atRemoveDir); err != nil && benchErr == nil {
		benchErr = fmt.Errorf("rmdir %s: %w", name, err)
	}
	return r, benchErr
}

// noUnlinkat is set once the server has refused Tunlinkat (diod 1.0.24
// does); from then on unlink walks to the file and sends Tremove, as the
// Linux client does.
var noUnlinkat bool

func unlink(dir p9.File, name string, flags uint32) error {
	if !noUnlinkat {
		err := dir.UnlinkAt(name, flags)
		if !errors.Is(err, linux.EOPNOTSUPP) && !errors.Is(err, linux.ENOSYS) {
			return err
		}
		noUnlinkat = true
	}
	_, f, err := dir.Walk([]string{name})
	if err != nil {
		return err
	}
	// Tremove is on the client's file type, not on the p9.File interface.
	rf, ok := f.(interface{ Remove() error })
	if !ok {
		f.Close()
		return errors.New("the client cannot send Tremove")
	}
	return rf.Remove()
}

func smallName(i int) string { return fmt.Sprintf("f%06d", i) }

// create opens a new file name in dir: Tlcreate turns the fid it is sent
// on into the new file, so it goes on a clone of the directory's fid.
func create(dir p9.File, name string, mode p9.FileMode) (p9.File, uint32, error) {
	_, f, err := dir.Walk(nil)
	if err != nil {
		return nil, 0, err
	}
	_, _, iounit, err := f.Create(name, p9.WriteOnly, mode, p9.NoUID, p9.NoGID)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, iounit, nil
}

func bench(cfg config, r *Result, dir p9.File) error {
	// Sequential write, then Tfsync.
	f, iounit, err := create(dir, "big", 0o644)
	if err != nil {
		return fmt.Errorf("create big: %w", err)
	}
	chunk := payloadFor(r.MsizeNegotiated)
	if iounit > 0 && int(iounit) < chunk {
		chunk = int(iounit)
	}
	r.IOUnit, r.Chunk = iounit, chunk
	buf := make([]byte, chunk)
	rng := rand.NewChaCha8([32]byte{9, 'P'})
	rng.Read(buf)
	var cpu float64
	r.WriteSeconds, cpu, err = phase(cfg.pid, func() error {
		for off := int64(0); off < cfg.size; {
			b := buf[:min(int64(chunk), cfg.size-off)]
			n, err := f.WriteAt(b, off)
			if err != nil {
				return fmt.Errorf("write big at %d: %w", off, err)
			}
			if n == 0 {
				return fmt.Errorf("write big at %d: wrote nothing", off)
			}
			off += int64(n)
		}
		return f.FSync()
	})
	f.Close()
	if err != nil {
		return err
	}
	r.WriteMBps = float64(cfg.size) / r.WriteSeconds / 1e6
	r.WriteCPUPerGB = cpu / (float64(cfg.size) / 1e9)

	// Sequential read of the same file.
	_, f, err = dir.Walk([]string{"big"})
	if err != nil {
		return fmt.Errorf("walk big: %w", err)
	}
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		f.Close()
		return fmt.Errorf("open big: %w", err)
	}
	var total int64
	r.ReadSeconds, cpu, err = phase(cfg.pid, func() error {
		for {
			n, err := f.ReadAt(buf, total)
			total += int64(n)
			if err == io.EOF || (err == nil && n == 0) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read big at %d: %w", total, err)
			}
		}
	})
	f.Close()
	if err != nil {
		return err
	}
	if total != cfg.size {
		return fmt.Errorf("read back %d bytes of %d", total, cfg.size)
	}
	r.ReadMBps = float64(cfg.size) / r.ReadSeconds / 1e6
	r.ReadCPUPerGB = cpu / (float64(cfg.size) / 1e9)
	if err := unlink(dir, "big", 0); err != nil {
		return fmt.Errorf("unlink big: %w", err)
	}

	// Small files: Twalk (clone), Tlcreate, Twrite, Tclunk each.
	content := []byte("a small file\n")
	r.CreateSeconds, cpu, err = phase(cfg.pid, func() error {
		for i := 0; i < cfg.files; i++ {
			f, _, err := create(dir, smallName(i), 0o644)
			if err != nil {
				return fmt.Errorf("create %s: %w", smallName(i), err)
			}
			if _, err := f.WriteAt(content, 0); err != nil {
				f.Close()
				return fmt.Errorf("write %s: %w", smallName(i), err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("clunk %s: %w", smallName(i), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.CreateOps = float64(cfg.files) / r.CreateSeconds
	r.CreateCPUPerFile = cpu / float64(cfg.files) * 1e6

	// Stat storm: Twalk from the directory fid, Tgetattr, Tclunk each.
	r.StatSeconds, cpu, err = phase(cfg.pid, func() error {
		for i := 0; i < cfg.files; i++ {
			_, f, err := dir.Walk([]string{smallName(i)})
			if err != nil {
				return fmt.Errorf("walk %s: %w", smallName(i), err)
			}
			_, _, attr, err := f.GetAttr(p9.AttrMaskAll)
			f.Close()
			if err != nil {
				return fmt.Errorf("getattr %s: %w", smallName(i), err)
			}
			if attr.Size != uint64(len(content)) {
				return fmt.Errorf("getattr %s: size %d, want %d", smallName(i), attr.Size, len(content))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.StatOps = float64(cfg.files) / r.StatSeconds
	r.StatCPUPerFile = cpu / float64(cfg.files) * 1e6

	r.UnlinkSeconds, _, err = phase(cfg.pid, func() error {
		for i := 0; i < cfg.files; i++ {
			if err := unlink(dir, smallName(i), 0); err != nil {
				return fmt.Errorf("unlink %s: %w", smallName(i), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.UnlinkOps = float64(cfg.files) / r.UnlinkSeconds
	r.Unlink = "Tunlinkat"
	if noUnlinkat {
		r.Unlink = "Twalk+Tremove"
	}
	return nil
}
