package tcp

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"

	"colo/transport"
)

// TestLocalSendBuffer checks the send buffer of a link between two
// endpoints of one host: LocalSendBuffer's by default, SocketBuffer's
// when that is set (Linux reports twice the size set, its bookkeeping
// included).
func TestLocalSendBuffer(t *testing.T) {
	for _, c := range []struct {
		name string
		tune func(*Config)
		want int
	}{
		{"default", nil, 2 * DefaultConfig().LocalSendBuffer},
		{"LocalSendBuffer", func(c *Config) { c.LocalSendBuffer = 96 << 10 }, 2 * 96 << 10},
		{"SocketBuffer", func(c *Config) { c.SocketBuffer, c.LocalSendBuffer = 64<<10, 96<<10 }, 2 * 64 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			eps := newEndpoints(t, 2, c.tune)
			if err := eps[0].Send(context.Background(), 1, &transport.Message{Body: []byte("hi")}); err != nil {
				t.Fatal(err)
			}
			<-eps[1].Recv()
			eps[0].mu.Lock()
			sock := eps[0].links[1].c.sock
			eps[0].mu.Unlock()
			if !sameHost(sock) {
				t.Fatalf("%v to %v: not on the same host", sock.LocalAddr(), sock.RemoteAddr())
			}
			rc, err := sock.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var got int
			var gerr error
			if err := rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF) }); err != nil || gerr != nil {
				t.Fatal(err, gerr)
			}
			if got != c.want {
				t.Fatalf("SO_SNDBUF %d, want %d", got, c.want)
			}
		})
	}
}
