package main

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/plot"
	"colo/internal/plot/plottest"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestTrainJSON trains two passes on the shipped sample and checks the
// summary's fields.
func TestTrainJSON(t *testing.T) {
	data := news20(t)
	out := filepath.Join(t.TempDir(), "run.json")
	svg := filepath.Join(t.TempDir(), "loss.svg")
	code, stdout, errOut := colo(t, "train", data, "--machines", "3", "--max-passes", "2", "--placement", "parsa",
		"--link-bandwidth", "1gbit", "--json", out, "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "parsa") || !strings.Contains(stdout, "1 Gbit/s links") {
		t.Errorf("output:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"partition_seconds", "train_seconds", "total_seconds", "rounds", "bytes_inner", "bytes_inter",
		"final_train_loss", "test_accuracy", "rounds_detail", "T_sum", "predicted_inter_values"} {
		if _, ok := r[f]; !ok {
			t.Errorf("JSON lacks %q", f)
		}
	}
	if r["rounds"] != 2.0 || r["predicted_inter_values"] != r["inter_values"] {
		t.Errorf("rounds %v, predicted %v, counted %v", r["rounds"], r["predicted_inter_values"], r["inter_values"])
	}
	checkFigure(t, svg, filepath.Base(data)+": ")
}

// checkFigure checks a figure written with writeFigure: the SVG at path
// parses and holds the texts of want, and the PNG beside it decodes.
func checkFigure(t *testing.T, path string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := plottest.Texts(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	all := strings.Join(texts, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no text %q in %q", path, w, texts)
		}
	}
	f, err := os.Open(plot.PNGPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s: %v", plot.PNGPath(path), err)
	}
}

// TestTrainPlacementDir trains on a placement written by colo partition.
func TestTrainPlacementDir(t *testing.T) {
	data := news20(t)
	dir := filepath.Join(t.TempDir(), "place")
	if code, _, errOut := colo(t, "partition", data, "-k", "2", "--algo", "random", "-o", dir); code != 0 {
		t.Fatal(errOut)
	}
	code, stdout, errOut := colo(t, "train", data, "--machines", "2", "--max-passes", "1", "--placement", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "trained 1 passes") {
		t.Errorf("output:\n%s", stdout)
	}
	if code, _, errOut := colo(t, "train", data, "--machines", "3", "--max-passes", "1", "--placement", dir); code == 0 || !strings.Contains(errOut, "2 machines") {
		t.Errorf("a 2-machine placement on 3 machines: exit %d, %s", code, errOut)
	}
}

func TestTrainBadFlags(t *testing.T) {
	data := news20(t)
	matrix := writeFile(t, "bw.txt", "0 1gbit\n1gbit 0\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--machines", "0"}, "--machines 0"},
		{[]string{"--consistency", "sync"}, "consistency"},
		{[]string{"--placement", "nosuch"}, "unknown algorithm"},
		{[]string{"--link-bandwidth", "fast"}, "--link-bandwidth"},
		{[]string{"--link-bandwidth", "1gbit", "--bandwidth-matrix", matrix}, "exclude"},
		{[]string{"--machines", "3", "--bandwidth-matrix", matrix}, "for 2 machines"},
		{[]string{"--app", "svm"}, "--app"},
		{[]string{"--updater", "sum"}, "does not train"},
		{[]string{"--max-passes", "0"}, "--max-passes"},
		{[]string{"--batch", "-2"}, "--batch"},
		{[]string{"--app", "mlp", "--placement", "parsa"}, "sharding scheme"},
		{[]string{"--hidden", "256,x"}, "--hidden"},
		{[]string{"--features", "tfidf"}, "features"},
		{[]string{"--compare", ","}, "names no placement"},
		{[]string{"--app", "embed", "--uniform-pool", "-1"}, "--uniform-pool"},
		{[]string{"--app", "embed", "--negatives", "0", "--uniform-negatives", "0"}, "want at least one negative per edge"},
		{[]string{"--hidden", "8"}, "--hidden: --app lr does not take it (its flags: --features, --threads)"},
		{[]string{"--holdout", "0.2"}, "--holdout: --app lr does not take it"},
		{[]string{"--app", "mf", "--features", "raw"}, "--features: --app mf does not take it (its flags: --holdout, --rank)"},
		{[]string{"--app", "mlp", "--dim", "8"}, "--dim: --app mlp does not take it"},
		// Only -1 is the application's default: -0.1 trained at 0.05.
		{[]string{"--app", "embed", "--holdout", "-0.1"}, "embed: holdout -0.1 (--holdout): want a fraction of the edges in [0, 1)"},
		{[]string{"--app", "mf", "--holdout", "NaN"}, "mf: option holdout NaN: want a finite number"},
	} {
		code, _, errOut := colo(t, append([]string{"train", data}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want an error with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestTrainMetricsFile trains two passes with --metrics and
// --metrics-file: the file holds the training gauges and every node's
// counters, in the Prometheus text format.
func TestTrainMetricsFile(t *testing.T) {
	data := news20(t)
	file := filepath.Join(t.TempDir(), "train.prom")
	code, _, errOut := colo(t, "train", data, "--machines", "2", "--max-passes", "2", "--placement", "random",
		"--metrics", "127.0.0.1:0", "--metrics-file", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("the text parser refuses the file: %v", err)
	}
	if p := mfs["colo_train_pass"]; p == nil || p.GetMetric()[0].GetGauge().GetValue() != 2 {
		t.Errorf("colo_train_pass: %v", p)
	}
	if l := mfs["colo_train_loss"]; l == nil || !(l.GetMetric()[0].GetGauge().GetValue() > 0) {
		t.Errorf("colo_train_loss: %v", l)
	}
	for _, name := range []string{"colo_link_bytes_total", "colo_server_pulls_total", "colo_worker_round", "colo_train_round_seconds", "go_goroutines",
		"colo_server_key_share", "colo_worker_request_duration_seconds"} {
		if mfs[name] == nil {
			t.Errorf("no family %s", name)
		}
	}
	if n := len(mfs["colo_worker_round"].GetMetric()); n != 2 {
		t.Errorf("%d workers' rounds, want 2", n)
	}
	share := 0.0
	for _, m := range mfs["colo_server_key_share"].GetMetric() {
		share += m.GetGauge().GetValue()
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("the servers' key shares sum to %v, want 1", share)
	}
	// Every worker pulled from and pushed to every server, each round.
	if n := len(mfs["colo_worker_request_duration_seconds"].GetMetric()); n != 2*2*2 {
		t.Errorf("%d round-trip histograms, want 8 (2 workers, 2 servers, push and pull)", n)
	}
	for _, m := range mfs["colo_worker_request_duration_seconds"].GetMetric() {
		if h := m.GetHistogram(); h.GetSampleCount() == 0 || !(h.GetSampleSum() > 0) {
			t.Errorf("an empty round-trip histogram: %v", m)
		}
	}
}

// TestTrainEmbedCompare trains node embeddings of two cliques joined by
// an edge under two placements side by side: the table has the held-out
// MRR and AUC, the JSON test_mrr and test_auc, and --dim 0 is refused
// naming the flag.
func TestTrainEmbedCompare(t *testing.T) {
	var b strings.Builder
	for c := range 2 {
		for u := range 10 {
			for v := u + 1; v < 10; v++ {
				fmt.Fprintf(&b, "%d %d\n", 10*c+u, 10*c+v)
			}
		}
	}
	b.WriteString("0 10\n")
	data := writeFile(t, "cliques.txt", b.String())
	out := filepath.Join(t.TempDir(), "runs.json")
	code, stdout, errOut := colo(t, "train", data, "--app", "embed", "--machines", "2", "--batch", "0", "--max-passes", "3",
		"--dim", "4", "--holdout", "0.2", "--compare", "random,parsa", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "held-out MRR") || !strings.Contains(stdout, "held-out AUC") {
		t.Errorf("output lacks the held-out MRR and AUC:\n%s", stdout)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Results []map[string]any }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	runs := doc.Results
	if len(runs) != 2 {
		t.Fatalf("%d runs in the JSON, want 2", len(runs))
	}
	for _, r := range runs {
		mrr, ok1 := r["test_mrr"].(float64)
		auc, ok2 := r["test_auc"].(float64)
		if !ok1 || !ok2 || mrr <= 0 || mrr > 1 || auc < 0 || auc > 1 || r["app"] != "embed" {
			t.Errorf("%v: app %v, test_mrr %v, test_auc %v", r["placement"], r["app"], r["test_mrr"], r["test_auc"])
		}
	}
	code, _, errOut = colo(t, "train", data, "--app", "embed", "--dim", "0")
	if code == 0 || !strings.Contains(errOut, "--dim") {
		t.Errorf("--dim 0: exit %d, %s", code, errOut)
	}
}
