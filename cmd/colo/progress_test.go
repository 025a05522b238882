package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"colo/graph"
	"colo/partition"
	"colo/train"
)

// smallLibsvm writes 300 samples of 3 features each.
func smallLibsvm(t *testing.T) string {
	var b strings.Builder
	for u := 0; u < 300; u++ {
		label := 1
		if u%3 == 0 {
			label = -1
		}
		fmt.Fprintf(&b, "%d %d:1 %d:1 %d:1\n", label, 1+u%17, 20+u%23, 50+u%5)
	}
	return writeFile(t, "small.libsvm", b.String())
}

// phaseLine matches a progress line: "NAME: WHAT, 1.2 s".
var phaseLine = regexp.MustCompile(`^(load|place|partition|train|evaluate)\b.*, [0-9]+\.[0-9] s$`)

// checkPhaseLines checks that standard output has none of the progress
// lines and standard error has each of want.
func checkPhaseLines(t *testing.T, stdout, errOut string, want []string) {
	t.Helper()
	for _, l := range strings.Split(stdout, "\n") {
		if phaseLine.MatchString(l) {
			t.Errorf("progress on standard output: %q", l)
		}
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, w) && phaseLine.MatchString(l) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %q in:\n%s", w, errOut)
		}
	}
}

// TestTrainProgressLines: off a terminal, colo train writes one line per
// phase and per pass, with the loss, and none on standard output.
func TestTrainProgressLines(t *testing.T) {
	data := smallLibsvm(t)
	code, stdout, errOut := colo(t, "train", data, "--machines", "2", "--max-passes", "4", "--epsilon", "0", "--placement", "parsa")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{"load " + data + ": done", "place parsa: done"}
	for p := 1; p <= 4; p++ {
		want = append(want, fmt.Sprintf("train parsa: pass %d/4, loss ", p))
	}
	want = append(want, "train parsa: done", "evaluate parsa: done")
	checkPhaseLines(t, stdout, errOut, want)
	if !strings.Contains(stdout, "trained 4 passes") {
		t.Errorf("standard output:\n%s", stdout)
	}
}

// TestPartitionBestProgressLines: off a terminal, colo partition --algo
// best names the end of every start, then the evaluation.
func TestPartitionBestProgressLines(t *testing.T) {
	data := smallLibsvm(t)
	code, stdout, errOut := colo(t, "partition", "--algo", "best", "-k", "4", data, "-o", filepath.Join(t.TempDir(), "p"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := regexp.MustCompile(`start 1/([0-9]+) `).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no start line in:\n%s", errOut)
	}
	want := []string{"load " + data + ": done"}
	for i := 1; i <= int(m[1][0]-'0'); i++ {
		want = append(want, fmt.Sprintf("partition best: start %d/%s (", i, m[1]))
	}
	want = append(want, "partition best: done", "evaluate: done")
	checkPhaseLines(t, stdout, errOut, want)
	if !strings.Contains(stdout, "best on 4 machines") {
		t.Errorf("standard output:\n%s", stdout)
	}
}

// TestBestBarBookkeeping: on a terminal, best's bar has its total from
// the first report, never falls and is full when best returns.
func TestBestBarBookkeeping(t *testing.T) {
	var errOut bytes.Buffer
	e := &env{out: new(bytes.Buffer), errOut: &errOut, isTerminal: true}
	g := randomTestGraph(t)
	ph := startPhase(e, "partition best", 0)
	var fractions []float64
	var totals []int64
	opt := partition.Options{K: 4, Seed: 1, Progress: func(d, tot int64) {
		ph.Set(d, tot)
		fractions = append(fractions, ph.Fraction())
		totals = append(totals, tot)
	}}
	run, err := partition.Lookup("best")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(g, opt); err != nil {
		t.Fatal(err)
	}
	if len(fractions) == 0 || fractions[len(fractions)-1] != 1 {
		t.Fatalf("fractions %v: want to end at 1", fractions)
	}
	for i := 1; i < len(fractions); i++ {
		if fractions[i] < fractions[i-1] || totals[i] != totals[0] {
			t.Fatalf("fraction %v of total %d after %v of %d", fractions[i], totals[i], fractions[i-1], totals[0])
		}
	}
	ph.Finish("")
	if !strings.Contains(errOut.String(), "100 %") {
		t.Errorf("bar output %q: want 100 %%", errOut.String())
	}
}

// TestTrainStopsEarlyAtFull: a training that stops at ε finishes its
// phase at 100% and says so, on a terminal and off it.
func TestTrainStopsEarlyAtFull(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.MaxPasses, cfg.Epsilon = 200, 0.05
	for _, term := range []bool{false, true} {
		var errOut bytes.Buffer
		e := &env{out: new(bytes.Buffer), errOut: &errOut, isTerminal: term}
		pp := newPasses(e, "parsa", cfg)
		for i, loss := range []float64{0.9, 0.6, 0.59} {
			pp.pass(train.Pass{Pass: i + 1, Rounds: 10 * (i + 1), TrainLoss: loss})
		}
		if f := pp.train.Fraction(); f != 1 {
			t.Errorf("terminal %v: training at %v after stopping at ε, want 1", term, f)
		}
		if pp.eval == nil {
			t.Fatalf("terminal %v: no evaluation phase", term)
		}
		pp.end(nil)
		out := errOut.String()
		if !strings.Contains(out, "stopped at ε = 0.05 after pass 3 of 200") {
			t.Errorf("terminal %v: output %q does not say where training stopped", term, out)
		}
		if term && !strings.Contains(out, "100 %") {
			t.Errorf("terminal: bar output %q: want 100 %%", out)
		}
		if !term && !strings.Contains(out, "train parsa: pass 3/200, loss 0.5900") {
			t.Errorf("lines %q: want pass 3", out)
		}
	}
}

// randomTestGraph is a graph of 400 samples, each on 3 of 60 parameters.
func randomTestGraph(t *testing.T) *graph.Graph {
	rows := make([][]uint32, 400)
	for u := range rows {
		rows[u] = []uint32{uint32(u % 17), uint32(20 + u*7%23), uint32(45 + u*u%15)}
	}
	g, err := graph.FromAdjacency(60, rows)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
