package devices

import (
	"net"
	"syscall"
	"time"
)

// dropUnacked makes the kernel end c once its retransmissions have gone
// on for d (macOS counts whole seconds).
func dropUnacked(c *net.TCPConn, d time.Duration) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_RXT_CONNDROPTIME, int(d.Seconds()))
	})
}
