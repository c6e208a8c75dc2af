// Package client reaches a running gsvfs daemon from another process:
// its whole tree over 9P (DialTree), and its /proc (Proc), through the
// files of a mounted tree or over 9P, which the commands attach and ps
// use. It knows nothing of how a daemon is composed: it speaks to one.
package client

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// DialTree connects to a gsvfs server and attaches to its whole tree as
// the user running this command.
func DialTree(a ninep.Address) (*ninep.Client, vfs.Node, error) {
	return DialTreeChecked(a, nil, ninep.ClientOptions{})
}

// DialTreeChecked is DialTree with the client's options that first runs
// check, if set, on the connection: an error from it ends the dial before
// any 9P is spoken.
func DialTreeChecked(a ninep.Address, check func(net.Conn) error, opts ninep.ClientOptions) (*ninep.Client, vfs.Node, error) {
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
