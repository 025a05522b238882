package train_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"colo/balance"
	"colo/placement"
	"colo/ps/node"
	"colo/ps/update"
	"colo/ps/worker"
	"colo/train"
	"colo/train/deploy"
)

// linear is a dense test application: least squares y ≈ w·x with every
// sample dense over Dim features, so that every batch reads and writes
// the whole model as one key range (width 1, key v is w_v).
type linear struct {
	X   [][]float32
	Y   []float32
	Dim int
}

// newLinear draws n samples of a noiseless linear model of dim features.
func newLinear(n, dim int, seed uint64) *linear {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := make([]float64, dim)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	a := &linear{Dim: dim}
	for range n {
		x := make([]float32, dim)
		var y float64
		for j := range x {
			x[j] = float32(rng.NormFloat64())
			y += w[j] * float64(x[j])
		}
		a.X, a.Y = append(a.X, x), append(a.Y, float32(y))
	}
	return a
}

func (a *linear) Name() string    { return "linear" }
func (a *linear) Width() int      { return 1 }
func (a *linear) NumSamples() int { return len(a.X) }
func (a *linear) NumKeys() int    { return a.Dim }

func (a *linear) Part(rank int, rows []int32, batches int, seed uint64) train.Part {
	p := &linearPart{a: a}
	for b := range batches {
		p.batches = append(p.batches, rows[b*len(rows)/batches:(b+1)*len(rows)/batches])
	}
	return p
}

// Evaluate reports the RMSE over every sample at the servers' model, on
// worker 0.
func (a *linear) Evaluate(ctx context.Context, w *worker.Worker, _ train.Part) (train.Eval, error) {
	if w.Rank() != 0 {
		return train.Eval{}, nil
	}
	model := make([]float32, a.Dim)
	if err := w.PullRange(0, uint64(a.Dim), model).Wait(); err != nil {
		return train.Eval{}, err
	}
	return a.eval(model), nil
}

// eval is the RMSE over every sample of model.
func (a *linear) eval(model []float32) train.Eval {
	var sse float64
	for i, x := range a.X {
		e := dot(model, x) - float64(a.Y[i])
		sse += e * e
	}
	rmse := math.Sqrt(sse / float64(len(a.X)))
	return train.Eval{On: "train", Samples: len(a.X), RMSE: &rmse}
}

func dot(w, x []float32) float64 {
	var s float64
	for j := range x {
		s += float64(w[j]) * float64(x[j])
	}
	return s
}

type linearPart struct {
	a       *linear
	batches [][]int32
}

func (p *linearPart) Batches() int { return len(p.batches) }
func (p *linearPart) Keys(b int) train.Keys {
	return train.RangeKeys(0, uint64(p.a.Dim))
}

func (p *linearPart) Step(b int, vals, grad []float32, scale float32) (float64, int, int) {
	var loss float64
	for _, u := range p.batches[b] {
		x := p.a.X[u]
		e := dot(vals, x) - float64(p.a.Y[u])
		loss += e * e / 2
		for j := range x {
			grad[j] += scale * float32(e) * x[j]
		}
	}
	return loss, len(p.batches[b]), 0
}

// spread places sample u on machine u mod k and key v on server v mod k.
func spread(n, keys, k int) *placement.Placement {
	p := &placement.Placement{K: k, Data: make([]int32, n), Param: make([]int32, keys)}
	for u := range p.Data {
		p.Data[u] = int32(u % k)
	}
	for v := range p.Param {
		p.Param[v] = int32(v % k)
	}
	return p
}

func linearJob(k, passes, batch int) train.Job {
	job := train.DefaultJob()
	job.App, job.Data.Train, job.Placement = "linear", "generated", "spread"
	job.Config.Machines, job.Config.MaxPasses, job.Config.Epsilon, job.Config.Batch = k, passes, 0, batch
	job.Config.Rule = update.Config{Name: "sgd", LR: 0.3}
	return job
}

