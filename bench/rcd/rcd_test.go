package rcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/app/dense"
	"colo/dataset"
	"colo/gossip"
	"colo/gossip/job"
	"colo/internal/plot"
	"colo/internal/plot/plottest"
	"colo/train"
)

func blobs(n, dim, classes int, seed uint64) *dataset.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := make([]float32, classes*dim)
	for i := range centres {
		centres[i] = float32(1.5 * rng.NormFloat64())
	}
	x := make([]float32, n*dim)
	y := make([]int, n)
	for i := range n {
		y[i] = i % classes
		for d := range dim {
			x[i*dim+d] = centres[y[i]*dim+d] + float32(rng.NormFloat64())
		}
	}
	d, err := dataset.New(x, y, dim, classes)
	if err != nil {
		panic(err)
	}
	return d
}

func mlpJob(t *testing.T, train_, test string, hidden []int, labels ...string) train.Job {
	t.Helper()
	j := train.DefaultJob()
	j.App, j.Data.Train, j.Data.Test = "mlp", train_, test
	if err := dense.Defaults(&j); err != nil {
		t.Fatal(err)
	}
	o := dense.DefaultOptions()
	o.Hidden = hidden
	if len(labels) == 2 {
		o.Labels, o.TestLabels = labels[0], labels[1]
	}
	if err := j.SetOptions(o); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRunSynthetic runs the six variants twice on small blobs: every row
// has its runs and curve, F = 2 sends half the bytes per epoch of F = 1,
// proportional batches only on ratio shards, and the files are written.
func TestRunSynthetic(t *testing.T) {
	all := blobs(800, 8, 4, 1)
	tr, err := dataset.New(all.Features[:600*8], all.Labels[:600], 8, 4)
	if err != nil {
		t.Fatal(err)
	}
	te, err := dataset.New(all.Features[600*8:], all.Labels[600:], 8, 4)
	if err != nil {
		t.Fatal(err)
	}
	d, err := job.Open(mlpJob(t, "blobs", "", []int{16}), tr, te)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Runs, cfg.Gossip.Batch, cfg.Gossip.Epochs, cfg.Gossip.LR, cfg.Target = 2, 60, 3, 0.2, 0.5
	cfg.Net.Link = 0
	res, err := Run(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 6 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	byName := map[string]Row{}
	for _, r := range res.Rows {
		byName[r.Algorithm+"/"+r.Shard] = r
		if len(r.Runs) != 2 || len(r.curve) == 0 {
			t.Errorf("%s/%s: %d runs, %d curve points", r.Algorithm, r.Shard, len(r.Runs), len(r.curve))
		}
		if r.TestAccuracy < 0.8 {
			t.Errorf("%s/%s: test accuracy %.3f", r.Algorithm, r.Shard, r.TestAccuracy)
		}
		if want := map[bool]string{true: "equal", false: "proportional"}[r.Shard == "random"]; r.Batches != want {
			t.Errorf("%s/%s: %s batches, want %s", r.Algorithm, r.Shard, r.Batches, want)
		}
		if r.Runs[0].Seed == r.Runs[1].Seed {
			t.Errorf("%s/%s: both runs have seed %d", r.Algorithm, r.Shard, r.Runs[0].Seed)
		}
	}
	one, two := byName["d-psgd/random"], byName["d-psgd/facility"]
	if one.LocalSteps != 1 || two.LocalSteps != 2 || 2*two.BytesPerEpoch != one.BytesPerEpoch {
		t.Errorf("bytes per epoch: F=%d %v, F=%d %v", one.LocalSteps, one.BytesPerEpoch, two.LocalSteps, two.BytesPerEpoch)
	}
	if m := byName["matcha/random"]; m.Matcha == nil || m.BytesPerEpoch >= one.BytesPerEpoch {
		t.Errorf("matcha with budget 0.5 sent %v bytes per epoch, d-psgd %v", m.BytesPerEpoch, one.BytesPerEpoch)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res); err != nil || strings.Count(buf.String(), "\n") != 7 || !strings.Contains(buf.String(), "proportional") {
		t.Errorf("table: %v\n%s", err, buf.String())
	}
	dir := t.TempDir()
	if err := WriteDir(dir, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"algorithm", "shard", "seconds_to_target", "test_accuracy", "bytes", "runs"} {
		if _, ok := back.Rows[0][key]; !ok {
			t.Errorf("rcd.json rows lack %q", key)
		}
	}
	res.Dataset = "blobs"
	for _, f := range Files[1:3] {
		svg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		texts, err := plottest.Texts(svg)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all := strings.Join(texts, "\n")
		for _, r := range res.Rows {
			if name := fmt.Sprintf("%s/%s F=%d", r.Algorithm, r.Shard, r.LocalSteps); !strings.Contains(all, name) {
				t.Errorf("%s: no series %q in %q", f, name, texts)
			}
		}
		p, err := os.Open(plot.PNGPath(filepath.Join(dir, f)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(p)
		p.Close()
		if err != nil {
			t.Errorf("%s: %v", plot.PNGPath(f), err)
		}
	}
	plottest.Check(t, Figure(res.Title(), []Series{{Name: "d-psgd/random F=1", Curve: res.Rows[0].curve}}, true, res.Target),
		"d-psgd/random F=1", "epochs", "training loss", fmt.Sprintf("target %.3f", res.Target))
	if want := "blobs: 4 workers of speeds "; !strings.HasPrefix(res.Title(), want) {
		t.Errorf("title %q, want it to start with %q", res.Title(), want)
	}
	cfg.Runs = 0
	if _, err := Run(context.Background(), cfg, d); err == nil || !strings.Contains(err.Error(), "runs 0") {
		t.Errorf("runs 0: %v", err)
	}
}

// TestFashionMNIST trains D-PSGD and RCD-SGD briefly on the first 3000
// samples of Fashion-MNIST.
func TestFashionMNIST(t *testing.T) {
	dir := "/work/shared/data/fashion-mnist"
	if testing.Short() {
		t.Skip("-short: Fashion-MNIST training skipped")
	}
	if _, err := os.Stat(filepath.Join(dir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST is not in %s (%v): skipped", dir, err)
	}
	j := mlpJob(t, filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), "", []int{32}, filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), "")
	d, err := job.Load(j)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	sub, err := dataset.New(d.Samples.Features[:n*d.Samples.Dim], d.Samples.Labels[:n], d.Samples.Dim, d.Samples.Classes)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = job.Open(j, sub, nil); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Runs, cfg.Gossip.Epochs, cfg.Gossip.Batch = 1, 3, 64
	cfg.Variants = []Variant{DefaultVariants(2)[0], DefaultVariants(2)[1]}
	res, err := Run(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.FinalTrainLoss > 1.0 || r.TestAccuracy < 0.6 {
			t.Errorf("%s/%s: final loss %.3f, accuracy %.3f", r.Algorithm, r.Shard, r.FinalTrainLoss, r.TestAccuracy)
		}
	}
}

// TestDivergedRunsAreRecorded: runs whose loss becomes infinite are
// recorded as diverged, the comparison goes on, and the table says so.
func TestDivergedRunsAreRecorded(t *testing.T) {
	all := blobs(200, 8, 4, 2)
	d, err := job.Open(mlpJob(t, "blobs", "", []int{8}), all, all)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Runs, cfg.Gossip.Batch, cfg.Gossip.Epochs, cfg.Gossip.LR = 1, 40, 2, 1e30
	cfg.Net.Link = 0
	cfg.Variants = cfg.Variants[:2]
	var told int
	cfg.Diverged = func(Variant, int, error) { told++ }
	res, err := Run(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Diverged != 1 || len(r.Runs) != 1 || !r.Runs[0].Diverged || r.SecondsToTarget != nil || len(r.curve) != 0 {
			t.Errorf("%s/%s: %d diverged of %d runs, curve of %d", r.Algorithm, r.Shard, r.Diverged, len(r.Runs), len(r.curve))
		}
	}
	if told != 2 {
		t.Errorf("told of %d divergences, want 2", told)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil || !strings.Contains(b.String(), "0/1 (1 diverged)") || strings.Contains(b.String(), "0.00 ± 0.00") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
	if err := WriteDir(t.TempDir(), res); err != nil {
		t.Errorf("writing a result whose runs all diverged: %v", err)
	}
}

// TestVariants: each named algorithm gives its three rows in the order
// named, RCD-SGD's with the F given; unknown and repeated names are
// refused.
func TestVariants(t *testing.T) {
	vs, err := Variants([]string{"matcha"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.Name())
	}
	want := []string{"matcha/random F=1", "matcha/facility F=3", "matcha/graphcut F=3"}
	if !slices.Equal(names, want) {
		t.Errorf("variants %q, want %q", names, want)
	}
	if all := DefaultVariants(2); len(all) != 6 || all[0].Algorithm != "d-psgd" || all[3].Algorithm != "matcha" {
		t.Errorf("default variants %+v: want d-psgd's three, then matcha's", all)
	}
	for _, bad := range [][]string{{"dpsgd"}, {"d-psgd", "d-psgd"}, {""}} {
		if _, err := Variants(bad, 2); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestDerivedTarget: the derived target is the highest of the runs'
// lowest losses (by hand: runs reaching 0.5, 0.3 and 0.4 give 0.5),
// leaving out diverged runs and NaN points, and every run reaches it.
func TestDerivedTarget(t *testing.T) {
	curve := func(losses ...float64) []gossip.Point {
		var c []gossip.Point
		for i, l := range losses {
			c = append(c, gossip.Point{Epoch: float64(i + 1), Seconds: float64(i + 1), TrainLoss: l})
		}
		return c
	}
	rows := []Row{
		{Runs: []RunResult{{Curve: curve(0.9, 0.5, 0.6)}, {Curve: curve(0.8, math.NaN(), 0.3)}}},
		{Runs: []RunResult{{Curve: curve(0.7, 0.4)}, {Diverged: true, Curve: curve(0.9, 0.95)}}},
	}
	if got := DerivedTarget(rows); got != 0.5 {
		t.Fatalf("derived %v, want 0.5", got)
	}
	wantSecs := []float64{2, 3, 2}
	k := 0
	for i := range rows {
		for j := range rows[i].Runs {
			r := &rows[i].Runs[j]
			if r.Diverged {
				continue
			}
			r.reach(0.5)
			if r.SecondsToTarget == nil || *r.SecondsToTarget != wantSecs[k] {
				t.Errorf("run %d reached 0.5 at %v, want %v s", k, r.SecondsToTarget, wantSecs[k])
			}
			k++
		}
	}
	if got := DerivedTarget([]Row{{Runs: []RunResult{{Diverged: true}}}}); got != 0 {
		t.Errorf("no finite run: %v, want 0", got)
	}
}
