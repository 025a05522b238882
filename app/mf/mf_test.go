package mf

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"colo/graph"
	"colo/placement"
	"colo/ps/update"
	"colo/train"
	"colo/train/deploy"
)

// lowRank returns a rows × cols ratings graph of which a fraction density
// of entries are observed, each 3 + p_u·q_i + noise, with p and q of rank
// r drawn from a standard normal and noise of standard deviation sigma.
func lowRank(t testing.TB, rows, cols, r int, density, sigma float64, seed uint64) *graph.Graph {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	normals := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return x
	}
	p, q := normals(rows*r), normals(cols*r)
	b := graph.NewBuilder(graph.Meta{Format: "generated", Source: "low rank"})
	var ids []uint64
	var vals []float32
	for u := range rows {
		ids, vals = ids[:0], vals[:0]
		for i := range cols {
			if rng.Float64() >= density {
				continue
			}
			x := 3 + sigma*rng.NormFloat64()
			for k := range r {
				x += p[u*r+k] * q[i*r+k]
			}
			ids = append(ids, uint64(i))
			vals = append(vals, float32(x))
		}
		if err := b.AddSample(0, ids, vals); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// allRows returns 0..n-1.
func allRows(n int) []int32 {
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = int32(i)
	}
	return rows
}

// TestMFGradient checks Step's gradient of the column factors against
// central differences of half its summed squared error, with the row
// factors fixed (RowLR 0).
func TestMFGradient(t *testing.T) {
	g := lowRank(t, 7, 5, 2, 0.6, 0.5, 3)
	cfg := DefaultConfig()
	cfg.Rank, cfg.RowLR, cfg.HoldOut = 3, 0, 0
	a, err := New(g, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	part := a.Part(0, allRows(a.NumSamples()), 1, 1)
	keys := part.Keys(0).List
	R := cfg.Rank
	rng := rand.New(rand.NewPCG(4, 5))
	vals := make([]float32, len(keys)*R)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	grad := make([]float32, len(vals))
	loss, n, _ := part.Step(0, vals, grad, 1)
	if n != int(g.NumEdges()) || !(loss > 0) {
		t.Fatalf("loss %v over %d ratings, want > 0 over %d", loss, n, g.NumEdges())
	}
	half := func(v []float32) float64 {
		l, _, _ := part.Step(0, v, make([]float32, len(v)), 1)
		return l / 2
	}
	// h is a power of two, so that vals[i] ± h is exact in float32.
	const h = 1.0 / 1024
	for i := range vals {
		x := vals[i]
		vals[i] = x + h
		up := half(vals)
		vals[i] = x - h
		down := half(vals)
		vals[i] = x
		want := (up - down) / (2 * h)
		if d := math.Abs(float64(grad[i]) - want); d > 1e-4*(1+math.Abs(want)) {
			t.Errorf("key %d value %d: gradient %v, central difference %v", keys[i/R], i%R, grad[i], want)
		}
	}
	// The scale multiplies the gradient.
	grad2 := make([]float32, len(vals))
	part.Step(0, vals, grad2, 0.25)
	for i := range grad {
		if d := math.Abs(float64(grad2[i] - grad[i]/4)); d > 1e-6*(1+math.Abs(float64(grad[i]))) {
			t.Fatalf("scaled gradient %v, want %v", grad2[i], grad[i]/4)
		}
	}
}

// recordingApp is an App that keeps the parts it makes, so that a test
// can score a model trained by Local with the parts' row factors.
type recordingApp struct {
	*App
	parts []train.Part
}

func (r *recordingApp) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	p := r.App.Part(rank, rows, batches, seed)
	r.parts = append(r.parts, p)
	return p
}

