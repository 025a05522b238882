//go:build !linux

package tcp

// takes reports false: without Linux's SIOCOUTQ what a socket holds is
// not known, and TrySend never sends.
func (c *conn) takes(int) bool { return false }
