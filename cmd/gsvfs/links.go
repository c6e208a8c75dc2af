package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/gsvfs/gsvfs/devices"
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

// startLinks gives the daemon its identity, opens the TLS listeners
// (devices join there, and gateways added with `gsvfs device add` dial
// there) and, with --join, keeps the daemon joined to its gateway. Every
// link a gateway uses is served the export: the tree less the refused
// paths. It returns the listeners' addresses.
func startLinks(ctx context.Context, root string, f serveFlags, tlsAddrs []string, t *tree) ([]string, error) {
	id, err := devices.LoadIdentity(privateDir(root))
	if err != nil {
		return nil, err
	}
	t.gateway.SetIdentity(id)
	export := ninep.NewServer(t.export, ninep.ServerOptions{Log: slog.Default()})
	context.AfterFunc(ctx, func() { stopNinep(export) })
	t.gateway.ServeGateways(export.ServeConn)
	t.edges.add("9p links to gateways", export)
	var where []string
	for _, addr := range tlsAddrs {
		lc := net.ListenConfig{}
		l, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on tls:%s: %w", addr, err)
		}
		context.AfterFunc(ctx, func() { l.Close() })
		go t.gateway.Serve(l)
		where = append(where, "tls:"+l.Addr().String())
		t.caps.add("devices.gateway")
	}
	if len(tlsAddrs) > 0 {
		// `gsvfs device token` puts the address in the tokens it makes.
		var addrs []string
		for _, w := range where {
			addrs = append(addrs, strings.TrimPrefix(w, "tls:"))
		}
		if err := os.WriteFile(filepath.Join(privateDir(root), "listen"), []byte(strings.Join(addrs, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	if f.join != "" {
		tok, err := devices.ParseToken(f.join)
		if err != nil {
			return nil, fmt.Errorf("--join: %w", err)
		}
		t.caps.add("devices.joined")
		go devices.Join(ctx, devices.JoinOptions{Token: tok, Device: f.device, Identity: id,
			Facts: localFacts(), Serve: export.ServeConn, Log: slog.Default()})
	}
	return where, nil
}
