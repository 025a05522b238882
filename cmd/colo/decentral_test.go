package main

import (
	"colo/launch"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTrainMode: --mode is found wherever it stands, whatever flags of
// either mode come before it, with or without values; a mode that does
// not exist, or a --mode without its value, is refused.
func TestTrainMode(t *testing.T) {
	for _, c := range []struct {
		args []string
		mode string
		err  string
	}{
		{[]string{"d.csv", "--lr", "1"}, "ps", ""},
		{[]string{"--mode", "decentralised", "d.csv"}, "decentralised", ""},
		{[]string{"d.csv", "-mode=decentralized"}, "decentralised", ""},
		{[]string{"--mode=ps", "d.csv"}, "ps", ""},
		{[]string{"--labels", "l.gz", "--lr", "0.3", "--processes", "--json", "out.json", "--topology", "ring", "--mode", "decentralised", "d.csv"}, "decentralised", ""},
		{[]string{"d.csv", "-k", "4", "--mode", "decentralised"}, "decentralised", ""},
		{[]string{"--", "--mode", "decentralised"}, "ps", ""},
		{[]string{"--mode", "gossip-worker", "--rank", "1"}, "", "--mode \"gossip-worker\""},
		{[]string{"--mode", "gossip", "d.csv"}, "", "--mode \"gossip\""},
	} {
		mode, err := trainMode(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || mode != c.mode {
			t.Errorf("%v: %v %v, want %v", c.args, mode, err, c.mode)
		}
	}
	if code, _, errOut := colo(t, "train", "d.csv", "--mode"); code != 2 || !strings.Contains(errOut, "-mode") {
		t.Errorf("--mode without a value: exit %d: %s", code, errOut)
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
	checkFigure(t, svg, filepath.Base(data)+": mlp, d-psgd on 4 workers (exponential, F=2)", "target ")
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
		{[]string{"--app", "lr"}, "--app lr"}, // refused for the mlp flags of base (--hidden), or as no dense model
		{[]string{"--lr", "1e30"}, "diverged"},
		{[]string{"--lr-decay", "step:3,2"}, "--lr-decay \"step:3,2\": epochs 3 then 2: want them increasing"},
		{[]string{"--lr-decay", "linear"}, "want none, cosine or step:E1,E2"},
		// Only -1 is the default: 0 trained 64 samples a worker.
		{[]string{"--batch", "0"}, "--batch 0: want at least 1 sample per iteration over all workers"},
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
		Target     float64 `json:"target"`
		TargetFrom string  `json:"target_from"`
		Rows       []struct {
			Algorithm, Shard string
			Runs             []map[string]any
			Reached          int `json:"reached"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// The default target is derived from the runs: every row reaches it.
	if !(res.Target > 0) || res.TargetFrom == "" || !strings.Contains(stdout, "target training loss") {
		t.Errorf("target %v (%q): want one derived from the runs, and said", res.Target, res.TargetFrom)
	}
	var names []string
	for _, r := range res.Rows {
		names = append(names, r.Algorithm+"/"+r.Shard)
		if len(r.Runs) != 1 || r.Reached != len(r.Runs) {
			t.Errorf("%s/%s: %d runs, %d reached the target", r.Algorithm, r.Shard, len(r.Runs), r.Reached)
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

	// One algorithm's rows, with a schedule of the rate.
	code, stdout, errOut = colo(t, "bench", "rcd", data, "--label-col", "-1", "--hidden", "16", "--epochs", "2", "--batch", "40",
		"--runs", "1", "--lr", "0.3", "--algorithms", "matcha", "--lr-decay", "step:1", "--batch-weighted", "--json", js)
	if code != 0 {
		t.Fatalf("--algorithms matcha: exit %d: %s", code, errOut)
	}
	var settings struct {
		LRDecay       string            `json:"lr_decay"`
		BatchWeighted bool              `json:"batch_weighted"`
		Options       map[string]string `json:"options"`
	}
	if b, err := os.ReadFile(js); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &settings); err != nil || settings.LRDecay != "step:1" || !settings.BatchWeighted || settings.Options["lr-decay"] != "step:1" {
		t.Errorf("the JSON's settings %+v (%v): want lr_decay step:1 and batch_weighted, and the flags as given", settings, err)
	}
	var rows []string
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && (f[0] == "matcha" || f[0] == "d-psgd") {
			rows = append(rows, f[0]+"/"+f[1])
		}
	}
	if want := []string{"matcha/random", "matcha/facility", "matcha/graphcut"}; !slices.Equal(rows, want) {
		t.Errorf("--algorithms matcha: rows %v, want %v\n%s", rows, want, stdout)
	}
}

// TestTrainDecentralisedProcesses runs the workers as processes on
// loopback, and in network namespaces where the host allows: the same
// training as in one process over TCP, the losses and the test accuracy
// bit for bit, the same bytes.
func TestTrainDecentralisedProcesses(t *testing.T) {
	data := blobsCSV(t, 300)
	dir := t.TempDir()
	args := []string{"train", "--mode", "decentralised", data, "--label-col", "-1", "--hidden", "16", "--workers", "3", "--epochs", "2",
		"--batch", "30", "--worker-speeds", "1,2,2", "--placement", "submodular", "--matcha", "--topology", "complete"}
	type summary struct {
		Bytes uint64 `json:"bytes"`
		Curve []struct {
			TrainLoss float64 `json:"train_loss"`
		} `json:"curve"`
		Eval struct {
			Accuracy float64 `json:"test_accuracy"`
		} `json:"eval"`
	}
	var runs []summary
	modes := [][]string{{"--transport", "tcp"}, {"--processes"}}
	if err := launch.CheckNetns(); err == nil {
		modes = append(modes, []string{"--netns", "--link-bandwidth", "1gbit"})
	} else {
		t.Logf("not in network namespaces: %v", err)
	}
	for i, extra := range modes {
		out := filepath.Join(dir, fmt.Sprintf("run%d.json", i))
		cmd := exec.Command(coloBin, append(append(slices.Clone(args), extra...), "--json", out)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var s summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, s)
	}
	a := runs[0]
	for m, b := range runs[1:] {
		if a.Bytes != b.Bytes || a.Eval.Accuracy != b.Eval.Accuracy || len(a.Curve) != len(b.Curve) || len(a.Curve) == 0 {
			t.Fatalf("in process %+v, %v %+v", a, modes[m+1], b)
		}
		for i := range a.Curve {
			if a.Curve[i] != b.Curve[i] {
				t.Errorf("curve point %d: %v in process, %v with %v", i, a.Curve[i], b.Curve[i], modes[m+1])
			}
		}
	}
}
