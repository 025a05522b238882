package tcp

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets sock's TCP_USER_TIMEOUT to d (Config.UserTimeout),
// rounded up to the millisecond. A socket that refuses it keeps the
// kernel's default: the option only shortens how long a black hole
// takes to be noticed.
func setUserTimeout(sock *net.TCPConn, d time.Duration) {
	rc, err := sock.SyscallConn()
	if err != nil {
		return
	}
	ms := int((d + time.Millisecond - 1) / time.Millisecond)
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
	})
}
