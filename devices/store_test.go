package devices

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	keyA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	keyB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func newStore(t *testing.T) (*Store, *time.Time) {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "private"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	return s, &now
}

func issue(t *testing.T, s *Store, device string, ttl time.Duration) Token {
	t.Helper()
	return issueFor(t, s, device, RoleDevice, ttl)
}

func issueFor(t *testing.T, s *Store, device string, role Role, ttl time.Duration) Token {
	t.Helper()
	tok, err := s.Issue("gw.example:7000", keyA, device, role, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func wantRefused(t *testing.T, what string, err error, because string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), because) {
		t.Errorf("%s: got %v, want a refusal saying %q", what, err, because)
	}
}

func TestAdmit(t *testing.T) {
	s, now := newStore(t)
	bound := issue(t, s, "lap", time.Hour)
	free := issue(t, s, "", time.Hour)
	short := issue(t, s, "", time.Minute)

	wantRefused(t, "no token", s.Admit("lap", keyA, ""), "no token")
	wantRefused(t, "forged token", s.Admit("lap", keyA, strings.Repeat("0", 64)), "unknown token")
	wantRefused(t, "token bound to another id", s.Admit("desk", keyA, bound.Secret), "is for device lap")
	if err := s.Admit("lap", keyA, bound.Secret); err != nil {
		t.Fatalf("first join with a live token: %v", err)
	}
	if err := s.Admit("lap", keyA, ""); err != nil {
		t.Errorf("a pinned key joins without a token: %v", err)
	}
	wantRefused(t, "another key for a pinned id, even with a live token", s.Admit("lap", keyB, free.Secret), "another key")
	wantRefused(t, "a used token for another id", s.Admit("desk", keyB, bound.Secret), "is for device lap")
	if err := s.Admit("desk", keyB, free.Secret); err != nil {
		t.Fatalf("join with an unbound token: %v", err)
	}
	wantRefused(t, "an unbound token once used", s.Admit("tab", keyB, free.Secret), "was used by device desk")

	*now = now.Add(2 * time.Minute)
	wantRefused(t, "expired token", s.Admit("tab", keyA, short.Secret), "expired")
	wantRefused(t, "bad id", s.Admit("../x", keyA, free.Secret), "bad device id")
}

func TestRevokeAndForget(t *testing.T) {
	s, _ := newStore(t)
	tok := issue(t, s, "", time.Hour)
	if err := s.Admit("lap", keyA, tok.Secret); err != nil {
		t.Fatal(err)
	}
	toks, _ := s.Tokens()
	if err := s.Revoke(toks[0].ID[:6]); err != nil {
		t.Fatal(err)
	}
	if s.Pinned("lap", keyA) {
		t.Errorf("device still pinned after its token was revoked")
	}
	wantRefused(t, "join after revocation", s.Admit("lap", keyA, tok.Secret), "revoked")

	tok2 := issue(t, s, "", time.Hour)
	if err := s.Admit("lap", keyA, tok2.Secret); err != nil {
		t.Fatal(err)
	}
	s.SetDescription("lap", "my laptop")
	if err := s.Forget("lap"); err != nil {
		t.Fatal(err)
	}
	if len(s.Known()) != 0 || s.Description("lap") != "" {
		t.Errorf("after Forget: known %v, description %q", s.Known(), s.Description("lap"))
	}
	wantRefused(t, "join after rm with its old token", s.Admit("lap", keyA, tok2.Secret), "revoked")
}

