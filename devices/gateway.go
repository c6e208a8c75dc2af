package devices

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gsvfs/gsvfs/internal/relink"
	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/ninep"
)

// Gateway accepts devices' links and shows the devices it knows in
// /sys/devices and, through the namespace, at /mnt/ID.
type Gateway struct {
	o     GatewayOptions
	store *Store
	log   *slog.Logger

	descInos vfs.InoTable
	started  time.Time
	// kick asks Watch to bring the dialers in line with the store: sync
	// runs on any goroutine, the dialers live on Watch's context.
	kick    chan struct{}
	dialers map[string]*dialer // guarded by mu
	served  []servedGateway    // guarded by mu
	mounted map[string]bool    // ids mounted at /mnt/ID; guarded by mu
	trees   sync.Map           // id → *relink.Tree of /mnt/ID (remote.go)
	kept    keptRoots          // roots read, on their way to the store (remote.go)

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
	// instance is the daemon that joined last; superseded, the ones it
	// took the place of, which are told so if they dial again.
	instance   string
	superseded []string
	// sentBefore counts the requests sent on the device's links that
	// have ended, in all and by type; LinkRequests adds the live link's.
	sentBefore       int64
	sentBeforeByType map[string]int64
	noticesBefore    int64 // batches of notices the ended links brought
}

// linkEnded adds what client sent to the counts of ended links.
func (d *device) linkEnded(client *ninep.Client) {
	d.sentBefore += client.Sent()
	d.noticesBefore += client.Notices().Batches
	if d.sentBeforeByType == nil {
		d.sentBeforeByType = map[string]int64{}
	}
	for t, n := range client.SentByType() {
		d.sentBeforeByType[t] += n
	}
}

// The gateway daemon's own user and group: what a device's user owns
// shows as theirs under /mnt/ID, and /mnt/ID is theirs to enter.
var ownerUid, ownerGid = uint32(os.Geteuid()), uint32(os.Getegid())

// maxSuperseded bounds what a gateway remembers of replaced daemons.
const maxSuperseded = 8

type remote struct {
	client *ninep.Client
	tree   relink.Link // the device's tree on this link
	key    string      // the fingerprint the device proved
}

// GatewayOptions configures a gateway.
type GatewayOptions struct {
	// Self is this daemon's own id and facts: the local machine is a
	// device of its own gateway, served at "/", not under /mnt.
	Self  string
	Facts Facts
	// Identity is the key links are made with. It is needed from the
	// start: Watch dials the devices the store says to dial at once.
	Identity *Identity
	// Mount and Unmount put a device's tree at /mnt/ID in the namespace
	// when the device becomes known, and take it away when forgotten.
	Mount, Unmount func(id string, root vfs.Node)
	// Serve serves this daemon's export on a link that a gateway dialled
	// (gsvfs device add on the gateway); nil refuses such gateways.
	Serve func(net.Conn)
	Log   *slog.Logger
}

// NewGateway serves the devices store knows and admits, making its
// links with o.Identity. The identity comes first, before anything can
// dial: a gateway without one would start dialling with no key.
func NewGateway(store *Store, o GatewayOptions) (*Gateway, error) {
	if o.Identity == nil {
		return nil, errors.New("a gateway needs its identity before it starts")
	}
	g := &Gateway{o: o, store: store, log: o.Log, devices: map[string]*device{}, mounted: map[string]bool{}, started: time.Now(), dialers: map[string]*dialer{}, kick: make(chan struct{}, 1)}
	g.sync()
	return g, nil
}

