package launch

import (
	"strings"
	"testing"

	"colo/transport"
)

func TestWriteText(t *testing.T) {
	s := NodeSummary{Nodes: []string{"server 0", "worker 0"}, StartSeconds: 0.25, Error: "boom"}
	s.Stats.Inter = transport.LinkStats{MsgsSent: 3, BytesSent: 3 << 20}
	s.Lines = []string{"trained 2 passes (40 rounds) in 1.500 s, loss 0.5000, test accuracy 84.63%"}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server 0 + worker 0 (machine 0): joined in 0.250 s", "\n  trained 2 passes (40 rounds) in 1.500 s, loss 0.5000, test accuracy 84.63%",
		"inter-machine 3 msgs 3.00 MiB sent", "job failed: boom"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}
