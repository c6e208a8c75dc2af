package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

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
