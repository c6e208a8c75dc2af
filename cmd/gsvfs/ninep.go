package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// startNinep serves the tree t on every address and returns where it
// listens.
func startNinep(t *gsvfsd.Tree, addrs []ninep.Address) (*ninep.Server, []string, error) {
	srv := ninep.NewServer(t.Root, ninep.ServerOptions{Log: slog.Default(), Fsid: t.Fsid})
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
