package launch

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to send the child SIGKILL when its parent
// dies (prctl PR_SET_PDEATHSIG), so that a launcher that crashes or is
// killed leaves no process behind.
//
// The kernel ties the signal to the thread that forked the child, not to
// the process: the child is killed when that OS thread exits, even if the
// process lives on. Go ends an OS thread when a goroutine locked to it
// (runtime.LockOSThread) returns without unlocking, which any goroutine
// running on it later could do. Supervisor.Start therefore forks from a
// goroutine that holds its thread locked until the child has been reaped,
// so the thread outlives the child.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
