package shelld

import "testing"

// A path a session sees in its mount namespace is the host's directory
// under the deepest bind that holds it.
func TestHostPathOfBinds(t *testing.T) {
	binds := []Bind{{Path: "/workspaces", Dir: "/s/ws"}, {Path: "/workspaces/data", Dir: "/srv/data"}}
	for _, tc := range []struct{ p, want string }{
		{"/workspaces", "/s/ws"},
		{"/workspaces/app/src", "/s/ws/app/src"},
		{"/workspaces/data", "/srv/data"},
		{"/workspaces/data/x", "/srv/data/x"},
		{"/workspaces/database", "/s/ws/database"},
		{"/workspacesx", "/workspacesx"},
		{"/tmp", "/tmp"},
	} {
		if got := hostPath(tc.p, binds); got != tc.want {
			t.Errorf("hostPath(%s) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