// TestMFLocalLowRank trains a noisy rank-3 matrix in one process: the
// held-out RMSE must fall well below that of predicting the mean.
func TestMFLocalLowRank(t *testing.T) {
	const sigma = 0.1
	g := lowRank(t, 300, 200, 3, 0.2, sigma, 7)
	cfg := DefaultConfig()
	cfg.Rank = 8
	a, err := New(g, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingApp{App: a}
	tc := train.DefaultConfig()
	tc.Rule = update.Config{Name: "adagrad", LR: 0.3, L2: 0.01, Eps: 1e-8}
	tc.Batch, tc.MaxPasses, tc.Epsilon = 30, 60, 0
	passes, model, err := train.Local(rec, tc)
	if err != nil {
		t.Fatal(err)
	}
	rmse, n := a.HeldOutRMSE(rec.parts, model)
	base, nb := a.MeanRMSE()
	last := passes[len(passes)-1]
	t.Logf("%d passes: train MSE %.4f, held-out RMSE %.4f over %d ratings, predicting μ = %.3f: %.4f",
		last.Pass, last.TrainLoss, rmse, n, a.Mean, base)
	if n != nb || n < int(0.05*float64(g.NumEdges())) {
		t.Fatalf("%d and %d held-out ratings of %d", n, nb, g.NumEdges())
	}
	if !(rmse < 0.5*base) {
		t.Errorf("held-out RMSE %.4f, want below half of the mean's %.4f", rmse, base)
	}
	if first := passes[0].TrainLoss; !(last.TrainLoss < 0.2*first) {
		t.Errorf("train MSE from %.4f to %.4f", first, last.TrainLoss)
	}
}

// TestMFHoldOut checks that the held-out entries do not depend on how
// the rows are placed, that the row factors do not either, and that the
// fraction is about HoldOut.
func TestMFHoldOut(t *testing.T) {
	g := lowRank(t, 100, 80, 2, 0.3, 0.1, 11)
	cfg := DefaultConfig()
	cfg.HoldOut = 0.25
	a, err := New(g, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	held := len(a.Held.Val)
	if len(a.Train.Val)+held != int(g.NumEdges()) {
		t.Fatalf("%d + %d entries, want %d", len(a.Train.Val), held, g.NumEdges())
	}
	if f := float64(held) / float64(g.NumEdges()); math.Abs(f-0.25) > 0.03 {
		t.Errorf("held out %.3f of the entries, want about 0.25", f)
	}
	// Rows split over two machines get the factors and held-out entries
	// they have on one.
	whole := a.Part(0, allRows(100), 1, 1).(*mfPart)
	var odd, even []int32
	for u := range int32(100) {
		if u%2 == 1 {
			odd = append(odd, u)
		} else {
			even = append(even, u)
		}
	}
	R := cfg.Rank
	for _, rows := range [][]int32{odd, even} {
		p := a.Part(1, rows, 3, 9).(*mfPart)
		for i, u := range rows {
			for k := range R {
				if p.factors[i*R+k] != whole.factors[int(u)*R+k] {
					t.Fatalf("row %d: factors differ by machine", u)
				}
			}
		}
	}
	if r, n := a.HeldOutRMSE([]train.Part{a.Part(0, odd, 1, 1), a.Part(1, even, 1, 1)}, make([]float32, a.NumKeys()*R)); n != held {
		t.Errorf("scored %d held-out entries (RMSE %v), want %d", n, r, held)
	}
}

// TestMFTestSet checks that a test set is matched to the training rows
// and columns by id, and that entries of unknown rows or columns are
// skipped and counted.
func TestMFTestSet(t *testing.T) {
	read := func(s string) *graph.Graph {
		g, err := graph.ReadRatings(strings.NewReader(s), "r.data")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	trainSet := read("10 1 4\n10 2 3\n20 2 5\n30 3 1\n")
	test := read("20 1 2\n20 9 5\n40 1 1\n30 3 2\n")
	a, err := New(trainSet, test, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if a.Skipped != 2 || a.Mean != 13.0/4 || len(a.Train.Val) != 4 {
		t.Fatalf("skipped %d, mean %v, %d training entries", a.Skipped, a.Mean, len(a.Train.Val))
	}
	// Rows 10, 20, 30 are samples 0, 1, 2; columns 1, 2, 3 keys 0, 1, 2.
	want := []struct {
		row int
		key uint32
		val float32
	}{{1, 0, 2}, {2, 2, 2}}
	for _, w := range want {
		cols, vals := a.Held.Row(w.row)
		if len(cols) != 1 || cols[0] != w.key || vals[0] != w.val {
			t.Errorf("row %d: held-out %v %v, want key %d rating %v", w.row, cols, vals, w.key, w.val)
		}
	}
	// With q = 0 every prediction is μ.
	base, n := a.MeanRMSE()
	rmse, m := a.HeldOutRMSE([]train.Part{a.Part(0, allRows(3), 1, 1)}, make([]float32, a.NumKeys()*a.Width()))
	if n != 2 || m != 2 || math.Abs(rmse-base) > 1e-6 {
		t.Errorf("RMSE %v over %d, predicting μ %v over %d", rmse, m, base, n)
	}
}

func TestMFConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"rank 0", func(c *Config) { c.Rank = 0 }, "mf: rank 0, want 1..65536"},
		{"rank too large", func(c *Config) { c.Rank = 1 << 17 }, "mf: rank 131072, want 1..65536"},
		{"negative row rate", func(c *Config) { c.RowLR = -1 }, "mf: row learning rate -1, want a finite value ≥ 0"},
		{"NaN row rate", func(c *Config) { c.RowLR = math.NaN() }, "mf: row learning rate NaN"},
		{"infinite L2", func(c *Config) { c.L2 = math.Inf(1) }, "mf: L2 +Inf, want a finite value ≥ 0"},
		{"hold out all", func(c *Config) { c.HoldOut = 1 }, "mf: hold-out fraction 1, want [0, 1)"},
		{"negative hold out", func(c *Config) { c.HoldOut = -0.1 }, "mf: hold-out fraction -0.1"},
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if _, err := New(lowRank(t, 3, 3, 1, 1, 0, 1), nil, c); err == nil {
				t.Error("New accepted the config")
			}
		})
	}
	// Everything held out leaves nothing to train on.
	g := graph.NewBuilder(graph.Meta{Source: "one"})
	if err := g.AddSample(0, []uint64{1}, []float32{3}); err != nil {
		t.Fatal(err)
	}
	one, err := g.Build()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.HoldOut = 0.999999
	if _, err := New(one, nil, c); err == nil || !strings.Contains(err.Error(), "no training ratings") {
		t.Errorf("err = %v, want no training ratings", err)
	}
}