// sync brings the namespace and the links in line with the store: known
// devices are mounted, forgotten ones unmounted, and a link whose key is
// no longer pinned for its id (device removed, token revoked) is closed.
func (g *Gateway) sync() {
	known := g.store.Known()
	g.mu.Lock()
	var add, drop []string
	for _, id := range known {
		if !g.mounted[id] && id != g.o.Self {
			g.mounted[id] = true
			add = append(add, id)
		}
	}
	for id := range g.mounted {
		if !slices.Contains(known, id) {
			delete(g.mounted, id)
			drop = append(drop, id)
		}
	}
	var links []*remote
	var ids []string
	for id, d := range g.devices {
		if d.link != nil {
			links, ids = append(links, d.link), append(ids, id)
		}
		if !slices.Contains(known, id) && d.link == nil {
			delete(g.devices, id) // forgotten (gsvfs device rm)
		}
	}
	g.mu.Unlock()
	for _, id := range add {
		g.o.Mount(id, g.deviceRoot(id))
	}
	for _, id := range drop {
		g.o.Unmount(id, nil)
	}
	for i, r := range links {
		if !g.store.Pinned(ids[i], r.key) {
			g.log.Warn("closing device link: its key is no longer admitted (device removed or token revoked)", "device", ids[i])
			r.client.Close()
			g.dropForgotten(ids[i], r)
		}
	}
	g.kickDialers()
	g.dropRevokedGateways()
}

// kickDialers asks Watch for a syncDialers, once however often asked
// before it gets to it.
func (g *Gateway) kickDialers() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// dropForgotten removes device id, whose link r was just closed (and may
// have gone offline since), if the store no longer knows it: nothing of
// a removed device stays in /sys/devices. The store is read after the
// link was found unpinned, so a device that joined since is never dropped.
func (g *Gateway) dropForgotten(id string, r *remote) {
	if g.store.Has(id) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if d := g.devices[id]; d != nil && (d.link == r || d.link == nil) {
		delete(g.devices, id)
	}
}

// syncDialers keeps one dialler running for each device the gateway is
// to dial, on ctx (Watch's), and stops those of devices no longer to be
// dialled.
func (g *Gateway) syncDialers(ctx context.Context) {
	want := g.store.Dialed()
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, d := range g.dialers {
		if tok, ok := want[id]; !ok || tok != d.tok {
			d.cancel()
			delete(g.dialers, id)
		}
	}
	for id, tok := range want {
		if g.dialers[id] == nil {
			dctx, cancel := context.WithCancel(ctx)
			g.dialers[id] = &dialer{tok: tok, cancel: cancel}
			go g.dial(dctx, id, tok)
		}
	}
}

// dialer is the running dial loop of a device that listens.
type dialer struct {
	tok    Token
	cancel context.CancelFunc
}

// dial keeps a link to device id, which listens where tok says, until
// ctx ends: the gateway dials, the device serves.
func (g *Gateway) dial(ctx context.Context, id string, tok Token) {
	var b relink.Backoff
	instance := rand.Text()
	for ctx.Err() == nil {
		h := hello{Role: roleGateway, Device: g.o.Self, Token: tok.Secret, Instance: instance}
		tc, w, err := handshake(ctx, tok, g.o.Identity, h)
		if isFinal(err) {
			g.log.Error("the device refused this gateway for good; not dialling it again until gsvfs device add gives it a new token",
				"device", id, "addr", tok.Addr, "err", err)
			return
		}
		if err != nil {
			g.log.Log(ctx, b.Failed(err), "dialling device failed", "device", id, "addr", tok.Addr, "err", err)
			b.Wait(ctx)
			continue
		}
		if w.Device != id {
			g.log.Warn("a dialled device calls itself otherwise", "device", id, "says", w.Device)
		}
		b.Reset()
		g.useLink(tc, hello{Device: id, Facts: w.Facts, Instance: "dialled"}, tok.Gateway, tok.Addr)
		b.Wait(ctx)
	}
}

