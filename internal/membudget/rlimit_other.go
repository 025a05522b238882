//go:build !unix

package membudget

// addressSpaceLimit returns 0: no address-space limit is known.
func addressSpaceLimit() int64 { return 0 }