// A token is for one role: a device token never admits a gateway (whose
// link would be served this daemon's tree), a gateway token never a
// device, and each is listed with its role.
func TestTokenRoles(t *testing.T) {
	s, _ := newStore(t)
	dev := issue(t, s, "laptop", time.Hour)
	gw := issueFor(t, s, "hub", RoleGateway, time.Hour)

	wantRefused(t, "a device token used by a gateway", s.AdmitGateway("laptop", keyA, dev.Secret), "is a device token")
	wantRefused(t, "a gateway token used by a device", s.Admit("hub", keyB, gw.Secret), "is a gateway token")
	if s.PinnedGateway("laptop", keyA) || s.Pinned("hub", keyB) {
		t.Errorf("a refused peer was pinned")
	}
	if err := s.AdmitGateway("hub", keyB, gw.Secret); err != nil {
		t.Fatalf("a gateway with its gateway token: %v", err)
	}
	if err := s.Admit("laptop", keyA, dev.Secret); err != nil {
		t.Fatalf("a device with its device token: %v", err)
	}
	if err := s.AddDialed("desk", dev); err == nil || !strings.Contains(err.Error(), "--for-gateway") {
		t.Errorf("gsvfs device add with a device token: %v, want refused, naming --for-gateway", err)
	}
	var roles []string
	toks, _ := s.Tokens()
	for _, tk := range toks {
		roles = append(roles, string(tk.Role))
	}
	if got := strings.Join(roles, " "); got != "device gateway" {
		t.Errorf("token roles: %q", got)
	}
	var peers []string
	ps, _ := s.Peers()
	for _, p := range ps {
		peers = append(peers, p.ID+":"+string(p.Role))
	}
	if got := strings.Join(peers, " "); got != "hub:gateway laptop:device" {
		t.Errorf("pinned peers: %q", got)
	}
}

// storeText is the store's file as it is on disk.
func storeText(t *testing.T, s *Store) string {
	t.Helper()
	b, err := os.ReadFile(s.file())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A store written before tokens had roles: its tokens are device
// tokens, and a gateway pinned with one of them (the hole roles close)
// admits nothing, with or without the token, until a gateway token.
func TestOldStoreReadsAsDeviceTokens(t *testing.T) {
	s, _ := newStore(t)
	tok := issue(t, s, "laptop", time.Hour)
	now := storeText(t, s)
	id := hashSecret(tok.Secret)[:12]
	old := strings.Replace(now, `"role": "device",`, "", 1)
	old = strings.Replace(old, `"devices": {}`, `"devices": {}, "gateways": {"laptop": {"fingerprint": "`+keyA+`", "token": "`+id+`"}}`, 1)
	if old == now || strings.Contains(old, `"role"`) {
		t.Fatalf("could not write an old store from:\n%s", now)
	}
	if err := os.WriteFile(s.file(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.PinnedGateway("laptop", keyA) {
		t.Errorf("a gateway pinned with a device token is still admitted")
	}
	wantRefused(t, "that gateway dialling again", s.AdmitGateway("laptop", keyA, tok.Secret), "is a device token")
	if toks, _ := s.Tokens(); len(toks) != 1 || toks[0].Role != RoleDevice {
		t.Errorf("an old token reads as %+v, want a device token", toks)
	}
	if ps, _ := s.Peers(); len(ps) != 1 || ps[0].Role != RoleGateway {
		t.Errorf("the old gateway pin is not listed: %+v", ps)
	}
	if err := s.Forget("laptop"); err != nil {
		t.Fatalf("gsvfs device rm of a gateway pin: %v", err)
	}
	if ps, _ := s.Peers(); len(ps) != 0 {
		t.Errorf("after rm: %+v", ps)
	}
}

// The store keeps hashes only: no secret is ever written, and the files
// are the owner's alone.
func TestStoreKeepsNoSecret(t *testing.T) {
	s, _ := newStore(t)
	tok := issue(t, s, "lap", time.Hour)
	if strings.Contains(storeText(t, s), tok.Secret) {
		t.Errorf("the store holds the token's secret")
	}
	for _, p := range []string{s.dir, s.file()} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want nothing for group and others", p, st.Mode().Perm())
		}
	}
}

func TestParseToken(t *testing.T) {
	tok := Token{Addr: "gw:7000", Gateway: keyA, Secret: "s3cret", Device: "lap"}
	got, err := ParseToken(" " + tok.String() + "\n")
	if err != nil || got != tok {
		t.Errorf("round trip: got %+v, %v; want %+v", got, err, tok)
	}
	for _, bad := range []string{"", "gsvfs1.", "gsvfs1.!!!", "other." + tok.String()[7:], "gsvfs1.e30"} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q): no error", bad)
		}
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"lap", "mac-book.2", "A_b"} {
		if err := CheckID(ok); err != nil {
			t.Errorf("CheckID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", "a b", strings.Repeat("x", 65), "é"} {
		if err := CheckID(bad); err == nil {
			t.Errorf("CheckID(%q): accepted", bad)
		}
	}
}
