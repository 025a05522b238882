package progress

import (
	"bytes"
	"strings"
	"testing"
)

// TestPhaseBarsEndFull: on a terminal, a phase that finishes without any
// step (load, place, evaluate: one unit, or an unknown total) ends its
// bar at 100%, not 0%.
func TestPhaseBarsEndFull(t *testing.T) {
	for _, total := range []int64{1, 0, 5} {
		var errOut bytes.Buffer
		ph := Start(&errOut, true, "load data.svm", total)
		if total == 5 {
			ph.Set(2, 5)
		}
		ph.Finish("300 samples")
		out := errOut.String()
		if i := strings.LastIndex(out, "load data.svm"); i < 0 || !strings.Contains(out[i:], "100 %") || strings.Contains(out[i:], " 0 %") {
			t.Errorf("total %d: last frame %q, want 100 %%", total, out[max(0, i):])
		}
	}
}

// TestPhaseLinesOffTerminal: off a terminal a phase writes a line at each
// quarter and one when it finishes, and none after.
func TestPhaseLinesOffTerminal(t *testing.T) {
	var out bytes.Buffer
	ph := Start(&out, false, "partition", 0)
	for d := int64(1); d <= 8; d++ {
		ph.Set(d, 8)
	}
	ph.Finish("ok")
	ph.Finish("twice")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, l[:strings.LastIndex(l, ",")])
	}
	want := []string{"partition: 25%", "partition: 50%", "partition: 75%", "partition: done, ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
}
