package devices

import (
	"bytes"
	"encoding/binary"
	"slices"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// A grant is kept per device, once, until ungranted; /mnt/ID's door shows
// it as the ACL's mask and named entries, sorted users before groups.
func TestGrantsAndGate(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Grant("lap", Grantee{ID: 7}, true); err == nil {
		t.Errorf("a grant on an unknown device worked")
	}
	s.SetDescription("lap", "the laptop")
	g := gate{store: s, id: "lap"}
	root := vfs.Attr{Ino: 1, Mode: syscall.S_IFDIR | 0o755, Uid: 1000, Gid: 1000}
	if a := g.Attr(root); a.Mode != syscall.S_IFDIR|0o700 || a.Uid != ownerUid || !a.Volatile || g.ACL(a) != nil {
		t.Errorf("no grants: mode %#o uid %d volatile %v acl %x; want 0700, the owner's, volatile, none", a.Mode, a.Uid, a.Volatile, g.ACL(a))
	}
	for _, gr := range []Grantee{{Group: true, ID: 50}, {ID: 9}, {ID: 3}, {ID: 9}} {
		if err := s.Grant("lap", gr, true); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.Grants("lap"), []Grantee{{Group: true, ID: 50}, {ID: 9}, {ID: 3}}; !slices.Equal(got, want) {
		t.Errorf("grants %v, want %v", got, want)
	}
	a := g.Attr(root)
	if a.Mode != syscall.S_IFDIR|0o750 {
		t.Errorf("granted: mode %#o, want 0750 (the ACL's mask r-x)", a.Mode)
	}
	type entry struct {
		Tag, Perm uint16
		ID        uint32
	}
	want := []entry{{aclUserObj, 7, aclNoID}, {aclUser, 5, 3}, {aclUser, 5, 9}, {aclGroupObj, 0, aclNoID}, {aclGroup, 5, 50}, {aclMask, 5, aclNoID}, {aclOther, 0, aclNoID}}
	acl := g.ACL(a)
	if binary.LittleEndian.Uint32(acl) != aclVersion {
		t.Fatalf("acl version %d, want %d", binary.LittleEndian.Uint32(acl), aclVersion)
	}
	var got []entry
	for r := bytes.NewReader(acl[4:]); r.Len() > 0; {
		var e entry
		binary.Read(r, binary.LittleEndian, &e)
		got = append(got, e)
	}
	if !slices.Equal(got, want) {
		t.Errorf("acl %v, want %v", got, want)
	}
	s.Grant("lap", Grantee{ID: 9}, false)
	s.Grant("lap", Grantee{ID: 3}, false)
	s.Grant("lap", Grantee{Group: true, ID: 50}, false)
	if gs := s.Grants("lap"); len(gs) != 0 {
		t.Errorf("after ungrant: %v, want none", gs)
	}
}
