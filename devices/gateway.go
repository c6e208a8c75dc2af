package devices

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// Gateway accepts devices' links and shows the devices it knows in
// /sys/devices and /mnt.
type Gateway struct {
	id    *Identity
	store *Store
	log   *slog.Logger

	descInos *inoTable

	mu      sync.Mutex
	devices map[string]*device
}

// device is a joined (or once joined) device as the gateway sees it.
type device struct {
	id          string
	facts       Facts
	addr        string
	connectedAt time.Time
	lastSeen    time.Time
	// link is the live 9P client and its attach, nil while offline.
	link *remote
}

type remote struct {
	client *ninep.Client
	root   vfs.Node
}

// NewGateway serves devices with identity id, admitting them by store.
func NewGateway(id *Identity, store *Store, log *slog.Logger) *Gateway {
	return &Gateway{id: id, store: store, log: log, devices: map[string]*device{}, descInos: newInoTable()}
}

// Serve accepts links on l until it is closed.
func (g *Gateway) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			g.log.Warn("device accept failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go g.accept(c)
	}
}

// accept authenticates one link, then attaches to the device's tree over
// it and keeps the device online until the link ends.
func (g *Gateway) accept(raw net.Conn) {
	tuneTCP(raw)
	peer := raw.RemoteAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	tc := tls.Server(raw, serverTLS(g.id))
	raw.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		g.log.Warn("device link refused: TLS handshake failed", "peer", peer, "err", err)
		raw.Close()
		return
	}
	fp, _ := peerFingerprint(tc.ConnectionState())
	var h hello
	if err := readFrame(tc, &h); err != nil {
		g.log.Warn("device link refused: no hello", "peer", peer, "err", err)
		tc.Close()
		return
	}
	if err := g.store.Admit(h.Device, fp, h.Token); err != nil {
		g.log.Warn("device link refused", "peer", peer, "device", h.Device, "key", fp[:12], "err", err)
		writeFrame(tc, welcome{Error: err.Error()})
		tc.Close()
		return
	}
	if err := writeFrame(tc, welcome{}); err != nil {
		tc.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	client, err := ninep.NewClient(ctx, tc, ninep.ClientOptions{})
	if err != nil {
		g.log.Warn("device link lost before 9P began", "device", h.Device, "err", err)
		tc.Close()
		return
	}
	root, err := client.Attach(ctx, "gsvfs", "", ninep.NoUid)
	if err != nil {
		g.log.Warn("device link: attach failed", "device", h.Device, "err", err)
		client.Close()
		return
	}
	g.online(h, peer, &remote{client: client, root: root})
	<-client.Done()
	g.offline(h.Device, client)
}

// online records a joined device; a link it already had is closed, the
// newer one wins.
func (g *Gateway) online(h hello, peer string, r *remote) {
	g.mu.Lock()
	d := g.devices[h.Device]
	if d == nil {
		d = &device{id: h.Device}
		g.devices[h.Device] = d
	}
	old := d.link
	now := time.Now()
	d.facts, d.addr, d.link, d.connectedAt, d.lastSeen = h.Facts, peer, r, now, now
	g.mu.Unlock()
	if old != nil {
		g.log.Warn("device joined again; closing its older link", "device", h.Device)
		old.client.Close()
	}
	g.log.Info("device online", "device", h.Device, "peer", peer, "platform", h.Facts.Platform)
}

func (g *Gateway) offline(id string, client *ninep.Client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.devices[id]
	if d == nil || d.link == nil || d.link.client != client {
		return // a newer link took its place
	}
	d.link, d.lastSeen = nil, time.Now()
	g.log.Warn("device offline", "device", id)
}

// root is device id's tree while it is online.
func (g *Gateway) root(id string) (vfs.Node, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d := g.devices[id]; d != nil && d.link != nil {
		return d.link.root, nil
	}
	return nil, vfs.Error("device", id, ehostdown)
}

// ids lists every device known, online or not, in name order.
func (g *Gateway) ids() []string {
	ids := g.store.Known()
	g.mu.Lock()
	for id := range g.devices {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	g.mu.Unlock()
	slices.Sort(ids)
	return ids
}

func (g *Gateway) known(id string) bool { return slices.Contains(g.ids(), id) }

// descriptor is what `cat /sys/devices/ID` shows.
type descriptor struct {
	DeviceID    string     `json:"deviceId"`
	Description string     `json:"description"`
	Platform    string     `json:"platform"`
	Arch        string     `json:"arch"`
	Version     string     `json:"version"`
	Online      bool       `json:"online"`
	Implements  []string   `json:"implements"`
	Mount       string     `json:"mount"`
	Address     string     `json:"address"`
	ConnectedAt *time.Time `json:"connectedAt"`
	LastSeen    *time.Time `json:"lastSeen"`
}

func (g *Gateway) describe(id string) []byte {
	desc := descriptor{DeviceID: id, Description: g.store.Description(id), Mount: "/mnt/" + id, Implements: []string{}}
	g.mu.Lock()
	if d := g.devices[id]; d != nil {
		desc.Platform, desc.Arch, desc.Version = d.facts.Platform, d.facts.Arch, d.facts.Version
		desc.Implements = append(desc.Implements, d.facts.Implements...)
		desc.Address, desc.Online = d.addr, d.link != nil
		connected, seen := d.connectedAt, d.lastSeen
		if desc.Online {
			seen = time.Now()
		}
		desc.ConnectedAt, desc.LastSeen = &connected, &seen
	}
	g.mu.Unlock()
	b, _ := json.Marshal(desc)
	return append(b, '\n')
}

func (g *Gateway) descIno(id string) uint64 { return g.descInos.of(id) }
