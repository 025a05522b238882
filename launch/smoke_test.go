package launch

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNodeSummaryJSON: the summary colo node --json prints keeps its
// field names; a training result passes through as it was written.
func TestNodeSummaryJSON(t *testing.T) {
	in := `{"role":"machine","nodes":["server 0","worker 0"],"machine":0,"start_s":0.5,"started_unix_ns":7,` +
		`"train":{"passes":[{"pass":1}]},"error":"x","stats":{}}`
	var s NodeSummary
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.Role != "machine" || len(s.Nodes) != 2 || s.StartSeconds != 0.5 || s.StartedUnixNano != 7 || s.Error != "x" ||
		string(s.Train) != `{"passes":[{"pass":1}]}` {
		t.Errorf("%+v", s)
	}
	out, err := json.Marshal(NodeSummary{Role: "server"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `"train"`) || strings.Contains(string(out), `"smoke"`) {
		t.Errorf("empty jobs marshalled: %s", out)
	}
}
