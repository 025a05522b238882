package launch

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/internal/colotest"
)

// alive reports whether pid names a process that has not ended: one
// kill(pid, 0) finds and that is not a zombie (an orphan's new parent,
// init in a container, may never reap it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// TestOrphans kills a launcher with SIGKILL, which it cannot catch: the
// kernel kills the child it started (PR_SET_PDEATHSIG).
func TestOrphans(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := parent.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	child, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		parent.Wait()
		t.Fatalf("the parent printed %q: %v %v", line, err, perr)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if !alive(child) {
		t.Fatalf("the child %d is not running", child)
	}
	parent.Process.Signal(syscall.SIGKILL)
	parent.Wait()
	// The kernel sends the signal as the parent exits; the child's end
	// is then a matter of scheduling.
	hang := colotest.HangTimeout(t)
	deadline := time.Now().Add(hang)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d outlived its killed parent by %v", child, hang)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
