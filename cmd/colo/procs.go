package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
)

// newToken returns a random cluster token for a cluster this process
// starts.
func newToken() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startSchedulerCmd starts a `colo node --role scheduler` command and reads
// the address it prints first ("scheduler listening on ADDR"). It returns
// the address and the reader of the rest of its output, which the caller
// must drain; on failure it kills the process and says why, with what
// stderr (the command's, a buffer) holds.
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
