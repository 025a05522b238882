package tcp

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"colo/transport"
)

// wmemMaxFile holds the kernel's cap on a send buffer that SO_SNDBUF
// sets (net.core.wmem_max).
const wmemMaxFile = "/proc/sys/net/core/wmem_max"

// TestLocalSendBuffer checks the send buffer of a link between two
// endpoints of one host: LocalSendBuffer's by default, SocketBuffer's
// when that is set. Linux caps the size asked for at net.core.wmem_max
// and reports twice what it set, its bookkeeping included.
func TestLocalSendBuffer(t *testing.T) {
	b, err := os.ReadFile(wmemMaxFile)
	if err != nil {
		t.Skipf("the kernel's cap on send buffers is unknown: %v", err)
	}
	wmemMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Skipf("the kernel's cap on send buffers is unknown: %s: want a number of bytes: %v", wmemMaxFile, err)
	}
	for _, c := range []struct {
		name string
		tune func(*Config)
		set  int // the size asked for
	}{
		{"default", nil, DefaultConfig().LocalSendBuffer},
		{"LocalSendBuffer", func(c *Config) { c.LocalSendBuffer = 96 << 10 }, 96 << 10},
		{"SocketBuffer", func(c *Config) { c.SocketBuffer, c.LocalSendBuffer = 64<<10, 96<<10 }, 64 << 10},
		{"above wmem_max", func(c *Config) { c.LocalSendBuffer = wmemMax + 64<<10 }, wmemMax + 64<<10},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := 2 * min(c.set, wmemMax)
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
			if got != want {
				t.Fatalf("SO_SNDBUF %d, want %d (twice %d, the %d asked for capped at %s's %d)", got, want, want/2, c.set, wmemMaxFile, wmemMax)
			}
		})
	}
}
