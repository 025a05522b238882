package ctr

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/features"
	"colo/graph"
	"colo/placement"
	"colo/ps/clock"
	"colo/train"
	"colo/train/deploy"
)

// clicks writes a CSV table of n rows whose label depends on the pair of
// two categories (a cross the mlp must learn from their embeddings), on a
// third category and on a numeric column; rows of day ≥ 20 are the test
// split. It returns the file's path.
func clicks(t testing.TB, n int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("day,a,b,c,x,click\n")
	for range n {
		a, bb, c := rng.IntN(6), rng.IntN(5), rng.IntN(4)
		x := rng.NormFloat64()
		z := 1.5*math.Cos(float64(a*bb)) + 0.5*float64(c-2) + 0.8*x
		click := 0
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			click = 1
		}
		fmt.Fprintf(&b, "%d,a%d,b%d,c%d,%.4f,%d\n", rng.IntN(25), a, bb, c, x, click)
	}
	path := filepath.Join(t.TempDir(), "clicks.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const clickSpec = "click ~ a + b + hash(c, 3) + std(x) + 1; test: day >= 20"

// fit reads the table at path through spec and returns the fitted spec
// and its training and test graphs.
func fit(t testing.TB, path, spec string) (*features.Fitted, *graph.Graph, *graph.Graph) {
	t.Helper()
	s, err := features.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := features.Fit(path, s, features.TableOptions(0))
	if err != nil {
		t.Fatal(err)
	}
	if s.Test == "" {
		g, err := f.Graph(path, features.Train, features.TableOptions(0))
		if err != nil {
			t.Fatal(err)
		}
		return f, g, nil
	}
	g, test, err := f.Split(path, features.TableOptions(0))
	if err != nil {
		t.Fatal(err)
	}
	return f, g, test
}

// job returns a ctr job on k machines with the model cfg.
func job(t testing.TB, cfg Config, sp *features.Fitted, k int) train.Job {
	t.Helper()
	j := train.DefaultJob()
	j.App, j.Data.Train, j.Data.Load.Spec = "ctr", "clicks.csv", sp
	if err := Defaults(&j); err != nil {
		t.Fatal(err)
	}
	if err := j.SetOptions(cfg); err != nil {
		t.Fatal(err)
	}
	j.Config.Machines, j.Config.Batch, j.Config.MaxPasses, j.Config.Rule.LR = k, 50, 6, 0.1
	return j
}

func open(t testing.TB, j train.Job, g, test *graph.Graph) *App {
	t.Helper()
	a, err := Open(j, g, test)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFields: the spec's categorical fields are embedded, std and raw
// columns go to the mlp as values, the bias is the mlp's; the input and
// the keys have the sizes that follow.
func TestFields(t *testing.T) {
	sp, g, test := fit(t, clicks(t, 300, 1), clickSpec)
	cfg := DefaultConfig()
	cfg.Dim, cfg.Hidden = 4, []int{6}
	a := open(t, job(t, cfg, sp, 1), g, test)
	if !slices.Equal(a.Fields, []string{"a", "b", "hash(c, 3)"}) || !slices.Equal(a.Numeric, []string{"std(x)"}) {
		t.Fatalf("fields %v, numeric %v", a.Fields, a.Numeric)
	}
	if in := a.Model.InputDim(); in != 3*4+1 {
		t.Errorf("the mlp's input has %d values, want 3·4 + 1", in)
	}
	cfg.Interactions = "dot"
	if in := open(t, job(t, cfg, sp, 1), g, test).Model.InputDim(); in != 3*4+3+1 {
		t.Errorf("with dot interactions the mlp's input has %d values, want 3·4 + 3 + 1", in)
	}
	cfg.Interactions = "none"
	P := a.Model.NumParams()
	if P != 13*6+6+6*2+2 || a.NumKeys() != g.NumParams()+(P+3)/4 {
		t.Errorf("%d mlp parameters, %d keys for %d graph parameters", P, a.NumKeys(), g.NumParams())
	}
	// Every training row has its three fields; the numeric value is the
	// graph's.
	for u := range a.train.n {
		for f := range 3 {
			k := a.train.keys[u*3+f]
			if k < 0 || !slices.Contains(g.Params(u), uint32(k)) {
				t.Fatalf("row %d field %d: key %d, the graph's parameters %v", u, f, k, g.Params(u))
			}
		}
	}
}

// step runs the model on the rows of batch bt at the displacements vals
// (unchanged) and returns the loss and, unless grad is nil, adds the
// gradient.
func step(p *part, b int, vals, grad []float32) float64 {
	v := slices.Clone(vals)
	g := grad
	if g == nil {
		g = make([]float32, len(vals))
	}
	loss, _, _ := p.Step(b, v, g, 1)
	return loss
}

// TestLossGradCentralDifferences checks the gradient of a batch's summed
// loss with respect to every value pulled, the embedding rows and the
// mlp's weights and biases, against central differences of the loss, with
// the embeddings concatenated and with their dot interactions.
func TestLossGradCentralDifferences(t *testing.T) {
	sp, g, _ := fit(t, clicks(t, 200, 2), clickSpec)
	for _, c := range []struct {
		dim   int
		inter string
	}{{4, "none"}, {4, "dot"}, {8, "dot"}} { // rows of 8: embed's AVX2 kernels for the dots
		t.Run(fmt.Sprintf("dim %d %s", c.dim, c.inter), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dim, cfg.Hidden, cfg.Interactions = c.dim, []int{5}, c.inter
			lossGradCentralDifferences(t, cfg, sp, g)
		})
	}
}

func lossGradCentralDifferences(t *testing.T, cfg Config, sp *features.Fitted, g *graph.Graph) {
	a := open(t, job(t, cfg, sp, 1), g, nil)
	rows := make([]int32, 24)
	for i := range rows {
		rows[i] = int32(3 * i)
	}
	p := a.Part(0, rows, 1, 1).(*part)
	keys := p.Keys(0).List
	rng := rand.New(rand.NewPCG(9, 9))
	vals := make([]float32, len(keys)*cfg.Dim)
	for i := range vals {
		vals[i] = float32(0.3 * rng.NormFloat64())
	}
	grad := make([]float32, len(vals))
	step(p, 0, vals, grad)
	ne := len(keys) - a.dense
	const h = 1e-3
	checked := 0
	for i := range ne*cfg.Dim + a.Model.NumParams() {
		orig := vals[i]
		vals[i] = orig + h
		up := step(p, 0, vals, nil)
		vals[i] = orig - h
		down := step(p, 0, vals, nil)
		vals[i] = orig
		num := (up - down) / (2 * h)
		what := "embedding"
		if i >= ne*cfg.Dim {
			what = "mlp"
		}
		if d := math.Abs(num - float64(grad[i])); d > 5e-3+1e-2*math.Abs(num) {
			t.Errorf("%s value %d: gradient %v, central difference %v", what, i, grad[i], num)
		}
		checked++
	}
	for i := ne*cfg.Dim + a.Model.NumParams(); i < len(grad); i++ {
		if grad[i] != 0 {
			t.Errorf("padding value %d of the mlp's last key has gradient %v", i, grad[i])
		}
	}
	if ne < 10 || checked < 100 {
		t.Errorf("checked %d values of %d embedding rows", checked, ne)
	}
}

// TestOneMachineMatchesLocal: one machine on the parameter server (BSP,
// AdaGrad on the server) runs the very passes of the single-process loop
// train.Local, and scores the same (its evaluation pulling the model in
// many pulls); the model learns the cross.
func TestOneMachineMatchesLocal(t *testing.T) {
	sp, g, test := fit(t, clicks(t, 1200, 3), clickSpec)
	cfg := DefaultConfig()
	cfg.Dim, cfg.Hidden = 8, []int{16}
	j := job(t, cfg, sp, 1)
	a := open(t, j, g, test)
	passes, model, err := train.Local(a, j.Config)
	if err != nil {
		t.Fatal(err)
	}
	want := a.ScoreModel(model)
	a.chunk = 7 * 4 * cfg.Dim // the evaluation pulls the model 7 keys at a time
	p, err := a.Extend(placement.Uniform(g, 1, placement.NewRand(1)), 1)
	if err != nil {
		t.Fatal(err)
	}
	j.Placement = "uniform"
	res, err := train.Run(context.Background(), j, a, p, deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RoundsDetail) != len(passes) {
		t.Fatalf("cluster: %d passes, Local %d", len(res.RoundsDetail), len(passes))
	}
	for i, q := range passes {
		got := res.RoundsDetail[i]
		if got.TrainLoss != q.TrainLoss || got.Rounds != q.Rounds || got.Samples != q.Samples || got.TrainAccuracy != q.TrainAccuracy {
			t.Errorf("pass %d: cluster loss %v after %d rounds of %d rows, Local %v after %d of %d",
				i+1, got.TrainLoss, got.Rounds, got.Samples, q.TrainLoss, q.Rounds, q.Samples)
		}
	}
	if res.AUC == nil || *res.AUC != *want.AUC || *res.LogLoss != *want.LogLoss || res.Samples != want.Samples || res.On != "test" {
		t.Errorf("cluster %s AUC %v log loss %v on %d rows, Local %v %v on %d", res.On, res.AUC, res.LogLoss, res.Samples, *want.AUC, *want.LogLoss, want.Samples)
	}
	if passes[len(passes)-1].TrainLoss >= passes[0].TrainLoss || *want.AUC < 0.75 {
		t.Errorf("did not learn: passes %v, test AUC %v", passes, *want.AUC)
	}
}

// TestMachinesLearn trains four machines in one process, BSP,
// asynchronously and with a bound of one round, each to a test AUC near
// one machine's (async and ssp with the default step of a push divided
// by the workers; the order of their pushes varies from run to run).
func TestMachinesLearn(t *testing.T) {
	sp, g, test := fit(t, clicks(t, 1200, 3), clickSpec)
	cfg := DefaultConfig()
	cfg.Dim, cfg.Hidden = 8, []int{16}
	for _, ck := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Async}, {Mode: clock.Bounded, Tau: 1}} {
		t.Run(ck.Name(), func(t *testing.T) {
			j := job(t, cfg, sp, 4)
			j.Config.Clock = ck
			a := open(t, j, g, test)
			p, err := a.Extend(placement.Uniform(g, 4, placement.NewRand(2)), 4)
			if err != nil {
				t.Fatal(err)
			}
			j.Placement = "uniform"
			res, err := train.Run(context.Background(), j, a, p, deploy.InProcess{})
			if err != nil {
				t.Fatal(err)
			}
			if res.AUC == nil || *res.AUC < 0.75 {
				t.Errorf("test AUC %v, want above 0.75", res.AUC)
			}
		})
	}
}

