package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTrainMode(t *testing.T) {
	for _, c := range []struct {
		args []string
		dec  bool
		rest []string
		err  string
	}{
		{[]string{"d.csv", "--lr", "1"}, false, []string{"d.csv", "--lr", "1"}, ""},
		{[]string{"--mode", "decentralised", "d.csv"}, true, []string{"d.csv"}, ""},
		{[]string{"d.csv", "-mode=decentralized"}, true, []string{"d.csv"}, ""},
		{[]string{"--mode=ps", "d.csv"}, false, []string{"d.csv"}, ""},
		{[]string{"--mode", "gossip", "d.csv"}, false, nil, "--mode \"gossip\""},
		{[]string{"d.csv", "--mode"}, false, nil, "--mode needs a value"},
		{[]string{"--", "--mode", "x"}, false, []string{"--", "--mode", "x"}, ""},
	} {
		dec, rest, err := trainMode(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || dec != c.dec || !slices.Equal(rest, c.rest) {
			t.Errorf("%v: %v %v %v, want %v %v", c.args, dec, rest, err, c.dec, c.rest)
		}
	}
}

// TestTrainDecentralised trains an mlp on 4 workers of unequal speed with
// submodular ratio shards and F = 2, and checks the JSON summary and the
// errors of bad input.
func TestTrainDecentralised(t *testing.T) {
	data := blobsCSV(t, 300)
	dir := t.TempDir()
	out, svg := filepath.Join(dir, "run.json"), filepath.Join(dir, "loss.svg")
	base := []string{"train", "--mode", "decentralised", data, "--label-col", "-1", "--hidden", "16", "--workers", "4", "--epochs", "3", "--batch", "40"}
	code, stdout, errOut := colo(t, append(base, "--placement", "submodular", "--submodular", "graphcut", "--worker-speeds", "1,2,4,8",
		"--local-steps", "2", "--topology", "exponential", "--lr", "0.3", "--json", out, "--svg", svg)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Algorithm string `json:"algorithm"`
		Shard     string `json:"shard"`
		Emulation string `json:"speed_emulation"`
		Eval      struct {
			Accuracy float64 `json:"test_accuracy"`
		} `json:"eval"`
		Workers []struct {
			Speed, Slowdown, Batch float64
			Samples                int
		} `json:"workers"`
		Config struct {
			LocalSteps int `json:"local_steps"`
		} `json:"config"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Algorithm != "d-psgd" || r.Shard != "graphcut" || r.Config.LocalSteps != 2 || !strings.Contains(r.Emulation, "r_max/r") || r.Eval.Accuracy < 0.8 {
		t.Errorf("summary %+v\n%s", r, stdout)
	}
	if len(r.Workers) != 4 || r.Workers[0].Slowdown != 8 || r.Workers[3].Samples < 7*r.Workers[0].Samples {
		t.Errorf("workers %+v", r.Workers)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.HasPrefix(string(b), "<svg") {
		t.Errorf("svg: %v", err)
	}
	weights := writeFile(t, "w.txt", "0.5 0.5 0 0\n0.5 0.4 0.2 0\n0 0.1 0.5 0.4\n0 0 0.4 0.6\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--worker-speeds", "1,2,4"}, "worker-speeds: 3 speeds for 4 workers"},
		{[]string{"--worker-speeds", "1,0,4,8"}, "worker-speeds: speed 2 \"0\""},
		{[]string{"--worker-speeds", "1,-2,4,8"}, "worker-speeds: speed 2 \"-2\""},
		{[]string{"--workers", "7", "--topology", "torus"}, "topology torus: 7 workers"},
		{[]string{"--topology", "star"}, "topology \"star\""},
		{[]string{"--weights", weights}, "w.txt:2: row 2 sums to 1.1: want 1 (doubly stochastic)"},
		{[]string{"--matcha", "--budget", "0"}, "budget 0: want a communication budget c_b in (0, 1]"},
		{[]string{"--matcha", "--budget", "1.5"}, "budget 1.5"},
		{[]string{"--local-steps", "0"}, "local-steps 0"},
		{[]string{"--submodular", "sum"}, "--submodular \"sum\""},
		{[]string{"--servers", "2"}, "no servers"},
		{[]string{"--app", "lr"}, "mlp or cnn"},
		{[]string{"--lr", "1e30"}, "diverged"},
	} {
		code, _, errOut := colo(t, append(slices.Clone(base), c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchRCD runs the comparison once on small data and checks the
// JSON rows and the plots.
func TestBenchRCD(t *testing.T) {
	data := blobsCSV(t, 300)
	dir := t.TempDir()
	js := filepath.Join(dir, "rcd.json")
	code, stdout, errOut := colo(t, "bench", "rcd", data, "--label-col", "-1", "--hidden", "16", "--epochs", "2", "--batch", "40",
		"--runs", "1", "--lr", "0.3", "--json", js, "-o", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Rows []struct {
			Algorithm, Shard string
			Runs             []map[string]any
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.Rows {
		names = append(names, r.Algorithm+"/"+r.Shard)
		if len(r.Runs) != 1 {
			t.Errorf("%s/%s: %d runs", r.Algorithm, r.Shard, len(r.Runs))
		}
	}
	want := []string{"d-psgd/random", "d-psgd/facility", "d-psgd/graphcut", "matcha/random", "matcha/facility", "matcha/graphcut"}
	if !slices.Equal(names, want) {
		t.Errorf("rows %v, want %v\n%s", names, want, stdout)
	}
	for _, f := range []string{"rcd.json", "loss_vs_time.svg", "loss_vs_epoch.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Error(err)
		}
	}
}