// Watch applies changes that `gsvfs device` commands make to the store
// (every half second) until ctx ends: a revoked device's link is closed
// within that time, and devices added to be dialled are dialled.
func (g *Gateway) Watch(ctx context.Context) {
	g.sync()
	g.syncDialers(ctx)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			g.sync()
		case <-g.kick:
			g.syncDialers(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// Identity is the key this gateway's links are made with.
func (g *Gateway) Identity() *Identity { return g.o.Identity }

// ServeGateways lets gateways that dial this daemon (with a token it
// issued) be served its export by serve.
func (g *Gateway) ServeGateways(serve func(net.Conn)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.o.Serve = serve
}

func (g *Gateway) exportServer() func(net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.o.Serve
}

// linkIdle is how long a device link may stay silent before the gateway
// asks whether the device is still there.
const linkIdle = time.Second

// linkFlushWait is how long a device may take to answer a flush before
// it is cut off: well under a client's own wait on the gateway
// (ninep.DefaultFlushWait), so a bad device never costs the gateway's
// clients their links. linkCallWait bounds any call but a read, a write
// or an fsync or a blocking lock: a device that looks alive but sits on a
// stat fails it.
const linkFlushWait, linkCallWait = 5 * time.Second, 15 * time.Second

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
	tc := tls.Server(raw, serverTLS(g.o.Identity))
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
	if h.Role == roleGateway {
		g.serveGateway(tc, h, fp, peer)
		return
	}
	err := fmt.Errorf("%w: %s is this gateway's own id", ErrRefused, h.Device)
	if h.Device != g.o.Self {
		err = g.store.Admit(h.Device, fp, h.Token)
	}
	if err == nil && g.isSuperseded(h) {
		g.log.Warn("device link refused: a newer daemon of the device joined since", "peer", peer, "device", h.Device)
		writeFrame(tc, welcome{Superseded: true, Error: "a newer daemon of device " + h.Device + " joined the gateway since; the newer one wins"})
		tc.Close()
		return
	}
	if err != nil {
		g.log.Warn("device link refused", "peer", peer, "device", h.Device, "key", fp[:12], "err", err)
		writeFrame(tc, refusedWelcome(err))
		tc.Close()
		return
	}
	if err := writeFrame(tc, welcome{}); err != nil {
		tc.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	g.useLink(tc, h, fp, peer)
}

// serveGateway answers a gateway that dialled this daemon as a device:
// admitted by a token this daemon issued (its key pinned then, as a
// device's is), it is told this daemon's facts and served its export.
func (g *Gateway) serveGateway(tc *tls.Conn, h hello, fp, peer string) {
	serve := g.exportServer()
	if serve == nil {
		writeFrame(tc, refusedWelcome(fmt.Errorf("%w: this daemon exports nothing to gateways", ErrRefused)))
		tc.Close()
		return
	}
	if err := g.store.AdmitGateway(h.Device, fp, h.Token); err != nil {
		g.log.Warn("gateway link refused", "peer", peer, "gateway", h.Device, "key", fp[:12], "err", err)
		writeFrame(tc, refusedWelcome(err))
		tc.Close()
		return
	}
	if err := writeFrame(tc, welcome{Device: g.o.Self, Facts: g.o.Facts}); err != nil {
		tc.Close()
		return
	}
	tc.NetConn().SetDeadline(time.Time{})
	g.log.Info("serving a gateway", "gateway", h.Device, "peer", peer)
	c := &watchedConn{Conn: tc, ended: make(chan struct{})}
	g.mu.Lock()
	g.served = append(g.served, servedGateway{id: h.Device, key: fp, conn: c})
	g.mu.Unlock()
	serve(c)
}

// servedGateway is a link on which this daemon serves a gateway that
// dialled it, closed if the gateway's key is no longer admitted.
type servedGateway struct {
	id, key string
	conn    *watchedConn
}

// dropRevokedGateways closes the links of gateways no longer admitted.
func (g *Gateway) dropRevokedGateways() {
	g.mu.Lock()
	served := g.served
	g.served = nil
	g.mu.Unlock()
	var kept []servedGateway
	for _, s := range served {
		select {
		case <-s.conn.ended:
			continue // over
		default:
		}
		if g.store.PinnedGateway(s.id, s.key) {
			kept = append(kept, s)
			continue
		}
		g.log.Warn("closing a gateway's link: its key is no longer admitted", "gateway", s.id)
		s.conn.Close()
	}
	g.mu.Lock()
	g.served = append(g.served, kept...)
	g.mu.Unlock()
}

// useLink makes the gateway the 9P client of a device's tree on an
// authenticated link, and keeps the device online until the link ends.
func (g *Gateway) useLink(tc *tls.Conn, h hello, fp, peer string) {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	// Probed after a second of silence even when idle: a device that
	// vanishes without a FIN shows offline in under two seconds.
	client, err := ninep.NewClient(ctx, tc, ninep.ClientOptions{
		Idle: linkIdle, Limits: ninep.ClientLimits{FlushWait: linkFlushWait, CallWait: linkCallWait},
		// Writes through this daemon's own mount go behind; those its 9P
		// clients send wait for the device (ninep's cwrite.go says why).
		WriteBehind: ninep.DefaultWriteBehind,
		// The device's numbers are not this machine's users.
		IDs: h.Facts.idMap(ownerUid, ownerGid),
		OverBound: func(e *ninep.LimitError) {
			g.log.Warn("device listing cut short: it went past the bound of one listing (logged once a link)", "device", h.Device, "bound", e.What)
		},
	})
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
	g.online(h, peer, &remote{client: client, tree: relink.Link{Root: root}, key: fp})
	<-client.Done()
	var bound *ninep.LimitError
	if errors.As(client.Err(), &bound) {
		// The link ended because the device went past what the gateway
		// holds for one link; it may join again.
		g.log.Warn("device cut off: it went past a bound of its link", "device", h.Device, "bound", bound.What)
	}
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
	if d.instance != "" && d.instance != h.Instance {
		d.superseded = append(d.superseded, d.instance)
		if len(d.superseded) > maxSuperseded {
			d.superseded = d.superseded[1:]
		}
	}
	d.instance = h.Instance
	if old != nil {
		d.linkEnded(old.client)
	}
	now := time.Now()
	d.facts, d.addr, d.link, d.connectedAt, d.lastSeen = h.Facts, peer, r, now, now
	g.mu.Unlock()
	if old != nil {
		g.log.Warn("device joined again; closing its older link", "device", h.Device)
		old.client.Close()
	}
	g.log.Info("device online", "device", h.Device, "peer", peer, "platform", h.Facts.Platform)
	g.relinked(h.Device)
	g.sync() // a first join makes the device known: mount it
}

// Close ends every link: devices' and those of gateways this daemon
// serves. Devices redial (with backoff) until a gateway answers again.
func (g *Gateway) Close() {
	g.mu.Lock()
	var clients []*ninep.Client
	for _, d := range g.devices {
		if d.link != nil {
			clients = append(clients, d.link.client)
		}
	}
	served := g.served
	g.served = nil
	for _, d := range g.dialers {
		d.cancel()
	}
	g.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	for _, s := range served {
		s.conn.Close()
	}
	g.kept.close() // what was read of the roots is in the store, and nothing comes after
}

// isSuperseded reports whether h comes from a daemon that a newer one of
// the same device replaced.
func (g *Gateway) isSuperseded(h hello) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.devices[h.Device]
	return d != nil && slices.Contains(d.superseded, h.Instance)
}

func (g *Gateway) offline(id string, client *ninep.Client) {
	g.mu.Lock()
	d := g.devices[id]
	if d == nil || d.link == nil || d.link.client != client {
		g.mu.Unlock()
		return // a newer link took its place
	}
	d.linkEnded(client)
	d.link, d.lastSeen = nil, time.Now()
	g.mu.Unlock()
	g.log.Warn("device offline", "device", id)
	g.relinked(id)
}

// LinkCount is what the gateway has asked of one device since it
// started, over all of that device's links.
type LinkCount struct {
	Device   string
	Online   bool
	Requests int64 // 9P requests sent to the device: round trips over its link
	// ByType is Requests by kind of request (ninep.Client.SentByType).
	ByType map[string]int64
	// Notices counts the batches of change notices the device sent
	// unasked (ninep.Client.Notices): no round trip each.
	Notices int64
}

// LinkRequests counts the requests sent to each device that has joined,
// in name order, so that what a workload under /mnt/ID costs in round
// trips can be read in /sys/stats.
func (g *Gateway) LinkRequests() []LinkCount {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]LinkCount, 0, len(g.devices))
	for _, id := range slices.Sorted(maps.Keys(g.devices)) {
		d := g.devices[id]
		c := LinkCount{Device: id, Online: d.link != nil, Requests: d.sentBefore, ByType: maps.Clone(d.sentBeforeByType), Notices: d.noticesBefore}
		if d.link != nil {
			c.Requests += d.link.client.Sent()
			c.Notices += d.link.client.Notices().Batches
			if c.ByType == nil {
				c.ByType = map[string]int64{}
			}
			for t, n := range d.link.client.SentByType() {
				c.ByType[t] += n
			}
		}
		out = append(out, c)
	}
	return out
}

