package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/internal/client"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// redialer keeps a mount's 9P connection to its server: when the
// connection ends (the server restarted, or went away), it dials again
// with relink.Backoff until the server answers, and the tree it serves
// (package relink) walks its paths and reopens its files on the new
// connection. Meanwhile calls fail at once with EHOSTDOWN, and the mount
// stays.
//
// A unix socket's server is pinned: a new connection is used only if the
// process that serves it runs as the same user as the first one did, so
// that while the server is away nobody else can take its place by
// listening at its path (a tcp: address names no user: whatever listens
// there is served, as at the first mount).
//
// A mount attached to the daemon of its state directory has takeOver:
// once that daemon is gone and has let go of the directory, the mount
// serves the tree itself rather than wait for a daemon nobody may start.
type redialer struct {
	a        ninep.Address
	uid      int // of the first server of a unix socket, -1 for tcp
	takeOver func() (*source, error)
	ctx      context.Context
	cancel   context.CancelFunc

	tree *relink.Tree

	mu     sync.Mutex
	client *ninep.Client
	local  *source      // the tree served here, once taken over
	link   *relink.Link // nil while the server is away
}

// mountClient is how a mount's client speaks to its server at a: writes
// go behind (ninep.DefaultWriteBehind), since the mount's flush at
// close(2) waits for them and reports their errors; a unix socket's
// server is on this machine, where close-to-open is exact.
func mountClient(a ninep.Address) ninep.ClientOptions {
	return ninep.ClientOptions{WriteBehind: ninep.DefaultWriteBehind, Exact: a.Network == "unix"}
}

// redialTree dials a, which must answer now, and returns what follows it
// across reconnections: its tree, closed by close.
func redialTree(a ninep.Address, takeOver func() (*source, error)) (*redialer, error) {
	r := &redialer{a: a, uid: -1, takeOver: takeOver}
	c, root, err := client.DialTreeChecked(a, func(nc net.Conn) (err error) {
		r.uid, err = serverUid(nc)
		return err
	}, mountClient(a))
	if err != nil {
		return nil, err
	}
	r.client, r.link = c, &relink.Link{Root: root}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.tree = relink.New(relink.Options{Where: "/", Current: r.current, Locks: true})
	go r.keep(c)
	return r, nil
}

func (r *redialer) current() *relink.Link {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link
}

// keep waits for the connection c to end and makes a new one, until
// close.
func (r *redialer) keep(c *ninep.Client) {
	for c != nil {
		select {
		case <-c.Done():
		case <-r.ctx.Done():
			return
		}
		if r.ctx.Err() != nil {
			return // closed by close
		}
		r.set(nil, nil)
		c.Close()
		slog.Warn("lost the 9P server; calls fail with EHOSTDOWN until it is back", "server", r.a.String(), "err", c.Err())
		c = r.redial()
	}
}

// redial dials until the server answers (its new connection, made the
// current one), the tree is taken over, or close (nil for both).
func (r *redialer) redial() *ninep.Client {
	var b relink.Backoff
	lost := time.Now()
	for {
		if time.Since(lost) >= takeOverAfter && r.tryTakeOver() {
			return nil
		}
		b.Wait(r.ctx)
		if r.ctx.Err() != nil {
			return nil
		}
		c, root, err := client.DialTreeChecked(r.a, r.sameServer, mountClient(r.a))
		if err == nil {
			r.set(c, &relink.Link{Root: root})
			slog.Info("the 9P server is back", "server", r.a.String())
			return c
		}
		slog.Log(r.ctx, b.Failed(err), "redialling the 9P server failed", "server", r.a.String(), "err", err)
	}
}

// takeOverAfter is how long an attached mount's server must have been
// away before the mount serves the state directory itself: a server that
// restarts (systemctl restart) is back by then, and finds its state
// directory free.
const takeOverAfter = 2 * time.Second

// tryTakeOver serves the tree here if the mount may and its state
// directory is free, and reports whether it does now.
func (r *redialer) tryTakeOver() bool {
	if r.takeOver == nil {
		return false
	}
	src, err := r.takeOver()
	if errors.Is(err, gsvfsd.ErrServed) {
		return false // a daemon serves it still, or again: dial it
	}
	if err != nil {
		slog.Warn("serving the state directory here failed", "err", err)
		return false
	}
	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		src.close()
		return true
	}
	r.local, r.link = src, &relink.Link{Root: src.tree}
	r.mu.Unlock()
	r.tree.Relinked()
	slog.Info("the daemon of the state directory is gone; serving it here", "root", src.name, "pid", os.Getpid())
	return true
}

// leave is the tree's, if taken over: it stops answering and ends its
// sessions.
func (r *redialer) leave() {
	r.mu.Lock()
	local := r.local
	r.mu.Unlock()
	if local != nil {
		local.leave()
	}
}

// sameServer admits a new connection to a unix socket only if its server
// runs as the first one did.
func (r *redialer) sameServer(nc net.Conn) error {
	uid, err := serverUid(nc)
	if err == nil && uid != r.uid {
		err = fmt.Errorf("%w: its server runs as uid %d now, not as uid %d like the one first mounted; not attaching", syscall.EPERM, uid, r.uid)
	}
	return err
}

// serverUid is the uid of the process serving a unix socket, -1 for
// other transports.
func serverUid(nc net.Conn) (int, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return -1, nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	if err := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}

// set makes c the connection of the moment; a close that came first
// closes it.
func (r *redialer) set(c *ninep.Client, link *relink.Link) {
	r.mu.Lock()
	if c != nil && r.ctx.Err() != nil {
		r.mu.Unlock()
		c.Close()
		return
	}
	r.client, r.link = c, link
	r.mu.Unlock()
	r.tree.Relinked() // the tree's watchers follow the new connection
}

// close ends the redialling and the connection of the moment.
func (r *redialer) close() {
	r.cancel()
	r.mu.Lock()
	c, local := r.client, r.local
	r.client, r.local, r.link = nil, nil, nil
	r.mu.Unlock()
	if c != nil {
		c.Close()
	}
	if local != nil {
		local.close()
	}
}
