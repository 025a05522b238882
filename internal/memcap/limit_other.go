//go:build !unix

package memcap

import "errors"

// setLimit is not supported here.
func setLimit(int64) (func(), error) { return nil, errors.New("no address-space limit on this system") }
