package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchKVJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kv.prom")
	code, out, errOut := colo(t, "bench", "kv", "--json", "--duration", "20ms", "--sparse-keys", "500", "--dense-values", "1000",
		"--metrics", "127.0.0.1:0", "--metrics-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct{ Results []map[string]any }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	recs := doc.Results
	if len(recs) != 8 {
		t.Fatalf("%d records, want 8", len(recs))
	}
	for _, key := range []string{"mode", "servers", "workers", "op", "keys_per_s", "mb_per_s", "p50_us", "p99_us", "cpu_us", "plain_mb_per_s"} {
		if _, ok := recs[0][key]; !ok {
			t.Errorf("record lacks %q: %v", key, recs[0])
		}
	}
	// The metrics file holds the last cluster's counters: the 2×2 dense
	// pull's two workers.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `colo_worker_pulls_total{worker="worker_1"}`) || !strings.Contains(s, "go_goroutines") {
		t.Errorf("metrics file:\n%s", s)
	}
	if code, _, errOut := colo(t, "bench", "kv", "--duration", "0s"); code != 2 {
		t.Errorf("zero duration: exit %d, %s", code, errOut)
	}
}
