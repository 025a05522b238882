package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/graph"
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
// CSV and JSON round trips, and an SVG that parses as XML with one line
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
	b.Reset()
	if err := PlotSVG(&b, rs); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("svg does not parse: %v", err)
			}
			break
		}
	}
	if n := strings.Count(svg, "<polyline"); n != len(algos) {
		t.Errorf("svg: %d lines, want %d (one per algorithm with two k)", n, len(algos))
	}
	for _, a := range algos {
		if !strings.Contains(svg, ">"+a+"<") {
			t.Errorf("svg legend lacks %s", a)
		}
	}
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
	if err := WriteDir(dir, rs); err != nil {
		t.Fatal(err)
	}
	for _, f := range Files {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if got := DatasetName("/x/20news.train.libsvm.xz"); got != "20news.train" {
		t.Errorf("DatasetName = %q", got)
	}
}
