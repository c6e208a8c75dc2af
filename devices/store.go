package devices

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gsvfs/gsvfs/internal/filestamp"
)

// Token is what a peer needs to link to a daemon: where to dial, the
// daemon's key to expect there, and a secret that the daemon keeps only
// as a hash, with the role it was issued for. Role here only lets the
// commands say early that a token is used the wrong way; the daemon
// decides by the role it recorded when it issued the token.
type Token struct {
	Addr    string `json:"a"`
	Gateway string `json:"g"`
	Secret  string `json:"s"`
	Device  string `json:"d,omitempty"`
	Role    Role   `json:"r,omitempty"`
}

// Role is what a token lets its holder be, and so which way the tree is
// served on the link it makes: a credential is for one role and one
// direction.
type Role string

const (
	// RoleDevice lets a device join the daemon that issued the token and
	// be served by it as its client: the issuer reads the device's tree,
	// never the other way.
	RoleDevice Role = "device"
	// RoleGateway lets one gateway dial the daemon that issued the token
	// (a device that listens) and be served that daemon's export.
	RoleGateway Role = "gateway"
)

// orDevice reads a missing role as a device's: tokens issued before roles
// existed, and their records, are taken in the narrower sense.
func (r Role) orDevice() Role {
	if r == "" {
		return RoleDevice
	}
	return r
}

// CheckRole accepts a token for the use of role, with a message that says
// how to get the right one.
func (t Token) CheckRole(role Role) error {
	switch have := t.Role.orDevice(); {
	case have == role:
		return nil
	case have == RoleDevice:
		return errors.New("this is a device token: it lets a device join the daemon that issued it, never a gateway dial that daemon (on the device, gsvfs device token --for-gateway issues a gateway token)")
	default:
		return errors.New("this is a gateway token: it is for gsvfs device add on a gateway, not for gsvfs serve --join (the gateway's owner issues device tokens with gsvfs device token)")
	}
}

const tokenPrefix = "gsvfs1."