// TestDenseRangesMatchLocal trains a dense model whose batches are key
// ranges on clusters of one and three machines, in memory and over TCP:
// the servers apply the BSP sum of the range pushes, so every pass's loss
// equals the single-process reference's up to the order of float
// additions, the loss falls, and the model fits the noiseless data.
func TestDenseRangesMatchLocal(t *testing.T) {
	a := newLinear(240, 12, 7)
	for _, k := range []int{1, 3} {
		for _, net := range []node.Network{nil, node.TCP{}} {
			name := fmt.Sprintf("k%d/mem", k)
			if net != nil {
				name = fmt.Sprintf("k%d/tcp", k)
			}
			t.Run(name, func(t *testing.T) {
				job := linearJob(k, 30, 60)
				want, model, err := train.Local(a, job.Config)
				if err != nil {
					t.Fatal(err)
				}
				res, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, k), deploy.InProcess{Network: net})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.RoundsDetail) != len(want) {
					t.Fatalf("%d passes, Local %d", len(res.RoundsDetail), len(want))
				}
				for i, p := range res.RoundsDetail {
					if d := math.Abs(p.TrainLoss - want[i].TrainLoss); d > 1e-5*want[i].TrainLoss {
						t.Fatalf("pass %d: loss %v, Local %v", i+1, p.TrainLoss, want[i].TrainLoss)
					}
				}
				if want[len(want)-1].TrainLoss > 1e-3*want[0].TrainLoss {
					t.Errorf("the loss fell from %v to %v only", want[0].TrainLoss, want[len(want)-1].TrainLoss)
				}
				var sse float64
				for i, x := range a.X {
					e := dot(model, x) - float64(a.Y[i])
					sse += e * e
				}
				local := math.Sqrt(sse / float64(len(a.X)))
				if d := math.Abs(*res.RMSE - local); d > 1e-4*(1+local) {
					t.Errorf("cluster RMSE %v, Local %v", *res.RMSE, local)
				}
				// Every round pulls and pushes the whole model: the keys
				// of other machines' servers cross the network.
				perRound := int64(2 * (a.Dim - (a.Dim+k-1)/k))
				if k > 1 && res.InterValues != perRound*int64(k)*int64(res.Rounds) {
					t.Errorf("%d values between machines, want %d per machine and round", res.InterValues, perRound)
				}
				if k == 1 && (res.InterValues != 0 || res.BytesInter != 0) {
					t.Errorf("one machine: %d values, %d bytes between machines", res.InterValues, res.BytesInter)
				}
			})
		}
	}
}

// TestKeys checks the two forms of a batch's keys.
func TestKeys(t *testing.T) {
	for _, c := range []struct {
		k    train.Keys
		want []uint64
	}{
		{train.ListKeys([]uint64{2, 5, 9}), []uint64{2, 5, 9}},
		{train.RangeKeys(4, 7), []uint64{4, 5, 6}},
		{train.RangeKeys(3, 3), nil},
		{train.ListKeys([]uint64{}), nil},
	} {
		var got []uint64
		c.k.Each(func(k uint64) { got = append(got, k) })
		if fmt.Sprint(got) != fmt.Sprint(c.want) || c.k.Len() != len(c.want) {
			t.Errorf("%+v: keys %v (len %d), want %v", c.k, got, c.k.Len(), c.want)
		}
	}
}

// TestRunRefusesMismatch: a placement for other machines or other data
// is refused before anything starts.
func TestRunRefusesMismatch(t *testing.T) {
	a := newLinear(30, 4, 1)
	if _, err := train.Run(context.Background(), linearJob(3, 1, 0), a, spread(30, 4, 2), deploy.InProcess{}); err == nil {
		t.Error("a 2-machine placement ran on 3 machines")
	}
	if _, err := train.Run(context.Background(), linearJob(2, 1, 0), a, spread(31, 4, 2), deploy.InProcess{}); err == nil {
		t.Error("a placement of 31 samples ran on 30")
	}
	job := linearJob(2, 1, 0)
	job.Config.Rule.Name = "sum"
	if _, err := train.Run(context.Background(), job, a, spread(30, 4, 2), deploy.InProcess{}); err == nil {
		t.Error("the summing rule trained")
	}
}

func TestConverged(t *testing.T) {
	for _, tc := range []struct {
		prev, loss, eps float64
		want            bool
	}{
		{math.NaN(), 1, 1e-4, false},
		{1, 0.99999, 1e-4, true},
		{1, 0.999, 1e-4, false},
		{1, 1.00001, 1e-4, true},
		{1, 1, 0, false},
	} {
		if got := train.Converged(tc.prev, tc.loss, tc.eps); got != tc.want {
			t.Errorf("Converged(%v, %v, %v) = %v", tc.prev, tc.loss, tc.eps, got)
		}
	}
}

