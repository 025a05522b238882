package plain

import (
	"strings"
	"testing"
	"time"
)

// TestMesh runs rounds on a 2 × 2 plain cluster, from every worker at
// once, and checks the refusals of shapes and sizes that cannot work.
func TestMesh(t *testing.T) {
	p, err := Start(2, 2, 1000, 40)
	if err != nil {
		t.Fatal(err)
	}
	rounds, sec, err := p.Measure(20 * time.Millisecond)
	if err != nil || rounds < 2 || sec <= 0 {
		t.Fatalf("Measure: %d rounds, %v s each, %v", rounds, sec, err)
	}
	p.Close()
	if err := p.Round(0); err == nil {
		t.Error("a round after Close succeeded")
	}
	for _, tc := range []struct {
		s, w, req, resp int
		want            string
	}{
		{0, 1, 10, 10, "0 servers"},
		{1, 0, 10, 10, "0 workers"},
		{1, 1, 3, 10, "request of 3 bytes"},
		{1, 1, 10, 2, "answer of 2"},
	} {
		if _, err := Start(tc.s, tc.w, tc.req, tc.resp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%d, %d, %d, %d) = %v, want %q", tc.s, tc.w, tc.req, tc.resp, err, tc.want)
		}
	}
}
