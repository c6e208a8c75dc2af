package devices

import (
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
	"strings"
	"sync"
	"syscall"
	"time"
)

// Token is what a device needs to join a gateway: where to dial, the
// gateway's key to expect there, and a secret that the gateway keeps only
// as a hash.
type Token struct {
	Addr    string `json:"a"`
	Gateway string `json:"g"`
	Secret  string `json:"s"`
	Device  string `json:"d,omitempty"`
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
	stamp  fileStamp
}

// fileStamp tells one version of the state file from another: it is
// replaced whole (a rename), so its inode changes with every write.
type fileStamp struct {
	ino   uint64
	mtime time.Time
	size  int64
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{mtime: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(sys.Ino)
	}
	return st
}

type storeState struct {
	Tokens  []issued                `json:"tokens"`
	Devices map[string]*knownDevice `json:"devices"`
	// Gateways are the gateways that dialled this daemon as a device,
	// admitted and pinned as devices are; they are not devices of it.
	Gateways map[string]*knownDevice `json:"gateways,omitempty"`
}

// issued is a token as the gateway remembers it.
type issued struct {
	ID      string    `json:"id"`   // first 12 hex digits of the hash, to name it
	Hash    string    `json:"hash"` // SHA-256 of the secret
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
	if err == nil && s.cached != nil && stampOf(fi) == s.stamp {
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
	s.cached, s.stamp = nil, fileStamp{}
	if statErr == nil {
		s.cached, s.stamp = st, stampOf(fi)
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

// Issue makes a token for joining at addr, bound to device if not empty,
// valid for ttl. The secret is returned once, in the token, and kept
// only as its hash.
func (s *Store) Issue(addr, gateway, device string, ttl time.Duration) (Token, error) {
	if device != "" {
		if err := CheckID(device); err != nil {
			return Token{}, err
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return Token{}, err
	}
	t := Token{Addr: addr, Gateway: gateway, Secret: hex.EncodeToString(b), Device: device}
	h := hashSecret(t.Secret)
	err := s.update(func(st *storeState) error {
		st.Tokens = append(st.Tokens, issued{ID: h[:12], Hash: h, Device: device, Expires: s.now().Add(ttl)})
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

// Forget removes device id: its pinned key, its description, and the
// tokens it joined with.
func (s *Store) Forget(id string) error {
	return s.update(func(st *storeState) error {
		if st.Devices[id] == nil {
			return fmt.Errorf("no device %q", id)
		}
		delete(st.Devices, id)
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
	Expires            time.Time
	Revoked            bool
}

// Tokens lists the tokens issued, oldest first.
func (s *Store) Tokens() ([]TokenInfo, error) {
	var out []TokenInfo
	err := s.view(func(st *storeState) {
		for _, t := range st.Tokens {
			out = append(out, TokenInfo{ID: t.ID, Device: t.Device, UsedBy: t.UsedBy, Expires: t.Expires, Revoked: t.Revoked})
		}
	})
	return out, err
}

// ErrRefused is the cause of every refused join.
var ErrRefused = errors.New("join refused")

// Admit decides whether the peer with key fingerprint fp may be device
// id. A device whose key is pinned is admitted by its key alone; an
// unknown one needs a live token for that id, and its key is pinned
// then. Another key for a pinned id is refused whatever the token.
func (s *Store) Admit(id, fp, secret string) error {
	return s.admit(id, fp, secret, func(st *storeState) map[string]*knownDevice { return st.Devices })
}

// AdmitGateway is Admit for a gateway that dials this daemon as a device.
func (s *Store) AdmitGateway(id, fp, secret string) error {
	return s.admit(id, fp, secret, func(st *storeState) map[string]*knownDevice { return st.Gateways })
}

func (s *Store) admit(id, fp, secret string, table func(*storeState) map[string]*knownDevice) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	return s.update(func(st *storeState) error {
		peers := table(st)
		d := peers[id]
		if d != nil && d.Fingerprint != "" {
			if subtle.ConstantTimeCompare([]byte(d.Fingerprint), []byte(fp)) == 1 {
				return errUnchanged
			}
			return fmt.Errorf("%w: device %s joined before with another key", ErrRefused, id)
		}
		t, err := s.liveToken(st, secret, id)
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

// AddDialed records a device that the gateway dials, with the token the
// device issued for it: the device's address and key, and the secret
// that admits the gateway there. The device's key is pinned at once.
func (s *Store) AddDialed(id string, tok Token) error {
	if err := CheckID(id); err != nil {
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
func (s *Store) Pinned(id, fp string) bool {
	ok := false
	s.view(func(st *storeState) {
		d := st.Devices[id]
		ok = d != nil && d.Fingerprint == fp
	})
	return ok
}

// PinnedGateway reports whether gateway id is admitted with key fp now.
func (s *Store) PinnedGateway(id, fp string) bool {
	ok := false
	s.view(func(st *storeState) {
		d := st.Gateways[id]
		ok = d != nil && d.Fingerprint == fp
	})
	return ok
}

func (s *Store) liveToken(st *storeState, secret, id string) (*issued, error) {
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
