package devices

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// A link is one TLS 1.3 connection, both ends presenting their own
// certificate and checking the other's key: the device checks the
// gateway's against the fingerprint its token carries; the gateway
// checks the device's against the key pinned for its id, or pins it on
// a first join with a live token. Then one framed hello each way, and
// from there on the device serves 9P on the connection and the gateway
// is its client, whichever end dialled.

// Facts are what a device reports of itself.
type Facts struct {
	Platform   string   `json:"platform"`
	Arch       string   `json:"arch"`
	Version    string   `json:"version"`
	Implements []string `json:"implements"`
	// Uid and Gid are the device daemon's user and group, the owner of
	// what it serves as its own: the gateway shows them as its own
	// owner's (ninep.IDMap). A device that does not say has none there.
	Uid *uint32 `json:"uid,omitempty"`
	Gid *uint32 `json:"gid,omitempty"`
}

// idMap is how a gateway owned by uid and gid shows the numbers of a
// device that reports f.
func (f Facts) idMap(uid, gid uint32) *ninep.IDMap {
	m := &ninep.IDMap{Uid: ninep.NoUid, Gid: ninep.NoUid, LocalUid: uid, LocalGid: gid} // none of its files
	if f.Uid != nil && f.Gid != nil {
		m.Uid, m.Gid = *f.Uid, *f.Gid
	}
	return m
}

// hello is the device's first message on a link.
type hello struct {
	Device string `json:"device"`
	Token  string `json:"token,omitempty"`
	Facts  Facts  `json:"facts"`
	// Instance tells one running daemon from another with the same
	// identity: a daemon restarted, or a copy of its state started twice.
	Instance string `json:"instance"`
	// Role is roleGateway when a gateway dialled a device: it sends its
	// own id, and the device serves it. Empty: a device dialled a gateway.
	Role string `json:"role,omitempty"`
}

const roleGateway = "gateway"

// welcome is the gateway's answer: empty Error means joined. Superseded
// says another daemon of the same device joined after this one: it has
// the device's place, and this one stops joining. Refused says the
// refusal is final (unknown, expired, revoked or wrong-role token, an id
// pinned with another key): dialling again with the same credentials
// cannot succeed, unlike a network error or a busy store.
type welcome struct {
	Error      string `json:"error,omitempty"`
	Superseded bool   `json:"superseded,omitempty"`
	Refused    bool   `json:"refused,omitempty"`
	// Device and Facts: a device's answer to a gateway that dialled it.
	Device string `json:"device,omitempty"`
	Facts  Facts  `json:"facts"`
}

// errSuperseded ends Join: the gateway took a newer daemon of the same
// device in this one's place.
var errSuperseded = errors.New("another daemon of this device joined the gateway after this one")

// refusal is a peer's final refusal as the dialling side reads it from a
// welcome: it is ErrRefused, with the peer's own words.
type refusal struct{ reason string }

func (r refusal) Error() string      { return r.reason }
func (refusal) Is(target error) bool { return target == ErrRefused }

// refusedWelcome is the answer that tells a peer err is final if it is.
func refusedWelcome(err error) welcome {
	return welcome{Error: err.Error(), Refused: errors.Is(err, ErrRefused)}
}

// isFinal reports whether err ends the dialling for good: a final
// refusal, or a newer daemon of the same device in this one's place.
func isFinal(err error) bool {
	return errors.Is(err, ErrRefused) || errors.Is(err, errSuperseded)
}

// handshakeTimeout bounds the TLS handshake and the hellos, so a peer
// that says nothing cannot hold a connection open.
const handshakeTimeout = 10 * time.Second

// maxFrame bounds a hello: it is read before the peer is trusted.
const maxFrame = 16 << 10

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readFrame reads exactly one frame and nothing past it: the bytes
// after it are 9P, for the 9P layer to read.
func readFrame(r io.Reader, v any) error {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxFrame {
		return fmt.Errorf("hello of %d bytes: over the limit of %d", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// peerFingerprint is the fingerprint of the key a TLS peer proved it
// holds.
func peerFingerprint(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", errors.New("peer presented no certificate")
	}
	return Fingerprint(cs.PeerCertificates[0]), nil
}

// serverTLS is the gateway's side: any self-signed client certificate is
// taken at the TLS layer, and the key it proves is then checked against
// the store (Admit), before anything else is read.
func serverTLS(id *Identity) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
		ClientAuth:   tls.RequireAnyClientCert,
	}
}

// clientTLS is the device's side: the gateway must prove the key named
// in the token; no CA is involved.
func clientTLS(id *Identity, gateway string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{id.Cert},
		InsecureSkipVerify: true, // replaced by the key check below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("gateway presented no certificate")
			}
			c, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			if fp := Fingerprint(c); fp != gateway {
				return fmt.Errorf("gateway key %s is not the one the token names (%s)", fp[:12], gateway[:12])
			}
			return nil
		},
	}
}

