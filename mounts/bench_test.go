package mounts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// BenchmarkLookupThroughNamespace walks /etc/man/page.1 and stats it: the
// namespace's share of a walk across two mounts.
func BenchmarkLookupThroughNamespace(b *testing.B) {
	tab := New()
	tab.Mount("/etc", vfs.NewStaticDir(nil))
	tab.Mount("/etc/man", vfs.NewStaticDir(map[string]vfs.Node{"page.1": vfs.NewTextFile([]byte("roff"))}))
	root := tab.Root()
	ctx := context.Background()
	for b.Loop() {
		n := root
		for _, name := range []string{"etc", "man", "page.1"} {
			var err error
			if n, err = n.Lookup(ctx, name); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := n.Attr(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupThroughView walks home/me/src/f on a disk tree, through
// the table and through a refusing view with the default patterns: the
// view's share (patterns matched under each host name) of what a gateway
// asks a device.
func BenchmarkLookupThroughView(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "me/src"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "me/src/f"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	tab := New()
	for _, at := range []string{"/home", "/workspaces", "/etc"} {
		d, err := diskfs.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		tab.Mount(at, d.Root())
	}
	tab.Local("/mnt", "/sys/devices", "/sys/config") // as a daemon has them
	view, err := tab.Refusing([]string{"**/.ssh/**", "**/.gnupg/**", "**/.aws/**", "**/.kube/**", "**/.config/gh/**",
		"**/.netrc", "**/.git-credentials", "**/.docker/config.json", "**/.pgpass", "**/.npmrc", "**/.pypirc",
		"**/id_{rsa,dsa,ecdsa,ecdsa_sk,ed25519,ed25519_sk,xmss}"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for name, root := range map[string]vfs.Node{"table": tab.Root(), "view": view} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				n := root
				for _, name := range []string{"home", "me", "src", "f"} {
					if n, err = n.Lookup(ctx, name); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
