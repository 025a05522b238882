package launch

import (
	"os"
	"strings"
	"testing"
)

// TestCheckNetns: without root, the check says so.
func TestCheckNetns(t *testing.T) {
	err := CheckNetns()
	if os.Geteuid() != 0 && (err == nil || !strings.Contains(err.Error(), "root (running as uid")) {
		t.Errorf("uid %d: %v", os.Geteuid(), err)
	}
	t.Logf("CheckNetns: %v", err)
}
