package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/devices"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// defaultDevice is a daemon's device id unless --device says otherwise.
const defaultDevice = "gsv"

// splitTLS separates the tls:HOST:PORT listeners, which devices join,
// from the 9P listeners.
func splitTLS(listen []string) (tlsAddrs, plain []string) {
	for _, s := range listen {
		if addr, ok := strings.CutPrefix(s, "tls:"); ok {
			tlsAddrs = append(tlsAddrs, addr)
		} else {
			plain = append(plain, s)
		}
	}
	return tlsAddrs, plain
}

// startLinks opens the TLS listeners (devices join there, and gateways
// added with `gsvfs device add` dial there) and, with --join, keeps the
// daemon joined to its gateway. Every link a gateway uses is served the
// export: the tree less the refused paths and the daemon's local ones
// (the tree's Export). It returns the listeners' addresses, and a
// channel that yields why the joining ended if the gateway refused this
// device for good (nil without --join).
func startLinks(ctx context.Context, root string, f serveFlags, tlsAddrs []string, t *gsvfsd.Tree) ([]string, <-chan error, error) {
	id := t.Gateway.Identity()
	export := ninep.NewServer(t.Export, ninep.ServerOptions{Log: slog.Default(), Fsid: t.Fsid})
	context.AfterFunc(ctx, func() { stopNinep(export) })
	t.Gateway.ServeGateways(export.ServeConn)
	t.AddEdge("9p links to gateways", export)
	var where, advertise []string
	for _, addr := range tlsAddrs {
		lc := net.ListenConfig{}
		l, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listen on tls:%s: %w", addr, err)
		}
		context.AfterFunc(ctx, func() { l.Close() })
		go t.Gateway.Serve(l)
		where = append(where, "tls:"+l.Addr().String())
		t.AddCapability("devices.gateway")
		a, loopback := advertised(l.Addr().String(), routableIPs())
		if loopback {
			slog.Warn("only a loopback address is known for this listener: tokens made without --addr reach it from this machine alone; give gsvfs device token --addr HOST:PORT",
				"listen", l.Addr().String())
		}
		advertise = append(advertise, a)
	}
	if len(advertise) > 0 {
		// `gsvfs device token` puts the first address in the tokens it makes.
		if err := os.WriteFile(filepath.Join(gsvfsd.PrivateDir(root), "listen"), []byte(strings.Join(advertise, "\n")+"\n"), 0o600); err != nil {
			return nil, nil, err
		}
	}
	if f.join == "" {
		return where, nil, nil
	}
	tok, err := devices.ParseToken(f.join)
	if err == nil {
		err = tok.CheckRole(devices.RoleDevice)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--join: %w", err)
	}
	t.AddCapability("devices.joined")
	ended := make(chan error, 1)
	go func() {
		err := devices.Join(ctx, devices.JoinOptions{Token: tok, Device: f.device, Identity: id,
			Facts: t.Facts(), Serve: export.ServeConn, Log: slog.Default()})
		if err != nil {
			ended <- exitError{fmt.Errorf("--join: the gateway at %s will not take device %s: %w", tok.Addr, f.device, err), exitRefused}
		}
	}()
	return where, ended, nil
}

// advertised is the address tokens name for a listener bound at bound:
// its own host when it names one, else the first of ips (the machine's
// non-loopback addresses, IPv4 first), since a host name may resolve to
// loopback on the device's side. loopback reports that the address
// reaches this machine alone.
func advertised(bound string, ips []net.IP) (addr string, loopback bool) {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return bound, false
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsUnspecified() {
		switch {
		case len(ips) > 0:
			ip = ips[0]
		case ip.To4() != nil:
			ip = net.IPv4(127, 0, 0, 1)
		default:
			ip = net.IPv6loopback
		}
		host = ip.String()
	}
	return net.JoinHostPort(host, port), ip != nil && ip.IsLoopback()
}

// routableIPs are the addresses of this machine's interfaces that are up
// and not loopback, unicast beyond the link, IPv4 first.
func routableIPs() []net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var v4, v6 []net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			switch {
			case !ok || !ipn.IP.IsGlobalUnicast():
			case ipn.IP.To4() != nil:
				v4 = append(v4, ipn.IP)
			default:
				v6 = append(v6, ipn.IP)
			}
		}
	}
	return append(v4, v6...)
}

// joinEnv is the environment variable a join token may come in: unlike
// --join, it is not shown by ps to other users.
const joinEnv = "GSVFS_JOIN"

// joinSecret is the join token of --join, --join-file or $GSVFS_JOIN (at
// most one of them), or "" for none. The variable is taken out of the
// environment, so nothing the daemon starts inherits it.
func joinSecret(flag, file string) (string, error) {
	env, fromEnv := os.LookupEnv(joinEnv)
	os.Unsetenv(joinEnv)
	switch {
	case flag != "" && file != "":
		return "", fmt.Errorf("--join and --join-file: give the token one way")
	case file != "":
		return readJoinFile(file)
	case flag != "":
		slog.Warn("--join puts the token in the command line, which every user of this machine can read (ps); use --join-file or " + joinEnv)
		return flag, nil
	case fromEnv:
		if strings.TrimSpace(env) == "" {
			return "", fmt.Errorf("%s is set but empty: put the token from `gsvfs device token` in it, or unset it", joinEnv)
		}
		return strings.TrimSpace(env), nil
	}
	return "", nil
}

// readJoinFile reads a token from a file that only its owner (this user,
// or root) can read or change, as ssh does with a private key: a token
// others could read is a token others could use.
func readJoinFile(file string) (string, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("--join-file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("--join-file %s: not a regular file", file)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("--join-file %s: mode %04o lets other users read or change the token; run chmod 600 %s", file, perm, file)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() && uid != 0 {
		return "", fmt.Errorf("--join-file %s: owned by uid %d, not by this user (%d) or root", file, uid, os.Geteuid())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--join-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--join-file %s is empty: put the token from `gsvfs device token` in it", file)
	}
	return tok, nil
}

// fileOwner is the uid that owns the file fi describes.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
