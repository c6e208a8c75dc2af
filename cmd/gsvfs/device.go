package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/devices"
	"github.com/gsvfs/gsvfs/internal/client"
	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs"
)

// deviceCommand manages the devices a gateway knows and the tokens they
// join with. It works on the state directory's private part, which the
// daemon watches, so changes apply to a running gateway within a second.
func deviceCommand() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "device",
		Short: "manage the devices of a gateway and their join tokens",
		Long: `device manages the machines joined to this gateway (see gsvfs-devices(7)):
it issues join tokens, adds devices to dial, lists devices and tokens, and
removes devices or revokes tokens. A running gateway applies a change
within a second.`,
	}
	cmd.PersistentFlags().StringVar(&root, "root", "", "the gateway's state directory (default $XDG_DATA_HOME/gsvfs, /var/lib/gsvfs for root)")
	rootDir := func() (string, error) {
		if root == "" {
			root = gsvfsd.DefaultRoot()
		}
		return gsvfsd.PrepareRoot(root)
	}
	cmd.AddCommand(deviceTokenCommand(rootDir), deviceAddCommand(rootDir), deviceLsCommand(rootDir),
		deviceRmCommand(rootDir), deviceRevokeCommand(rootDir), deviceTokensCommand(rootDir),
		deviceGrantCommand(rootDir, true), deviceGrantCommand(rootDir, false))
	return cmd
}

func openStore(rootDir func() (string, error)) (*devices.Store, string, error) {
	root, err := rootDir()
	if err != nil {
		return nil, "", err
	}
	s, err := devices.OpenStore(gsvfsd.PrivateDir(root))
	return s, root, err
}

func deviceTokenCommand(rootDir func() (string, error)) *cobra.Command {
	var device, addr string
	var forGateway bool
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "token [--for-gateway] [--device ID] [--expires DUR] [--addr HOST:PORT]",
		Short: "print a token a device joins this gateway with (or, --for-gateway, a gateway dials this device with)",
		Long: `token prints one token on stdout. By default it is a device token: a device
joins this gateway with it (gsvfs serve --join TOKEN) and is served by it,
never the other way. --for-gateway makes a gateway token instead, for a
daemon that listens and wants one gateway to dial it (gsvfs device add on
that gateway): that gateway is then served this daemon's export.
A token carries this daemon's address and key fingerprint; the daemon keeps
only a hash of its secret. It expires (default 24h), can be bound to one
peer id, and once used belongs to that peer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, root, err := openStore(rootDir)
			if err != nil {
				return err
			}
			id, err := devices.LoadIdentity(gsvfsd.PrivateDir(root))
			if err != nil {
				return err
			}
			if addr == "" {
				if addr, err = gatewayAddr(root, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			if expires <= 0 {
				return errors.New("--expires must be positive")
			}
			role := devices.RoleDevice
			if forGateway {
				role = devices.RoleGateway
			}
			tok, err := store.Issue(addr, id.Fingerprint, device, role, expires)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	cmd.Flags().BoolVar(&forGateway, "for-gateway", false, "issue a gateway token: it lets one gateway dial this daemon and be served its export")
	cmd.Flags().StringVar(&device, "device", "", "bind the token to this peer id (the device's, or with --for-gateway the gateway's)")
	cmd.Flags().DurationVar(&expires, "expires", devices.DefaultTokenLife, "how long the token is valid")
	cmd.Flags().StringVar(&addr, "addr", "", "the address peers dial (default the address the tls listener advertises)")
	return cmd
}

// gatewayAddr is where peers reach the daemon of root: the address its
// running daemon advertises for its TLS listener. It warns on warn when
// that address is loopback, which no other machine or network namespace
// can dial.
func gatewayAddr(root string, warn io.Writer) (string, error) {
	b, err := os.ReadFile(filepath.Join(gsvfsd.PrivateDir(root), "listen"))
	if err != nil {
		return "", errors.New("no gateway listens on this state directory (gsvfs serve --listen tls:HOST:PORT); pass --addr")
	}
	addr := strings.Fields(string(b))
	if len(addr) == 0 {
		return "", errors.New("the gateway's listener is unknown; pass --addr")
	}
	a, loopback := advertised(addr[0], routableIPs())
	if loopback {
		fmt.Fprintf(warn, "gsvfs: warning: the token names %s, a loopback address: only this machine can use it; pass --addr HOST:PORT with an address its peer can reach\n", a)
	}
	return a, nil
}

func deviceLsCommand(rootDir func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "list every peer the gateway knows, in every role, online or not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, root, err := openStore(rootDir)
			if err != nil {
				return err
			}
			peers, err := store.Peers()
			if err != nil {
				return err
			}
			descs, err := readDevices(root)
			if err != nil {
				// The pins are listed all the same: no daemon, no link.
				fmt.Fprintf(cmd.ErrOrStderr(), "gsvfs: %v; listing the pinned peers without their state\n", err)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tROLE\tONLINE\tPLATFORM\tADDRESS\tMOUNT\tDESCRIPTION")
			for _, r := range peerRows(peers, descs) {
				fmt.Fprintln(w, strings.Join(r, "\t"))
			}
			return w.Flush()
		},
	}
}

// peerRows is one row per peer for ls: each device of /sys/devices with
// its state (this daemon's own as "self"), then every pinned peer that
// /sys/devices does not show (gateways that dial this daemon, and
// devices when no daemon answers), so that no pin goes unlisted.
func peerRows(peers []devices.PeerInfo, descs []deviceInfo) [][]string {
	var rows [][]string
	shown := map[string]bool{}
	for _, d := range descs {
		role := string(devices.RoleDevice)
		if d.Mount == "/" {
			role = "self"
		}
		shown[d.DeviceID] = true
		rows = append(rows, []string{d.DeviceID, role, fmt.Sprint(d.Online), dash(d.Platform + "/" + d.Arch), dash(d.Address), d.Mount, d.Description})
	}
	for _, p := range peers {
		if p.Role == devices.RoleDevice && shown[p.ID] {
			continue
		}
		mount := "-"
		if p.Role == devices.RoleDevice {
			mount = "/mnt/" + p.ID
		}
		rows = append(rows, []string{p.ID, string(p.Role), "-", "-", "-", mount, p.Description})
	}
	return rows
}

func dash(s string) string {
	if s == "" || s == "/" {
		return "-"
	}
	return s
}

// deviceInfo is the part of a /sys/devices descriptor that ls shows.
type deviceInfo struct {
	DeviceID, Description, Platform, Arch, Address, Mount string
	Online                                                bool
}

// readDevices reads every descriptor of /sys/devices from the daemon of
// root.
func readDevices(root string) ([]deviceInfo, error) {
	c, tree, err := client.DialTree(gsvfsd.Socket(root))
	if err != nil {
		return nil, fmt.Errorf("no daemon serves %s: %w", root, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := vfs.Walk(ctx, tree, "sys/devices")
	if err != nil {
		return nil, err
	}
	ents, err := vfs.ReadDirAll(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []deviceInfo
	for _, e := range ents {
		name := e.Name
		b, err := readNode(ctx, dir, name)
		if err != nil {
			return nil, err
		}
		var d deviceInfo
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("/sys/devices/%s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func readNode(ctx context.Context, dir vfs.Node, name string) ([]byte, error) {
	n, err := dir.Lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	h, err := n.Open(ctx, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return vfs.ReadAll(ctx, h, maxDescriptor)
}

// maxDescriptor bounds a device's descriptor file as the command reads it.
const maxDescriptor = 1 << 20

func deviceAddCommand(rootDir func() (string, error)) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "add ID TOKEN",
		Short: "dial a device that listens, with a gateway token the device issued",
		Long: `add makes the gateway dial device ID and keep a link to it. The device runs
gsvfs serve --listen tls:HOST:PORT and issues the token there with
gsvfs device token --for-gateway; the token carries the device's address
and key, and admits this gateway. A device token is refused: it lets a
device join, never a gateway dial. --addr dials another address than the
token's.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := devices.ParseToken(args[1])
			if err != nil {
				return fmt.Errorf("%w (a bare address is not enough: both ends authenticate, so the device's token is needed)", err)
			}
			if addr != "" {
				tok.Addr = addr
			}
			store, _, err := openStore(rootDir)
			if err != nil {
				return err
			}
			return store.AddDialed(args[0], tok)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "dial this HOST:PORT instead of the token's address")
	return cmd
}

