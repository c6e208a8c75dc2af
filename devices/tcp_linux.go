package devices

import (
	"net"
	"syscall"
	"time"
)

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT: 18 on every architecture,
// though the syscall package names it on some only.
const tcpUserTimeout = 0x12

// dropUnacked makes the kernel end c once data sent on it has gone
// unacknowledged for d (with keepalive on, also once probes have gone
// unanswered that long).
func dropUnacked(c *net.TCPConn, d time.Duration) {
	setTCPOption(c, tcpUserTimeout, int(d.Milliseconds()))
}

func setTCPOption(c *net.TCPConn, opt, value int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, opt, value) })
}
