package memcap

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCapKillsAnOversizedAllocation runs itself in a subprocess that caps
// its memory at 256 MiB and then allocates 1 GiB: the subprocess must die
// of the runtime's out-of-memory error, which is what makes a fuzz worker
// that allocates beyond its budget fail.
func TestCapKillsAnOversizedAllocation(t *testing.T) {
	if os.Getenv("MEMCAP_CHILD") == "1" {
		Cap(t, 256<<20)
		b := make([]byte, 1<<30)
		for i := range b {
			b[i] = 1
		}
		t.Logf("allocated %d bytes under the cap", len(b))
		return
	}
	if vmSize() == 0 {
		t.Skip("no /proc/self/status")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCapKillsAnOversizedAllocation$", "-test.v")
	cmd.Env = append(os.Environ(), "MEMCAP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "out of memory") {
		t.Fatalf("a 1 GiB allocation under a 256 MiB cap: err %v, output:\n%s", err, out)
	}
}

func TestCapLeavesSmallAllocations(t *testing.T) {
	Cap(t, 256<<20)
	b := make([]byte, 64<<20)
	b[len(b)-1] = 1
}
