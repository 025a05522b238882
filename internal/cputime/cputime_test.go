package cputime

import (
	"runtime"
	"testing"
)

// TestProcessGrows: CPU time spent spinning shows, and never goes back.
func TestProcessGrows(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no rusage")
	}
	t0 := Process()
	x := 0
	for Process()-t0 < 2e6 { // 2 ms of CPU
		for i := range 1 << 16 {
			x += i
		}
	}
	if t1 := Process(); t1 < t0 || x == 0 {
		t.Fatalf("CPU time went from %v to %v", t0, t1)
	}
}