// TestExtend: the mlp's keys follow the graph's parameters, spread over
// the servers in contiguous, nearly equal ranges; GraphPlacement gives
// the graph's part back.
func TestExtend(t *testing.T) {
	sp, g, _ := fit(t, clicks(t, 200, 4), clickSpec)
	cfg := DefaultConfig()
	cfg.Dim, cfg.Hidden = 2, []int{20}
	a := open(t, job(t, cfg, sp, 3), g, nil)
	base := placement.Uniform(g, 3, placement.NewRand(1))
	p, err := a.Extend(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	for j, s := range p.Param[a.emb:] {
		if j > 0 && s < p.Param[a.emb+j-1] {
			t.Fatalf("mlp key %d on server %d after server %d", j, s, p.Param[a.emb+j-1])
		}
		counts[s]++
	}
	if slices.Max(counts)-slices.Min(counts) > 1 {
		t.Errorf("mlp keys per server %v", counts)
	}
	if !slices.Equal(a.GraphPlacement(p).Param, base.Param) {
		t.Error("GraphPlacement is not the graph's placement")
	}
	if _, err := a.Extend(p, 3); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("Extend of an extended placement: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "place")
	if err := a.WritePlacement(dir, job(t, cfg, sp, 3), p); err != nil {
		t.Fatal(err)
	}
	back, err := placement.ReadDir(dir, g, 3)
	if err != nil || !slices.Equal(back.Param, base.Param) || !slices.Equal(back.Data, base.Data) {
		t.Errorf("WritePlacement then ReadDir: %v", err)
	}
}

// TestBadInput: a job the model cannot train is refused with what is
// wrong.
func TestBadInput(t *testing.T) {
	path := clicks(t, 200, 5)
	sp, g, test := fit(t, path, clickSpec)
	cfg := DefaultConfig()
	numeric, ng, _ := fit(t, path, "click ~ std(x) + raw(day)")
	multi, mg, _ := fit(t, path, "day ~ a + b")
	for _, c := range []struct {
		name string
		open func() error
		want string
	}{
		{"no spec", func() error { return CheckSpec(nil) }, "feature spec (--spec"},
		{"numeric only", func() error { _, err := Open(job(t, cfg, numeric, 1), ng, nil); return err }, "no categorical field to embed"},
		{"label of many values", func() error { _, err := Open(job(t, cfg, multi, 1), mg, nil); return err }, "binary label"},
		{"l2", func() error {
			j := job(t, cfg, sp, 1)
			j.Config.Rule.L2 = 0.1
			_, err := Open(j, g, test)
			return err
		}, "rule.l2"},
		{"dim", func() error {
			c := cfg
			c.Dim = 0
			_, err := Open(job(t, c, sp, 1), g, test)
			return err
		}, "dim 0"},
		{"hidden", func() error {
			c := cfg
			c.Hidden = []int{8, -1}
			_, err := Open(job(t, c, sp, 1), g, test)
			return err
		}, "hidden[1] -1"},
		{"interactions", func() error {
			c := cfg
			c.Interactions = "cat"
			_, err := Open(job(t, c, sp, 1), g, test)
			return err
		}, `interactions "cat"`},
		{"no hidden", func() error {
			c := cfg
			c.Hidden = nil
			j := job(t, c, sp, 1)
			j.Options = []byte(`{"dim": 8, "hidden": []}`)
			_, err := Open(j, g, test)
			return err
		}, "at least one hidden layer"},
	} {
		if err := c.open(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