// keepAlive makes a dead peer show within seconds on an idle link, where
// no 9P call is outstanding to notice it. unackedWait does the same for
// a link with data in flight: without it a cut link whose last reply
// waits for an acknowledgement lives on for many minutes of
// retransmissions on the side that serves 9P (which sends no probes of
// its own), and a device would see its link was cut only when the
// network came back and the gateway's reset reached it, at a
// retransmission that by then comes tens of seconds apart.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 2}

const unackedWait = 5 * time.Second

func tuneTCP(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetKeepAliveConfig(keepAlive)
		dropUnacked(tc, unackedWait)
	}
}

// JoinOptions configures a device's link to its gateway.
type JoinOptions struct {
	Token    Token
	Device   string
	Identity *Identity
	Facts    Facts
	// Serve serves the device's tree on an established link, and
	// returns at once; the link's Close reports its end.
	Serve func(net.Conn)
	Log   *slog.Logger

	instance string // this daemon's, made by Join
}

// Join keeps the device joined to its gateway until ctx ends (then it
// returns nil): it dials, serves the link until it ends, and dials again
// (relink.Backoff: about every second while the gateway cannot be
// reached, so the device is back within a second or two of the network;
// with exponential backoff and jitter, 30 s at most, after a gateway
// that answered and failed). A final refusal (isFinal) ends it with that
// error: the token or the key will not do, and a service manager should
// show it rather than see the device retry forever.
func Join(ctx context.Context, o JoinOptions) error {
	if o.instance == "" {
		o.instance = rand.Text()
	}
	if err := o.Token.CheckRole(RoleDevice); err != nil {
		return err
	}
	var b relink.Backoff
	for ctx.Err() == nil {
		ended, err := dialOnce(ctx, o)
		if isFinal(err) {
			return err
		}
		if err != nil {
			o.Log.Log(ctx, b.Failed(err), "join failed", "gateway", o.Token.Addr, "err", err)
		} else {
			o.Log.Info("joined", "gateway", o.Token.Addr, "device", o.Device)
			select {
			case <-ended:
				o.Log.Warn("link to gateway lost", "gateway", o.Token.Addr)
				b.Reset()
			case <-ctx.Done():
				return nil
			}
		}
		b.Wait(ctx)
	}
	return nil
}

// dialOnce makes one link and hands it to Serve; the returned channel is
// closed when the link ends.
func dialOnce(ctx context.Context, o JoinOptions) (<-chan struct{}, error) {
	h := hello{Device: o.Device, Token: o.Token.Secret, Facts: o.Facts, Instance: o.instance}
	nc, _, err := handshake(ctx, o.Token, o.Identity, h)
	if err != nil {
		return nil, err
	}
	c := &watchedConn{Conn: nc, ended: make(chan struct{})}
	o.Serve(c)
	return c.ended, nil
}

// handshake dials the peer a token names, checks its key, says hello and
// reads the answer: a link ready for 9P, or the peer's refusal.
func handshake(ctx context.Context, tok Token, id *Identity, h hello) (*tls.Conn, welcome, error) {
	var w welcome
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	d := &net.Dialer{Timeout: relink.ConnectTimeout}
	nc, err := d.DialContext(hctx, "tcp", tok.Addr)
	if err != nil {
		return nil, w, err
	}
	tuneTCP(nc)
	tc := tls.Client(nc, clientTLS(id, tok.Gateway))
	deadline, _ := hctx.Deadline()
	tc.SetDeadline(deadline)
	if err := tc.HandshakeContext(hctx); err != nil {
		tc.Close()
		return nil, w, err
	}
	if err := writeFrame(tc, h); err != nil {
		tc.Close()
		return nil, w, err
	}
	if err := readFrame(tc, &w); err != nil {
		tc.Close()
		return nil, w, fmt.Errorf("the peer's answer: %w", err)
	}
	if w.Superseded {
		tc.Close()
		return nil, w, fmt.Errorf("%w: %s", errSuperseded, w.Error)
	}
	if w.Refused {
		tc.Close()
		return nil, w, refusal{w.Error}
	}
	if w.Error != "" {
		tc.Close()
		return nil, w, fmt.Errorf("refused for now: %s", w.Error)
	}
	tc.SetDeadline(time.Time{})
	return tc, w, nil
}

// watchedConn reports its Close.
type watchedConn struct {
	net.Conn
	once  sync.Once
	ended chan struct{}
}

func (c *watchedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.ended) })
	return err
}
