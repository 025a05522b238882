package main

import (
	"encoding/json"
	"testing"
)

func TestBenchKVJSON(t *testing.T) {
	code, out, errOut := colo(t, "bench", "kv", "--json", "--duration", "20ms", "--sparse-keys", "500", "--dense-values", "1000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(recs) != 8 {
		t.Fatalf("%d records, want 8", len(recs))
	}
	for _, key := range []string{"mode", "servers", "workers", "op", "keys_per_s", "mb_per_s", "p50_us", "p99_us", "plain_mb_per_s"} {
		if _, ok := recs[0][key]; !ok {
			t.Errorf("record lacks %q: %v", key, recs[0])
		}
	}
	if code, _, errOut := colo(t, "bench", "kv", "--duration", "0s"); code != 2 {
		t.Errorf("zero duration: exit %d, %s", code, errOut)
	}
}
