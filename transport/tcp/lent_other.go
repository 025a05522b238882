//go:build !unix

package tcp

import (
	"net"

	"colo/transport"
)

// writeLent writes bufs, a frame whose values lent lends: here, where
// the vectored write is Go's alone, from a copy of them (lent.Detach).
func (c *conn) writeLent(bufs net.Buffers, lent *transport.Lent) (int64, error) {
	lent.Detach(bufs)
	return c.writeBuffers(bufs)
}
