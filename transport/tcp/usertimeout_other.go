//go:build !linux

package tcp

import (
	"net"
	"time"
)

// setUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's
// (Config.UserTimeout).
func setUserTimeout(*net.TCPConn, time.Duration) {}