func deviceRmCommand(rootDir func() (string, error)) *cobra.Command {
	return storeArgCommand(rootDir, "rm ID",
		"forget a peer in every role: its pinned keys, its description, its tokens; its links are closed",
		(*devices.Store).Forget)
}

func deviceRevokeCommand(rootDir func() (string, error)) *cobra.Command {
	return storeArgCommand(rootDir, "revoke TOKEN-ID",
		"revoke a join token; a device that joined with it is cut off",
		(*devices.Store).Revoke)
}

// storeArgCommand is a command of one argument that opens the store and
// hands it the argument.
func storeArgCommand(rootDir func() (string, error), use, short string, act func(*devices.Store, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, _, err := openStore(rootDir)
			if err != nil {
				return err
			}
			return act(store, args[0])
		},
	}
}

// deviceGrantCommand is `gsvfs device grant ID USER|:GROUP` (on), and
// ungrant, which takes the grant back.
func deviceGrantCommand(rootDir func() (string, error), on bool) *cobra.Command {
	use, short := "grant ID USER|:GROUP", "let a local user or group into the device's tree at /mnt/ID, as a user who is not its files' owner"
	if !on {
		use, short = "ungrant ID USER|:GROUP", "take back what grant gave"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := grantee(args[1])
			if err != nil {
				return err
			}
			store, _, err := openStore(rootDir)
			if err != nil {
				return err
			}
			return store.Grant(args[0], g, on)
		},
	}
}

// grantee is the local user (a name or a number) or, after a colon as
// chown(1) writes it, the group that s names.
func grantee(s string) (devices.Grantee, error) {
	name, group := strings.CutPrefix(s, ":")
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return devices.Grantee{Group: group, ID: uint32(n)}, nil
	}
	id := ""
	if group {
		g, err := user.LookupGroup(name)
		if err != nil {
			return devices.Grantee{}, err
		}
		id = g.Gid
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return devices.Grantee{}, err
		}
		id = u.Uid
	}
	n, err := strconv.ParseUint(id, 10, 32)
	return devices.Grantee{Group: group, ID: uint32(n)}, err
}

func deviceTokensCommand(rootDir func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "tokens",
		Short: "list the join tokens issued (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, _, err := openStore(rootDir)
			if err != nil {
				return err
			}
			tokens, err := store.Tokens()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tROLE\tFOR\tUSED BY\tEXPIRES\tSTATE")
			now := time.Now()
			for _, t := range tokens {
				state := "live"
				switch {
				case t.Revoked:
					state = "revoked"
				case !now.Before(t.Expires):
					state = "expired"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Role, dash(t.Device), dash(t.UsedBy), t.Expires.Format(time.RFC3339), state)
			}
			return w.Flush()
		},
	}
}
