package main

// What trainproc.go still uses of the process launching that moved to
// package launch; it goes when the deployment of colo train runs on
// launch.Supervisor.

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"

	"colo/launch"
)

// newToken returns a random cluster token (launch.NewToken).
func newToken() string { return launch.NewToken() }

// startSchedulerCmd starts a `colo node --role scheduler` command and reads
// the address it prints first ("scheduler listening on ADDR"). It returns
// the address and the reader of the rest of its output, which the caller
// must drain; on failure it kills the process and says why, with what
// stderr (the command's, a buffer) holds. launch.Supervisor.StartScheduler
// does this for the processes it supervises.
func startSchedulerCmd(cmd *exec.Cmd, stderr fmt.Stringer) (string, *bufio.Reader, error) {
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the scheduler: %w", err)
	}
	rd := bufio.NewReader(pipe)
	line, err := rd.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "scheduler listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		if err == nil {
			err = fmt.Errorf("it printed %q", line)
		}
		return "", nil, fmt.Errorf("the scheduler did not start: %w: %s", err, lastLines(stderr.String(), 3))
	}
	return addr, rd, nil
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
