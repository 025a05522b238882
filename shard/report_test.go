package shard

import (
	"encoding/json"
	"testing"

	"colo/internal/datasum"
)

// TestReportJSON: summary.json holds the run's fields and the summary's
// side by side, the data checksum under the name readers look for.
func TestReportJSON(t *testing.T) {
	b, err := json.Marshal(&Report{Dataset: "mnist.idx", DataChecksum: "abc", Seed: 3, Summary: &Summary{MaxSizeDeviation: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"dataset": "mnist.idx", datasum.SummaryField: "abc", "seed": 3.0, "max_size_deviation": 0.5, "load_seconds": 0.0} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v in %s", k, m[k], want, b)
		}
	}
	if _, ok := m["function"]; ok {
		t.Errorf("function of a run without one: %s", b)
	}
}
