package transporttest

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// PlainTCPRoundTrips measures the baseline that colo's transport and
// parameter server are compared with: round trips of a req-byte request
// and a resp-byte answer, each a bare length-prefixed message, over one
// loopback TCP connection, read into reused buffers with nothing decoded
// or applied. It returns the seconds per round trip; the caller reports
// its own metrics from it.
func PlainTCPRoundTrips(b *testing.B, req, resp int) float64 {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		in, out := make([]byte, req), make([]byte, resp)
		binary.LittleEndian.PutUint32(out, uint32(resp-4))
		for {
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	out, in := make([]byte, req), make([]byte, resp)
	binary.LittleEndian.PutUint32(out, uint32(req-4))
	for b.Loop() {
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			b.Fatal(err)
		}
	}
	return b.Elapsed().Seconds() / float64(b.N)
}
