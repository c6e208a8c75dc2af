package ninep

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// peerIdentity is who is at the other end of a connection, as the
// transport (not the protocol) says.
type peerIdentity struct {
	uid     uint32
	trusted bool  // may attach as any user
	err     error // non-nil: refuse the connection
}

// identify admits a unix-socket peer only if it is root or the user the
// server runs as (its peer credentials); other transports were admitted
// by the operator's explicit choice of listener.
func identify(nc net.Conn) peerIdentity {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return peerIdentity{uid: uint32(os.Geteuid()), trusted: true}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peerIdentity{err: err}
	}
	var uid uint32
	var credErr error
	if err := raw.Control(func(fd uintptr) { uid, credErr = peerUid(int(fd)) }); err != nil {
		return peerIdentity{err: err}
	}
	if credErr != nil {
		return peerIdentity{err: credErr}
	}
	self := uint32(os.Geteuid())
	if uid != 0 && uid != self {
		return peerIdentity{err: fmt.Errorf("uid %d is neither root nor the server's owner (uid %d)", uid, self)}
	}
	return peerIdentity{uid: uid, trusted: uid == 0}
}

// Address is a parsed listen or dial address: unix:PATH or tcp:HOST:PORT.
type Address struct {
	Network string // "unix" or "tcp"
	Addr    string
}

func (a Address) String() string { return a.Network + ":" + a.Addr }

// ParseAddress parses unix:PATH or tcp:HOST:PORT. A bare path is unix.
func ParseAddress(s string) (Address, error) {
	network, addr, ok := strings.Cut(s, ":")
	if !ok || strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		network, addr = "unix", s
	}
	switch network {
	case "unix":
		if addr == "" {
			return Address{}, fmt.Errorf("address %q: empty socket path", s)
		}
		return Address{"unix", addr}, nil
	case "tcp":
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return Address{}, fmt.Errorf("address %q: %v", s, err)
		}
		return Address{"tcp", addr}, nil
	}
	return Address{}, fmt.Errorf("address %q: want unix:PATH or tcp:HOST:PORT", s)
}

// ErrNotLoopback refuses a TCP listener off the loopback interface: TCP
// has no authentication yet, so it must not leave the machine.
var ErrNotLoopback = errors.New("9p: TCP listens only on a loopback address")

// ErrSocketInUse means another server answers on the socket path.
var ErrSocketInUse = errors.New("9p: a server is already listening on the socket")

// Listen opens a listener for a. A unix socket is created mode 0600 in a
// directory that must exist; a stale socket left by a dead server is
// replaced, a live one is refused. TCP must be a loopback address.
func Listen(a Address) (net.Listener, error) {
	if a.Network == "tcp" {
		host, _, _ := net.SplitHostPort(a.Addr)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, ErrNotLoopback
		}
		return net.Listen("tcp", a.Addr)
	}
	path := a.Addr
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", path, ErrSocketInUse)
		}
		os.Remove(path) // stale: its server is gone
	}
	// The mode is tightened after bind; a user who connects in between is
	// still refused by identify, which is the real gate.
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, nil
}
