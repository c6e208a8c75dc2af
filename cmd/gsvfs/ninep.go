package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// socketName is the daemon's 9P socket inside the state directory: a
// second `gsvfs mount` of the same state directory attaches there.
const socketName = "gsvfs.sock"

func defaultSocket(root string) ninep.Address {
	return ninep.Address{Network: "unix", Addr: filepath.Join(root, socketName)}
}

// startNinep serves the tree t on every address and returns where it
// listens.
func startNinep(t *tree, addrs []ninep.Address) (*ninep.Server, []string, error) {
	srv := ninep.NewServer(t.root, ninep.ServerOptions{Log: slog.Default(), Fsid: t.fsid})
	var where []string
	for _, a := range addrs {
		l, err := ninep.Listen(a)
		if err != nil {
			stopNinep(srv)
			return nil, nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		where = append(where, a.String())
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, ninep.ErrServerClosed) {
				slog.Error("9p listener failed", "addr", a.String(), "err", err)
			}
		}()
	}
	return srv, where, nil
}

// dialTree connects to a gsvfs server and attaches to its whole tree as
// the user running this command.
func dialTree(a ninep.Address) (*ninep.Client, vfs.Node, error) {
	return dialTreeChecked(a, nil, ninep.ClientOptions{})
}

// dialTreeChecked is dialTree with the client's options that first runs
// check, if set, on the connection: an error from it ends the dial before
// any 9P is spoken.
func dialTreeChecked(a ninep.Address, check func(net.Conn) error, opts ninep.ClientOptions) (*ninep.Client, vfs.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, a.Network, a.Addr)
	if err == nil && check != nil {
		if err = check(nc); err != nil {
			nc.Close()
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", a, err)
	}
	c, err := ninep.NewClient(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("connect to %s: %w", a, err)
	}
	uname := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		uname = u.Username
	}
	root, err := c.Attach(ctx, uname, "", uint32(os.Getuid()))
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("attach to %s: %w", a, err)
	}
	return c, root, nil
}

// serverAnswers reports whether a server is listening at a.
func serverAnswers(a ninep.Address) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := ninep.Dial(ctx, a, ninep.ClientOptions{})
	if err != nil {
		return false
	}
	c.Close()
	return true
}