// TestStepBudget: a step budget stops training after its rounds, in the
// middle of a pass, on a cluster as in the single-process loop; the last
// pass counts the samples it trained, and the budget is rounded up to
// whole rounds of the machines.
func TestStepBudget(t *testing.T) {
	a := newLinear(240, 12, 7) // 4 batches of 60 a pass
	for _, c := range []struct {
		k           int
		steps       int64
		rounds      int
		lastSamples int
	}{
		{1, 10, 10, 120},   // two passes and half of the third
		{3, 10, 4, 240},    // 10 steps of 3 machines: 4 rounds, one whole pass
		{3, 17, 6, 120},    // 6 rounds: a pass and two of four batches
		{3, 1000, 20, 240}, // the passes end first
	} {
		job := linearJob(c.k, 5, 60)
		job.Config.MaxSteps = c.steps
		want, _, err := train.Local(a, job.Config)
		if err != nil {
			t.Fatal(err)
		}
		res, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, c.k), deploy.InProcess{})
		if err != nil {
			t.Fatal(err)
		}
		last := res.RoundsDetail[len(res.RoundsDetail)-1]
		if res.Rounds != c.rounds || last.Samples != c.lastSamples || want[len(want)-1].Rounds != c.rounds {
			t.Errorf("k %d, %d steps: %d rounds (Local %d), last pass %d samples; want %d rounds, %d samples",
				c.k, c.steps, res.Rounds, want[len(want)-1].Rounds, last.Samples, c.rounds, c.lastSamples)
		}
		if c.k == 1 && last.TrainLoss != want[len(want)-1].TrainLoss {
			t.Errorf("one machine: last pass's loss %v, Local %v", last.TrainLoss, want[len(want)-1].TrainLoss)
		}
	}
	job := linearJob(1, 5, 60)
	job.Config.MaxSteps = -1
	if err := job.Validate(); err == nil || !strings.Contains(err.Error(), "max_steps -1") {
		t.Errorf("max_steps -1: %v", err)
	}
}

// TestBalancingKeepsBSPTraining: every scheme of the load balancer moves
// keys between the servers while a dense model trains (on a changing
// emulated network), and under BSP the training is the same bit for bit
// as without it; the report has a decision per round, and the schemes
// that use the network move keys.
func TestBalancingKeepsBSPTraining(t *testing.T) {
	a := newLinear(240, 60, 7)
	job := linearJob(4, 6, 40)
	job.Config.RandomBandwidth = 20e6
	want, err := train.Run(context.Background(), job, a, spread(len(a.X), a.Dim, 4), deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	even := &placement.Placement{K: 4, Data: spread(len(a.X), a.Dim, 4).Data, Param: make([]int32, a.Dim)}
	for v := range even.Param {
		even.Param[v] = int32(v * 4 / a.Dim)
	}
	for _, scheme := range balance.Schemes() {
		job := job
		c := balance.DefaultConfig()
		c.Scheme, c.Slice, c.Probe = scheme, 2, 1
		job.Config.Balance = &c
		job.Config.BandwidthChange = 20 * time.Millisecond
		res, err := train.Run(context.Background(), job, a, even, deploy.InProcess{})
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		for i, pass := range res.RoundsDetail {
			if pass.TrainLoss != want.RoundsDetail[i].TrainLoss {
				t.Fatalf("%s: pass %d: loss %v, without balancing %v", scheme, i+1, pass.TrainLoss, want.RoundsDetail[i].TrainLoss)
			}
		}
		if *res.RMSE != *want.RMSE {
			t.Errorf("%s: RMSE %v, without balancing %v", scheme, *res.RMSE, *want.RMSE)
		}
		rep := res.Balance
		if rep == nil || len(rep.Decisions) != res.Rounds {
			t.Fatalf("%s: report %+v for %d rounds", scheme, rep, res.Rounds)
		}
		if (scheme == balance.Aware || scheme == balance.Oracle) && rep.KeysMoved == 0 {
			t.Errorf("%s: no key moved on a heterogeneous network", scheme)
		}
		for _, d := range rep.Decisions {
			var sum uint64
			for _, k := range d.Keys {
				sum += k
			}
			if sum != uint64(a.Dim) {
				t.Fatalf("%s: round %d: keys %v", scheme, d.Round, d.Keys)
			}
		}
	}
}
