package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/graph"
	"colo/internal/plot/plottest"
)

func smallGraph(t *testing.T) *graph.Graph {
	t.Helper()
	g, err := graph.PowerLaw(graph.PowerLawConfig{Samples: 400, Params: 200, AvgDegree: 6, Alpha: 1.3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRun runs a small experiment and checks the results and the three
// output formats: one row per dataset, k and algorithm, k above n skipped,
// CSV and JSON round trips, and a figure with one line
// per algorithm.
func TestRun(t *testing.T) {
	g := smallGraph(t)
	tiny, _ := graph.FromAdjacency(3, [][]uint32{{0}, {1, 2}})
	algos := []string{"random", "parsa", "tsh2", "mbp", "parsa+refine"}
	rs, err := Run([]Dataset{{"pl", g}, {"tiny", tiny}}, Config{Ks: []int{2, 4}, Algos: algos, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2*len(algos)+len(algos) {
		t.Fatalf("%d results, want %d", len(rs), 3*len(algos))
	}
	for _, r := range rs {
		if r.Dataset == "tiny" {
			continue // T_max may be 0 there
		}
		if r.TMax <= 0 || r.TSum < r.TMax || r.Improvement.TMax == nil || r.Seconds < 0 {
			t.Errorf("%+v", r)
		}
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != len(rs)+1 || len(recs[0]) != len(csvHeader) {
		t.Fatalf("csv: %d records, %v", len(recs), err)
	}
	b.Reset()
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var back []Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != len(rs) || back[3].TMax != rs[3].TMax {
		t.Fatalf("json round trip: %v", err)
	}
	f := Figure(rs, "seed 1")
	lines := 0
	for _, p := range f.Panels {
		for _, l := range p.Series {
			if len(l.X) == 2 {
				lines++
			}
		}
	}
	if want := len(algos) * (len(f.Panels) - 1); lines < want {
		t.Errorf("%d lines of two k, want at least %d (one per algorithm on each dataset but tiny)", lines, want)
	}
	plottest.Check(t, f, append([]string{"k (machines)", "seed 1"}, algos...)...)
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {Ks: []int{2}}, {Ks: []int{0}, Algos: []string{"parsa"}}, {Ks: []int{2}, Algos: []string{"nope"}}} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestWriteDir writes the three files and names them in Files.
func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	rs := []Result{{Dataset: "d", K: 2, Algo: "random"}}
	if err := WriteDir(dir, rs, "seed 1"); err != nil {
		t.Fatal(err)
	}
	for _, f := range Files() {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if got := DatasetName("/x/20news.train.libsvm.xz"); got != "20news.train" {
		t.Errorf("DatasetName = %q", got)
	}
}

// TestWriteTable: a row a result, its costs with thousands separators and
// T_max's improvement over random, "-" without one.
func TestWriteTable(t *testing.T) {
	imp := 12.34
	rs := []Result{{Dataset: "a9a", K: 4, Algo: "parsa", Seconds: 1.5, MMax: 1234, TMax: 5678, TSum: 12345, MaxSamples: 99}}
	rs[0].Improvement.TMax = &imp
	rs = append(rs, Result{Dataset: "a9a", K: 4, Algo: "random"})
	var b strings.Builder
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range []string{"a9a 4 parsa 1.500 1,234 5,678 12,345 99 +12.3%", "a9a 4 random 0.000 0 0 0 0 -"} {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != want {
			t.Errorf("row %d %q, want %q", i, got, want)
		}
	}
}
