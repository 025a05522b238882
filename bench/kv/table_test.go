package kv

import (
	"strings"
	"testing"
)

// TestWriteTable: a row a record, with keys/s in millions and the share
// of the plain reference.
func TestWriteTable(t *testing.T) {
	var b strings.Builder
	recs := []Record{{Mode: "sparse", Servers: 2, Workers: 2, Op: "push", KeysPerS: 2.5e6, MBPerS: 30, P50us: 40, P99us: 90, Requests: 1000, PlainMBPerS: 120}}
	if err := WriteTable(&b, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "mode") {
		t.Fatalf("table:\n%s", b.String())
	}
	if got, want := strings.Fields(lines[1]), "sparse 2×2 push 2.5M 30 40 90 1000 120 25%"; strings.Join(got, " ") != want {
		t.Errorf("row %q, want %q", got, want)
	}
}
