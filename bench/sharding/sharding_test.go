package sharding

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/app"
	"colo/dataset"
	"colo/internal/plot/plottest"
	"colo/ps/clock"
)

// TestTableByHand checks means, sample variances, ratios and the class
// spread on runs computed by hand.
func TestTableByHand(t *testing.T) {
	runs := []RunResult{
		{Scheme: "random", ValAccuracy: 0.80, TrainLoss: 1, ClassAccuracy: []float64{0.5, 0.9}},
		{Scheme: "random", ValAccuracy: 0.84, TrainLoss: 3, ClassAccuracy: []float64{0.7, 0.9}},
		{Scheme: "stratified", ValAccuracy: 0.82, TrainLoss: 2, ClassAccuracy: []float64{0.6, 0.8}},
		{Scheme: "stratified", ValAccuracy: 0.83, TrainLoss: 2, ClassAccuracy: []float64{0.6, 0.9}},
	}
	rows := Table(runs, []string{"random", "stratified"})
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	r, s := rows[0], rows[1]
	if !near(r.ValAccuracy.Mean, 0.82) || !near(r.ValAccuracy.Variance, 0.0008) || !near(r.TrainLoss.Variance, 2) {
		t.Errorf("random: %+v", r)
	}
	if !near(s.ValAccuracy.Variance, 0.00005) || s.TrainLoss.Variance != 0 {
		t.Errorf("stratified: %+v", s)
	}
	if !near(s.VarianceRatio["validation_accuracy"], 16) || !near(r.VarianceRatio["validation_accuracy"], 1) {
		t.Errorf("ratios %v %v", r.VarianceRatio, s.VarianceRatio)
	}
	if _, ok := s.VarianceRatio["train_loss"]; ok {
		t.Error("a ratio over a zero variance")
	}
	// Class 0 of random: 0.5, 0.7 → sd 0.1414; class 1: 0.
	if !near(r.ClassSpreadMax, math.Sqrt(0.02)) || !near(r.ClassSpread, math.Sqrt(0.02)/2) {
		t.Errorf("random class spread %v %v", r.ClassSpread, r.ClassSpreadMax)
	}
	if q := quartiles([]float64{4, 1, 3, 2, 5}); q != [5]float64{1, 2, 3, 4, 5} {
		t.Errorf("quartiles %v", q)
	}
}

// TestRunWritesEveryFile runs a small study and checks the files and
// their documented fields.
func TestRunWritesEveryFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x []float32
	var y []int
	for i := range 240 {
		c := i % 3
		for j := range 12 {
			x = append(x, float32(c*(j%3))+float32(rng.NormFloat64()))
		}
		y = append(y, c)
	}
	d, err := dataset.New(x, y, 12, 3)
	if err != nil {
		t.Fatal(err)
	}
	job, err := app.DefaultJob("mlp")
	if err != nil {
		t.Fatal(err)
	}
	job.Data.Train = "generated"
	job.Config.Machines, job.Config.MaxPasses, job.Config.Batch = 3, 2, 30
	job.Config.Clock = clock.Config{Mode: clock.Async}
	if err := app.SetOptions(&job, map[string]any{"hidden": []int{8}}); err != nil {
		t.Fatal(err)
	}
	var seen int
	cfg := Config{Job: job, Schemes: []string{"random", "stratified"}, Runs: 2,
		Progress: func(string, int, *RunResult) { seen++ }}
	res, err := Run(context.Background(), cfg, &app.Data{Samples: d, TestSamples: d})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 4 || len(res.Runs) != 4 || len(res.Table) != 2 || res.Runs[1].Seed != job.Config.Seed+1 {
		t.Fatalf("%d progress calls, %d runs, %d rows, seeds %d %d", seen, len(res.Runs), len(res.Table), res.Runs[0].Seed, res.Runs[1].Seed)
	}
	dir := filepath.Join(t.TempDir(), "out")
	var table strings.Builder
	if err := WriteTable(&table, res.Table); err != nil || !strings.Contains(table.String(), "stratified") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
	if err := WriteDir(dir, res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "sharding.json"))
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app", "machines", "consistency", "epochs", "runs", "table"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("sharding.json lacks %s", f)
		}
	}
	row := fields["table"].([]any)[1].(map[string]any)
	for _, f := range []string{"scheme", "train_loss", "train_accuracy", "validation_loss", "validation_accuracy", "variance_ratio_to_baseline", "class_accuracy_spread_mean"} {
		if _, ok := row[f]; !ok {
			t.Errorf("table row lacks %s", f)
		}
	}
	for _, name := range []string{"sharding.csv", "runs.csv"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || len(recs) < 3 {
			t.Errorf("%s: %d records, %v", name, len(recs), err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "validation_accuracy.svg"))
	if _, err := plottest.Texts(svg); err != nil {
		t.Errorf("validation_accuracy.svg: %v", err)
	}
	if f, err := os.Open(filepath.Join(dir, "validation_accuracy.png")); err != nil {
		t.Error(err)
	} else {
		if _, err := png.Decode(f); err != nil {
			t.Errorf("validation_accuracy.png: %v", err)
		}
		f.Close()
	}
	res.Dataset = "blobs"
	fig := BoxFigure(res)
	boxes := fig.Panels[0].Boxes
	if len(boxes) != 2 || len(boxes[0].Points)+len(boxes[1].Points) != 4 {
		t.Errorf("box plot: %+v, want 2 boxes of 2 runs", boxes)
	}
	for _, b := range boxes {
		if !(b.Q[0] <= b.Q[1] && b.Q[1] <= b.Q[2] && b.Q[2] <= b.Q[3] && b.Q[3] <= b.Q[4]) || slices.Min(b.Points) != b.Q[0] || slices.Max(b.Points) != b.Q[4] {
			t.Errorf("box %+v: quartiles out of order or whiskers not at the extremes", b)
		}
	}
	plottest.Check(t, fig, res.Runs[0].Scheme, "final validation accuracy (%)", "blobs: ")
}

// TestValidate: a study without schemes, with one run, or with a
// placement the application does not take is refused.
func TestValidate(t *testing.T) {
	job, _ := app.DefaultJob("mlp")
	job.Data.Train = "x"
	for _, c := range []Config{
		{Job: job, Runs: 3},
		{Job: job, Schemes: []string{"random"}, Runs: 1},
		{Job: job, Schemes: []string{"parsa"}, Runs: 3},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
