package tcp

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"colo/transport"
)

// userTimeoutOf returns sock's TCP_USER_TIMEOUT (0: the kernel's
// default).
func userTimeoutOf(t *testing.T, sock *net.TCPConn) time.Duration {
	t.Helper()
	rc, err := sock.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ms int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		ms, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return time.Duration(ms) * time.Millisecond
}

// TestUserTimeout checks the TCP_USER_TIMEOUT of both ends of a link,
// the dialled and the accepted connection, for each way of setting it.
func TestUserTimeout(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keepAlive   time.Duration
		userTimeout time.Duration
		want        time.Duration
	}{
		{"default", 15 * time.Second, 0, 30 * time.Second},
		{"keep-alive's time", 4 * time.Second, 0, 8 * time.Second},
		{"Go's keep-alive defaults", 0, 0, 150 * time.Second},
		{"set", 15 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{"rounded up to the millisecond", 15 * time.Second, 1500 * time.Microsecond, 2 * time.Millisecond},
		{"kernel's default", 15 * time.Second, -1, 0},
		{"keep-alive off", -1, 0, 0},
		{"keep-alive off, set", -1, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := newEndpoints(t, 2, func(c *Config) { c.KeepAlive, c.UserTimeout = tc.keepAlive, tc.userTimeout })
			if err := eps[0].Send(context.Background(), 1, &transport.Message{Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			(<-eps[1].Recv()).Release() // the accepted end has been tuned
			for i, ep := range eps {
				ep.mu.Lock()
				var conns []*conn
				for c := range ep.conns {
					conns = append(conns, c)
				}
				ep.mu.Unlock()
				if len(conns) != 1 {
					t.Fatalf("endpoint %d holds %d connections, want 1", i, len(conns))
				}
				if got := userTimeoutOf(t, conns[0].sock); got != tc.want {
					t.Errorf("endpoint %d: TCP_USER_TIMEOUT %v, want %v", i, got, tc.want)
				}
			}
		})
	}
}
