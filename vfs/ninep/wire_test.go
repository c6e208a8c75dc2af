package ninep

import (
	"reflect"
	"strings"
	"testing"
)

// plainFields are the integer fields of the messages that carry no host
// number, so they go on the wire as they are: ids, counts, offsets,
// sizes, times and the protocol's own numbers. Fids (fields named *fid)
// and data ([]byte) are passed over. A field that carries a
// host's number has a wire type instead (wire.go).
var plainFields = map[string]string{
	"QID.Type": "protocol's", "QID.Version": "server's", "QID.Path": "server's",
	"Rstatfs.Type": "v9fs's magic", "Rstatfs.Bsize": "size", "Rstatfs.Blocks": "count",
	"Rstatfs.Bfree": "count", "Rstatfs.Bavail": "count", "Rstatfs.Files": "count",
	"Rstatfs.Ffree": "count", "Rstatfs.Fsid": "server's", "Rstatfs.Namelen": "size",
	"Rlopen.Iounit": "size", "Tlcreate.Gid": "id", "Tsymlink.Gid": "id",
	"Tmknod.Major": "device major", "Tmknod.Minor": "device minor", "Tmknod.Gid": "id",
	"Tgetattr.Mask": "protocol's", "Rgetattr.Valid": "protocol's", "Rgetattr.Uid": "id",
	"Rgetattr.Gid": "id", "Rgetattr.Nlink": "count", "Rgetattr.Size": "size",
	"Rgetattr.Blksize": "size", "Rgetattr.Blocks": "count", "Rgetattr.AtimeSec": "time",
	"Rgetattr.AtimeNsec": "time", "Rgetattr.MtimeSec": "time", "Rgetattr.MtimeNsec": "time",
	"Rgetattr.CtimeSec": "time", "Rgetattr.CtimeNsec": "time", "Rgetattr.BtimeSec": "time",
	"Rgetattr.BtimeNsec": "time", "Rgetattr.Gen": "server's", "Rgetattr.DataVersion": "server's",
	"Tsetattr.Valid": "protocol's", "Tsetattr.Uid": "id", "Tsetattr.Gid": "id", "Tsetattr.Size": "size",
	"Tsetattr.AtimeSec": "time", "Tsetattr.AtimeNsec": "time", "Tsetattr.MtimeSec": "time",
	"Tsetattr.MtimeNsec": "time", "Rxattrwalk.Size": "size", "Txattrcreate.Size": "size",
	"Treaddir.Offset": "offset", "Treaddir.Count": "count", "Tfsync.Datasync": "boolean",
	"Tlock.Start": "offset", "Tlock.Length": "size", "Tlock.ProcID": "client's id",
	"lockDesc.Start": "offset", "lockDesc.Length": "size", "lockDesc.ProcID": "client's id",
	"Tmkdir.Gid": "id", "Tversion.Msize": "size", "Tauth.NUname": "id", "Tflush.OldTag": "tag",
	"Tread.Offset": "offset", "Tread.Count": "count", "Twrite.Offset": "offset",
	"Rwrite.Count": "count", "Twatch.Count": "count", "Twalkreaddir.Count": "count", "wireChange.Flags": "protocol's", "Tnotify.Flags": "protocol's",
	"wireChange.Dir": "server's", "Dirent.Offset": "offset",
}

// TestWireFieldsTyped fails when a message's integer field is neither of
// a wire type nor listed as carrying no host number: a new field that
// would put a host's number on the wire unconverted.
func TestWireFieldsTyped(t *testing.T) {
	bodies := []reflect.Type{reflect.TypeFor[Dirent](), reflect.TypeFor[DirentPlus]()}
	for typ, f := range messageTypes {
		if f != nil {
			bodies = append(bodies, reflect.TypeOf(f()).Elem())
		} else if typ > 0 && typ < 256 && newMessage(uint8(typ)) != nil {
			t.Fatalf("type %d: no constructor", typ)
		}
	}
	seen := map[string]bool{}
	for _, b := range bodies {
		checkFields(t, b, seen)
	}
	for name := range plainFields {
		if !seen[name] {
			t.Errorf("%s is listed as plain but is no integer field of a message", name)
		}
	}
}

// checkFields checks each integer field of the struct s and of the
// structs it holds.
func checkFields(t *testing.T, s reflect.Type, seen map[string]bool) {
	for i := range s.NumField() {
		f := s.Field(i)
		ft := f.Type
		if ft == reflect.TypeFor[[]byte]() || strings.HasSuffix(strings.ToLower(f.Name), "fid") || f.Name == "Fids" {
			continue // data, and fids: the client's own numbers
		}
		for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		name := s.Name() + "." + f.Name
		switch {
		case ft.Kind() == reflect.Struct:
			checkFields(t, ft, seen)
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64 && !seen[name]:
			seen[name] = true
			isWire := ft.PkgPath() == s.PkgPath() && strings.HasPrefix(ft.Name(), "wire")
			if _, plain := plainFields[name]; !isWire && !plain {
				t.Errorf("%s is a %s: give it a wire type (converted through hostNumbers) or list it in plainFields", name, ft)
			}
		}
	}
}
