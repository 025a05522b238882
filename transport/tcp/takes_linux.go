package tcp

import "golang.org/x/sys/unix"

// takes reports whether c's socket takes a write of n bytes at once:
// what is queued on it (SIOCOUTQ: written and not yet acknowledged by
// the peer's host) and n fit within a quarter of its send buffer
// (SO_SNDBUF), which leaves the kernel's accounting of each buffer's
// overhead room to spare. A peer that reads nothing fills the queue up
// to the buffer, and a write then waits: this reports false long
// before.
func (c *conn) takes(n int) bool {
	rc, err := c.sock.SyscallConn()
	if err != nil {
		return false
	}
	queued, buf := -1, 0
	var qerr, berr error
	if err := rc.Control(func(fd uintptr) {
		queued, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		buf, berr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil || qerr != nil || berr != nil {
		return false
	}
	return queued >= 0 && queued+n <= buf/4
}