// String is the token as `gsvfs device token` prints it.
func (t Token) String() string {
	b, _ := json.Marshal(t)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseToken reads a token printed by String.
func ParseToken(s string) (Token, error) {
	var t Token
	raw, ok := strings.CutPrefix(strings.TrimSpace(s), tokenPrefix)
	if !ok {
		return t, errors.New("not a gsvfs join token")
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Addr == "" || len(t.Gateway) != 64 || t.Secret == "" {
		return Token{}, errors.New("malformed gsvfs join token")
	}
	return t, nil
}

// Store is a gateway's private state: the tokens it issued (hashed) and
// the devices it knows, each with its key pinned on first join and the
// description its owner gave it. It lives in one file of the private
// directory, read afresh by every call and rewritten whole under a file
// lock, so `gsvfs device` commands and the daemon can change it side by
// side; the daemon notices their changes (Gateway.Watch).
type Store struct {
	dir string
	now func() time.Time
	mu  sync.Mutex // orders this process's calls; the file lock, other processes'

	// cached is the state as last read or written, and stamp the file it
	// came from: views (every listing of /sys/devices) read the file
	// again only when another process has replaced it. Guarded by mu.
	cached *storeState
	stamp  filestamp.Stamp // the file is replaced whole (a rename): its inode changes
}

type storeState struct {
	Tokens  []issued                `json:"tokens"`
	Devices map[string]*knownDevice `json:"devices"`
	// Gateways are the gateways that dialled this daemon as a device,
	// admitted with a gateway token and pinned as devices are; they are
	// not devices of it, and gsvfs device ls and rm cover them too.
	Gateways map[string]*knownDevice `json:"gateways,omitempty"`
}

// issued is a token as the gateway remembers it.
type issued struct {
	ID      string    `json:"id"`   // first 12 hex digits of the hash, to name it
	Hash    string    `json:"hash"` // SHA-256 of the secret
	Role    Role      `json:"role,omitempty"`
	Device  string    `json:"device,omitempty"`
	Expires time.Time `json:"expires"`
	Revoked bool      `json:"revoked,omitempty"`
	UsedBy  string    `json:"usedBy,omitempty"`
}

// knownDevice is what the gateway keeps of a device.
type knownDevice struct {
	Fingerprint string `json:"fingerprint,omitempty"`
	Description string `json:"description,omitempty"`
	Token       string `json:"token,omitempty"` // the id of the token it joined with
	// Dial is how the gateway reaches a device that listens (gsvfs
	// device add): the device's address, key and a token it issued.
	Dial *Token `json:"dial,omitempty"`
	// Root is the device's root as it last stat'ed online, for /mnt/ID
	// to show while the device is offline, across gateway restarts too.
	Root *RootAttr `json:"root,omitempty"`
	// Grants are the local users and groups the owner lets into the
	// device's tree besides itself (gate.go).
	Grants []Grantee `json:"grants,omitempty"`
}

// RootAttr is what the gateway keeps of a device's root: its permission
// bits, owner and times (ns since 1970).
type RootAttr struct {
	Perm  uint32 `json:"perm"`
	Uid   uint32 `json:"uid"`
	Gid   uint32 `json:"gid"`
	Atime int64  `json:"atime"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
}

// OpenStore opens the store in the private directory dir, making the
// directory if needed.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, now: time.Now}
	return s, s.view(func(*storeState) {})
}

func (s *Store) file() string { return filepath.Join(s.dir, "gateway.json") }

// load reads the state; a missing file is an empty state.
func (s *Store) load() (*storeState, error) {
	st := &storeState{}
	b, err := os.ReadFile(s.file())
	if err == nil {
		err = json.Unmarshal(b, st)
	} else if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("gateway state %s: %w", s.file(), err)
	}
	if st.Devices == nil {
		st.Devices = map[string]*knownDevice{}
	}
	if st.Gateways == nil {
		st.Gateways = map[string]*knownDevice{}
	}
	return st, nil
}

// view runs fn on the current state, which fn must not change. It reads
// the file only if it changed since this process last read or wrote it.
func (s *Store) view(fn func(*storeState)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.file())
	if err == nil && s.cached != nil && filestamp.Of(fi) == s.stamp {
		fn(s.cached)
		return nil
	}
	unlock, err := lockFile(filepath.Join(s.dir, "gateway.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.loadStamped()
	if err == nil {
		fn(st)
	}
	return err
}

// loadStamped loads the state and remembers it with the file's stamp.
func (s *Store) loadStamped() (*storeState, error) {
	fi, statErr := os.Stat(s.file())
	st, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cached, s.stamp = nil, filestamp.Stamp{}
	if statErr == nil {
		s.cached, s.stamp = st, filestamp.Of(fi)
	}
	return st, nil
}

// update runs fn on the current state and saves what it leaves, unless
// it fails.
func (s *Store) update(fn func(*storeState) error) error {
	return s.locked(func() error {
		st, err := s.load()
		if err != nil {
			return err
		}
		if err := fn(st); err == errUnchanged {
			return nil
		} else if err != nil {
			return err
		}
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := writePrivate(s.file(), append(b, '\n')); err != nil {
			return err
		}
		s.cached = nil // read back, with its stamp, by the next view
		return nil
	})
}

func (s *Store) locked(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockFile(filepath.Join(s.dir, "gateway.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// DefaultTokenLife is how long a token is valid unless told otherwise.
const DefaultTokenLife = 24 * time.Hour

// Issue makes a token for role at addr, bound to peer id device if not
// empty, valid for ttl. The secret is returned once, in the token, and
// kept only as its hash.
func (s *Store) Issue(addr, gateway, device string, role Role, ttl time.Duration) (Token, error) {
	if device != "" {
		if err := CheckID(device); err != nil {
			return Token{}, err
		}
	}
	if role != RoleDevice && role != RoleGateway {
		return Token{}, fmt.Errorf("no role %q", role)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return Token{}, err
	}
	t := Token{Addr: addr, Gateway: gateway, Secret: hex.EncodeToString(b), Device: device, Role: role}
	h := hashSecret(t.Secret)
	err := s.update(func(st *storeState) error {
		st.Tokens = append(st.Tokens, issued{ID: h[:12], Hash: h, Role: role, Device: device, Expires: s.now().Add(ttl)})
		return nil
	})
	return t, err
}

// Revoke revokes the token named id (a prefix of it suffices if it names
// one token). A device that joined with it is forgotten too: its key is
// no longer pinned, so it cannot join again without a new token, and the
// daemon closes its link.
func (s *Store) Revoke(id string) error {
	return s.update(func(st *storeState) error {
		var found *issued
		for i := range st.Tokens {
			if id != "" && strings.HasPrefix(st.Tokens[i].ID, id) {
				if found != nil {
					return fmt.Errorf("%q names more than one token", id)
				}
				found = &st.Tokens[i]
			}
		}
		if found == nil {
			return fmt.Errorf("no token %q", id)
		}
		found.Revoked = true
		for _, peers := range []map[string]*knownDevice{st.Devices, st.Gateways} {
			if d := peers[found.UsedBy]; d != nil && d.Token == found.ID {
				d.Fingerprint = ""
			}
		}
		return nil
	})
}

// Forget removes peer id in every role: the device's pinned key,
// description and dial entry, the gateway's pin, and revokes the tokens
// it joined with. The daemon then closes every link of that peer.
func (s *Store) Forget(id string) error {
	return s.update(func(st *storeState) error {
		if st.Devices[id] == nil && st.Gateways[id] == nil {
			return fmt.Errorf("no device or gateway %q", id)
		}
		delete(st.Devices, id)
		delete(st.Gateways, id)
		for i := range st.Tokens {
			if st.Tokens[i].UsedBy == id {
				st.Tokens[i].Revoked = true
			}
		}
		return nil
	})
}

// TokenInfo describes an issued token, never its secret.
type TokenInfo struct {
	ID, Device, UsedBy string
	Role               Role
	Expires            time.Time
	Revoked            bool
}

// Tokens lists the tokens issued, oldest first.
func (s *Store) Tokens() ([]TokenInfo, error) {
	var out []TokenInfo
	err := s.view(func(st *storeState) {
		for _, t := range st.Tokens {
			out = append(out, TokenInfo{ID: t.ID, Role: t.Role.orDevice(), Device: t.Device, UsedBy: t.UsedBy, Expires: t.Expires, Revoked: t.Revoked})
		}
	})
	return out, err
}

// PeerInfo is one pinned peer: a device of this gateway (joined, or
// dialled by it) or a gateway that dials this daemon.
type PeerInfo struct {
	ID, Fingerprint, Token, Description string
	Role                                Role
	Dialled                             bool // this daemon dials it (gsvfs device add)
}

// Peers lists every peer the store knows, in every role, so that no pin
// exists that the owner cannot see.
func (s *Store) Peers() ([]PeerInfo, error) {
	var out []PeerInfo
	err := s.view(func(st *storeState) {
		for role, peers := range map[Role]map[string]*knownDevice{RoleDevice: st.Devices, RoleGateway: st.Gateways} {
			for id, d := range peers {
				out = append(out, PeerInfo{ID: id, Role: role, Fingerprint: d.Fingerprint, Token: d.Token,
					Description: d.Description, Dialled: d.Dial != nil})
			}
		}
	})
	slices.SortFunc(out, func(a, b PeerInfo) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Role, b.Role))
	})
	return out, err
}

// ErrRefused is the cause of every refused join.
var ErrRefused = errors.New("join refused")

// Admit decides whether the peer with key fingerprint fp may be device
// id. A device whose key is pinned is admitted by its key alone; an
// unknown one needs a live device token for that id, and its key is
// pinned then. Another key for a pinned id is refused whatever the token.
func (s *Store) Admit(id, fp, secret string) error {
	return s.admit(id, fp, secret, RoleDevice)
}

// AdmitGateway is Admit for a gateway that dials this daemon, a device
// that listens: only a gateway token admits it, never a device token.
func (s *Store) AdmitGateway(id, fp, secret string) error {
	return s.admit(id, fp, secret, RoleGateway)
}

// table is the pins of the peers of role.
func (st *storeState) table(role Role) map[string]*knownDevice {
	if role == RoleGateway {
		return st.Gateways
	}
	return st.Devices
}

// pinned reports whether id is pinned in role with key fp. A gateway's
// pin holds only if it was made with a gateway token: one made with a
// device token (as daemons before roles allowed) admits nothing.
func (st *storeState) pinned(role Role, id, fp string) bool {
	d := st.table(role)[id]
	if d == nil || d.Fingerprint == "" || subtle.ConstantTimeCompare([]byte(d.Fingerprint), []byte(fp)) != 1 {
		return false
	}
	return role != RoleGateway || st.tokenRole(d.Token) == RoleGateway
}

// tokenRole is the role of the token named id, device if unknown.
func (st *storeState) tokenRole(id string) Role {
	for _, t := range st.Tokens {
		if t.ID == id {
			return t.Role.orDevice()
		}
	}
	return RoleDevice
}

func (s *Store) admit(id, fp, secret string, role Role) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	return s.update(func(st *storeState) error {
		peers := st.table(role)
		d := peers[id]
		if st.pinned(role, id, fp) {
			return errUnchanged
		}
		if d != nil && d.Fingerprint != "" && d.Fingerprint != fp {
			return fmt.Errorf("%w: %s %s joined before with another key", ErrRefused, role, id)
		}
		t, err := s.liveToken(st, secret, id, role)
		if err != nil {
			return err
		}
		t.UsedBy = id
		if d == nil {
			d = &knownDevice{}
			peers[id] = d
		}
		d.Fingerprint, d.Token = fp, t.ID
		return nil
	})
}

// AddDialed records a device that the gateway dials, with the gateway
// token the device issued for it: the device's address and key, and the
// secret that admits the gateway there. The device's key is pinned at
// once. A device token is refused: it admits a device, not a gateway.
func (s *Store) AddDialed(id string, tok Token) error {
	if err := CheckID(id); err != nil {
		return err
	}
	if err := tok.CheckRole(RoleGateway); err != nil {
		return err
	}
	return s.update(func(st *storeState) error {
		d := st.Devices[id]
		if d == nil {
			d = &knownDevice{}
			st.Devices[id] = d
		}
		if d.Fingerprint != "" && d.Fingerprint != tok.Gateway {
			return fmt.Errorf("device %s is known with another key; gsvfs device rm it first", id)
		}
		d.Fingerprint, d.Dial = tok.Gateway, &tok
		return nil
	})
}

// Dialed lists the devices the gateway dials, with their tokens.
func (s *Store) Dialed() map[string]Token {
	out := map[string]Token{}
	s.view(func(st *storeState) {
		for id, d := range st.Devices {
			if d.Dial != nil {
				out[id] = *d.Dial
			}
		}
	})
	return out
}

// errUnchanged ends an update that needs no saving, successfully.
var errUnchanged = errors.New("unchanged")

// Pinned reports whether device id is admitted with key fp now.
func (s *Store) Pinned(id, fp string) bool { return s.pinnedAs(RoleDevice, id, fp) }

// PinnedGateway reports whether gateway id is admitted with key fp now.
func (s *Store) PinnedGateway(id, fp string) bool { return s.pinnedAs(RoleGateway, id, fp) }

func (s *Store) pinnedAs(role Role, id, fp string) bool {
	ok := false
	s.view(func(st *storeState) { ok = st.pinned(role, id, fp) })
	return ok
}

func (s *Store) liveToken(st *storeState, secret, id string, role Role) (*issued, error) {
	if secret == "" {
		return nil, fmt.Errorf("%w: no token", ErrRefused)
	}
	h := hashSecret(secret)
	for i := range st.Tokens {
		t := &st.Tokens[i]
		if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(h)) != 1 {
			continue
		}
		switch {
		case t.Role.orDevice() != role:
			return nil, fmt.Errorf("%w: token %s is a %s token, not a %s token", ErrRefused, t.ID, t.Role.orDevice(), role)
		case t.Revoked:
			return nil, fmt.Errorf("%w: token %s is revoked", ErrRefused, t.ID)
		case !s.now().Before(t.Expires):
			return nil, fmt.Errorf("%w: token %s expired", ErrRefused, t.ID)
		case t.Device != "" && t.Device != id:
			return nil, fmt.Errorf("%w: token %s is for device %s", ErrRefused, t.ID, t.Device)
		case t.UsedBy != "" && t.UsedBy != id:
			return nil, fmt.Errorf("%w: token %s was used by device %s", ErrRefused, t.ID, t.UsedBy)
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w: unknown token", ErrRefused)
}

// Known lists the ids of the devices the gateway knows.
func (s *Store) Known() []string {
	var ids []string
	s.view(func(st *storeState) {
		for id := range st.Devices {
			ids = append(ids, id)
		}
	})
	return ids
}

// Has reports whether the gateway knows device id.
func (s *Store) Has(id string) bool {
	ok := false
	s.view(func(st *storeState) { ok = st.Devices[id] != nil })
	return ok
}

// Description is the owner's description of device id.
func (s *Store) Description(id string) string {
	var text string
	s.view(func(st *storeState) {
		if d := st.Devices[id]; d != nil {
			text = d.Description
		}
	})
	return text
}

// SetDescription records the owner's description of device id.
func (s *Store) SetDescription(id, text string) error {
	return s.update(func(st *storeState) error {
		d := st.Devices[id]
		if d == nil {
			d = &knownDevice{}
			st.Devices[id] = d
		}
		d.Description = text
		return nil
	})
}

// CheckID accepts a device id that is usable as one path element of
// /mnt and /sys/devices: 1-64 of [A-Za-z0-9._-], not starting with '.'.
func CheckID(id string) error {
	if id == "" || len(id) > 64 || id[0] == '.' {
		return fmt.Errorf("bad device id %q", id)
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("bad device id %q: only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}

// LastRoot is device id's root as last seen online, nil if never.
func (s *Store) LastRoot(id string) *RootAttr {
	var r *RootAttr
	s.view(func(st *storeState) {
		if d := st.Devices[id]; d != nil && d.Root != nil {
			c := *d.Root
			r = &c
		}
	})
	return r
}

// SetLastRoots records devices' roots, by id, as seen online now, in one
// write; a device the store does not know is not added.
func (s *Store) SetLastRoots(roots map[string]RootAttr) error {
	return s.update(func(st *storeState) error {
		changed := false
		for id, r := range roots {
			d := st.Devices[id]
			if d == nil || d.Root != nil && *d.Root == r {
				continue
			}
			d.Root = &r
			changed = true
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
}

// Grant lets grantee into device id's tree (/mnt/ID), or, with on
// false, no longer; a device the store does not know is an error.
func (s *Store) Grant(id string, g Grantee, on bool) error {
	return s.update(func(st *storeState) error {
		d := st.Devices[id]
		if d == nil {
			return fmt.Errorf("no device %s: gsvfs device ls lists those this gateway knows", id)
		}
		has := slices.Contains(d.Grants, g)
		switch {
		case on == has:
			return errUnchanged
		case on:
			d.Grants = append(d.Grants, g)
		default:
			d.Grants = slices.DeleteFunc(d.Grants, func(x Grantee) bool { return x == g })
		}
		return nil
	})
}

// Grants lists whom the owner lets into device id's tree.
func (s *Store) Grants(id string) []Grantee {
	var gs []Grantee
	s.view(func(st *storeState) {
		if d := st.Devices[id]; d != nil {
			gs = slices.Clone(d.Grants)
		}
	})
	return gs
}
