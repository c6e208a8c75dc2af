package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// redialer keeps a mount's 9P connection to its server: when the
// connection ends (the server restarted, or went away), it dials again
// with relink.Backoff until the server answers, and the tree it serves
// (package relink) walks its paths and reopens its files on the new
// connection. Meanwhile calls fail at once with EHOSTDOWN, and the mount
// stays.
type redialer struct {
	a      ninep.Address
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	client *ninep.Client
	link   *relink.Link // nil while the server is away
}

// redialTree dials a, which must answer now, and returns the tree that
// follows it across reconnections, and how to end it.
func redialTree(a ninep.Address) (vfs.Node, func(), error) {
	c, root, err := dialTree(a)
	if err != nil {
		return nil, nil, err
	}
	r := &redialer{a: a, client: c, link: &relink.Link{Root: root}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.keep(c)
	tree := relink.New(relink.Options{Where: "/", Current: r.current})
	return tree.Root(), r.close, nil
}

func (r *redialer) current() *relink.Link {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link
}

// keep waits for the connection c to end and makes a new one, until
// close.
func (r *redialer) keep(c *ninep.Client) {
	var b relink.Backoff
	for {
		select {
		case <-c.Done():
		case <-r.ctx.Done():
			return
		}
		r.set(nil, nil)
		slog.Warn("lost the 9P server; calls fail with EHOSTDOWN until it is back", "server", r.a.String(), "err", c.Err())
		b.Reset()
		for {
			b.Wait(r.ctx)
			if r.ctx.Err() != nil {
				return
			}
			nc, root, err := dialTree(r.a)
			if err == nil {
				c = nc
				r.set(c, &relink.Link{Root: root})
				slog.Info("the 9P server is back", "server", r.a.String())
				break
			}
			slog.Log(r.ctx, b.Failed(err), "redialling the 9P server failed", "server", r.a.String(), "err", err)
		}
	}
}

// set makes c the connection of the moment; a close that came first
// closes it.
func (r *redialer) set(c *ninep.Client, link *relink.Link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c != nil && r.ctx.Err() != nil {
		c.Close()
		return
	}
	r.client, r.link = c, link
}

// close ends the redialling and the connection of the moment.
func (r *redialer) close() {
	r.cancel()
	r.mu.Lock()
	c := r.client
	r.client, r.link = nil, nil
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
}
