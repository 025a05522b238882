//go:build unix

package tcp

import (
	"net"
	"os"

	"golang.org/x/sys/unix"

	"colo/transport"
)

// writeLent writes bufs, a frame whose values lent lends, as Go's own
// vectored write does (a non-blocking writev of all that is left, a wait
// for room when the socket takes no more), each writev through
// lent.Write: the owner reclaiming the values waits for at most one
// writev. On TLS the values are reclaimed (copied) first.
func (c *conn) writeLent(bufs net.Buffers, lent *transport.Lent) (int64, error) {
	if c.bw != nil {
		lent.Detach(bufs)
		return c.writeBuffers(bufs)
	}
	rc, err := c.sock.SyscallConn()
	if err != nil {
		return 0, err
	}
	var written int64
	var werr error
	writev := func(fd uintptr) func(net.Buffers) (int, error) {
		return func(b net.Buffers) (int, error) {
			return unix.Writev(int(fd), b[:min(len(b), maxIovecs)])
		}
	}
	err = rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			n, err := lent.Write(bufs, writev(fd))
			if n > 0 {
				written += int64(n)
				consume(&bufs, n)
			}
			switch {
			case err == unix.EAGAIN:
				return false // wait until the socket takes more
			case err == unix.EINTR:
			case err != nil:
				werr = os.NewSyscallError("writev", err)
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return written, err
}

// maxIovecs is the most buffers one writev takes (Linux's IOV_MAX).
const maxIovecs = 1024

// consume drops the first n bytes of *bufs.
func consume(bufs *net.Buffers, n int) {
	for len(*bufs) > 0 && n > 0 {
		b := (*bufs)[0]
		if len(b) > n {
			(*bufs)[0] = b[n:]
			return
		}
		n -= len(b)
		*bufs = (*bufs)[1:]
	}
	for len(*bufs) > 0 && len((*bufs)[0]) == 0 {
		*bufs = (*bufs)[1:]
	}
}
