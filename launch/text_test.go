package launch

import (
	"strings"
	"testing"

	"colo/app/smoke"
	"colo/transport"
)

func TestWriteText(t *testing.T) {
	s := NodeSummary{Nodes: []string{"server 0", "worker 0"}, StartSeconds: 0.25, Smoke: &smoke.Result{KeysPushed: 2000, Seconds: 1, KeysPerSec: 2e6, Checked: true}, Error: "boom"}
	s.Stats.Inter = transport.LinkStats{MsgsSent: 3, BytesSent: 3 << 20}
	s.Lines = []string{"trained 2 passes (40 rounds) in 1.500 s, loss 0.5000, test accuracy 84.63%"}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server 0 + worker 0 (machine 0): joined in 0.250 s", "\n  trained 2 passes (40 rounds) in 1.500 s, loss 0.5000, test accuracy 84.63%",
		"pushed 2000 keys", "every value is the exact sum", "inter-machine 3 msgs 3.00 MiB sent", "job failed: boom"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	(&SmokeSummary{Servers: 2, Workers: 3, Consistency: "async", KeysPushed: 10, Inner: transport.LinkStats{BytesSent: 512}}).WriteText(&b)
	if !strings.Contains(b.String(), "cluster of 2 servers, 3 workers (async)") || !strings.Contains(b.String(), "512 B") {
		t.Errorf("smoke summary:\n%s", b.String())
	}
}
