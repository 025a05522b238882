//go:build !linux

package launch

import "os/exec"

// dieWithParent does nothing outside Linux, which alone has
// PR_SET_PDEATHSIG: there a launcher that is killed leaves its children
// running.
func dieWithParent(*exec.Cmd) {}