// TestMFRunMatchesLocal trains on a two-machine cluster with full-batch
// BSP rounds: the row factors do not depend on the placement and the
// servers apply the sum of the workers' gradients, so the evaluation
// matches Local's up to the order of float additions.
func TestMFRunMatchesLocal(t *testing.T) {
	g := lowRank(t, 60, 40, 2, 0.3, 0.1, 13)
	cfg := DefaultConfig()
	cfg.Rank = 4
	a, err := New(g, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc := train.DefaultConfig()
	tc.Machines, tc.MaxPasses, tc.Epsilon = 2, 20, 0
	tc.Rule = update.Config{Name: "sgd", LR: 2, L2: 0.01}
	rec := &recordingApp{App: a}
	_, model, err := train.Local(rec, tc)
	if err != nil {
		t.Fatal(err)
	}
	want, n := a.HeldOutRMSE(rec.parts, model)
	p := placement.Uniform(g, 2, placement.NewRand(3))
	job := train.DefaultJob()
	job.App, job.Data.Train, job.Placement, job.Config = "mf", "test", "uniform", tc
	res, err := train.Run(context.Background(), job, a, p, deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RMSE == nil || res.Samples != n || math.Abs(*res.RMSE-want) > 1e-4*want {
		t.Fatalf("cluster: %d held-out ratings, RMSE %v; Local: %d, %v", res.Samples, res.RMSE, n, want)
	}
	if res.Passes != 20 {
		t.Errorf("%d passes, want 20", res.Passes)
	}
}

// TestMFMovieLens trains on MovieLens 100k with 10% of the ratings held
// out: the column factors need the servers' L2, which AdaGrad's
// unnormalised penalty does not survive, hence SGD.
func TestMFMovieLens(t *testing.T) {
	const path = "../../../shared/data/movielens-100k/u.data.xz"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("MovieLens 100k not found beside the repository: %v", err)
	}
	opt := graph.DefaultLoadOptions()
	opt.Format = graph.FormatRatings
	g, err := graph.Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(g, nil, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tc := train.DefaultConfig()
	tc.Rule = update.Config{Name: "sgd", LR: 2, L2: 0.02}
	tc.MaxPasses = 100
	rec := &recordingApp{App: a}
	passes, model, err := train.Local(rec, tc)
	if err != nil {
		t.Fatal(err)
	}
	rmse, n := a.HeldOutRMSE(rec.parts, model)
	base, _ := a.MeanRMSE()
	t.Logf("%d passes: train MSE %.4f, held-out RMSE %.4f over %d ratings, predicting μ = %.4f: %.4f",
		len(passes), passes[len(passes)-1].TrainLoss, rmse, n, a.Mean, base)
	if !(rmse < 0.96) || !(rmse < 0.87*base) {
		t.Errorf("held-out RMSE %.4f, want below 0.96 and well below the mean's %.4f", rmse, base)
	}
}