// link is device id's live link, nil while it is offline.
func (g *Gateway) link(id string) *remote {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d := g.devices[id]; d != nil {
		return d.link
	}
	return nil
}

// ids lists every device known, online or not, in name order, this
// daemon's own first among them.
func (g *Gateway) ids() []string {
	ids := append(g.store.Known(), g.o.Self)
	g.mu.Lock()
	for id := range g.devices {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	slices.Sort(ids)
	return slices.Compact(ids)
}

// known reports whether id is a device the gateway lists.
func (g *Gateway) known(id string) bool {
	if id == g.o.Self {
		return true
	}
	g.mu.Lock()
	_, ok := g.devices[id]
	g.mu.Unlock()
	return ok || g.store.Has(id)
}

// Counts reports how many devices are online and how many are known,
// this daemon's own entry left out.
func (g *Gateway) Counts() (online, known int) {
	for _, id := range g.ids() {
		if id == g.o.Self {
			continue
		}
		known++
		if g.link(id) != nil {
			online++
		}
	}
	return online, known
}

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
	if id == g.o.Self {
		desc.Platform, desc.Arch, desc.Version = g.o.Facts.Platform, g.o.Facts.Arch, g.o.Facts.Version
		desc.Implements = append(desc.Implements, g.o.Facts.Implements...)
		desc.Mount, desc.Online, desc.Address = "/", true, "local"
		now := time.Now()
		desc.ConnectedAt, desc.LastSeen = &g.started, &now
	}
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

func (g *Gateway) descIno(id string) uint64 { return g.descInos.Of(id) }

// applyDescriptor applies a descriptor written by the gateway's owner:
// only the description may change.
func (g *Gateway) applyDescriptor(id string, b []byte) error {
	var want map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&want); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return vfs.Error("write", id, syscall.EINVAL)
	}
	if dec.More() {
		return vfs.Error("write", id, syscall.EINVAL)
	}
	var have map[string]json.RawMessage
	json.Unmarshal(g.describe(id), &have)
	var desc *string
	for k, v := range want {
		if k == "description" {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return vfs.Error("write", id, syscall.EINVAL)
			}
			desc = &s
			continue
		}
		if k == "lastSeen" {
			continue // moves with every read; writing back a copy is no change
		}
		if !sameJSON(have[k], v) {
			g.log.Info("refused a change to a device's own fact", "device", id, "field", k)
			return vfs.Error("write", id, syscall.EPERM)
		}
	}
	if desc == nil {
		return nil
	}
	if err := g.store.SetDescription(id, *desc); err != nil {
		return vfs.Error("write", id, syscall.EIO)
	}
	return nil
}

// sameJSON reports whether two JSON values are equal as values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
