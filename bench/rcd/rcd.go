// Package rcd is the comparison of seed 003 §3 (RCD-SGD): decentralised
// training on workers of unequal speed, D-PSGD and MATCHA on random equal
// shards with equal batches and F = 1, against RCD-SGD — the same
// algorithms on ratio-constrained submodular shards (facility location
// and graph cut, Alg. 1) with batches proportional to the workers' speeds
// and F = 2 local steps between averagings (Alg. 2).
//
// Every variant trains Runs times (run r with seed Seed+r: initial
// parameters, batch order, MATCHA's draws), run r of every variant before
// run r+1 of any, so that a change in the machine's load falls on all
// alike; the shards of a variant are computed once with Seed and shared
// by its runs. For each variant Run
// reports the wall-clock seconds until the training loss (the mean loss
// of the samples of a tenth of an epoch over all workers) first reaches
// Target (seed 003: log loss −1, loss e^−1), the test accuracy of the
// average model after the last epoch, the bytes the workers sent in
// total and per epoch, mean and standard deviation over the runs with
// every run's values, and the mean loss curves against time and epochs.
//
// Worker speeds are emulated (gossip.EmulationWords): the measured
// compute time of a step is stretched by r_max/r by sleeping. On equal
// shards every worker's batch is Batch/N, so the slowest worker's steps
// take r_max/r_min times longer than the fastest's and everyone waits for
// it at each averaging; on ratio shards the batches follow the speeds and
// every worker's step takes about the same emulated time.
//
//	cfg := rcd.DefaultConfig()
//	cfg.Gossip.Speeds = []float64{1, 2, 4, 8}
//	res, err := rcd.Run(ctx, cfg, data) // data: job.Load(j)
//	rcd.WriteTable(os.Stdout, res)
package rcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"

	"colo/gossip"
	"colo/gossip/job"
	"colo/internal/atomicfile"
	"colo/shard"
)

// Variant is one algorithm on one sharding.
type Variant struct {
	// Algorithm is "d-psgd" or "matcha".
	Algorithm string `json:"algorithm"`
	// Shard is a job.ShardSpec's scheme ("random", or "submodular" with
	// Function).
	Shard job.ShardSpec `json:"-"`
	// LocalSteps is F.
	LocalSteps int `json:"local_steps"`
}

// Name returns "d-psgd/random F=1".
func (v Variant) Name() string {
	return fmt.Sprintf("%s/%s F=%d", v.Algorithm, v.Shard.Name(), v.LocalSteps)
}

// DefaultVariants returns seed 003's six: D-PSGD and MATCHA on random
// shards with F = 1, and each on facility-location and graph-cut ratio
// shards with F = localSteps (RCD-SGD).
func DefaultVariants(localSteps int) []Variant {
	out, _ := Variants([]string{"d-psgd", "matcha"}, localSteps)
	return out
}

// Variants returns the three rows of each named algorithm ("d-psgd",
// "matcha"), in the order given: on random shards with F = 1, and on
// facility-location and graph-cut ratio shards with F = localSteps.
func Variants(algorithms []string, localSteps int) ([]Variant, error) {
	var out []Variant
	seen := map[string]bool{}
	for _, alg := range algorithms {
		if alg != "d-psgd" && alg != "matcha" {
			return nil, fmt.Errorf("algorithm %q: want d-psgd or matcha", alg)
		}
		if seen[alg] {
			return nil, fmt.Errorf("algorithm %s named twice", alg)
		}
		seen[alg] = true
		out = append(out, Variant{Algorithm: alg, Shard: job.ShardSpec{Scheme: "random"}, LocalSteps: 1})
		for _, f := range []shard.Function{shard.FacilityLocation, shard.GraphCut} {
			out = append(out, Variant{Algorithm: alg, Shard: job.ShardSpec{Scheme: "submodular", Function: f}, LocalSteps: localSteps})
		}
	}
	return out, nil
}

// Config is the comparison's settings.
type Config struct {
	// Gossip is the base configuration: workers, topology, speeds, batch,
	// epochs, learning rate, order, seed. Each variant sets LocalSteps
	// and Matcha.
	Gossip gossip.Config
	// Budget is MATCHA's c_b.
	Budget float64
	// Variants are the rows, the first the baseline of the speed-ups.
	Variants []Variant
	// Runs is the number of trainings per variant.
	Runs int
	// Target is the training loss whose first crossing is timed; 0
	// derives it once every run has trained: the highest of the runs'
	// lowest training losses, a loss every run reached (DerivedTarget),
	// so that no row of the comparison is empty.
	Target float64
	// Net is the emulated network.
	Net job.Net
	// Progress, when set, is called after each run; Diverged after each
	// run that diverged (it is recorded, and the comparison goes on).
	Progress func(v Variant, run int, rep *job.Report)
	Diverged func(v Variant, run int, err error)
}

// DefaultConfig returns 4 workers of speeds 1:2:4:8 on a ring, the
// six default variants with F = 2 for RCD-SGD, c_b = 0.5, 5 runs, the
// target e^−1 and 1 Gbit/s network interfaces.
func DefaultConfig() Config {
	g := gossip.DefaultConfig()
	g.Speeds = []float64{1, 2, 4, 8}
	return Config{Gossip: g, Budget: 0.5, Variants: DefaultVariants(2), Runs: 5, Target: math.Exp(-1), Net: job.Net{Link: 125e6}}
}

// Validate checks c; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.Runs < 1:
		return fmt.Errorf("runs %d: want at least 1", c.Runs)
	case !(c.Target >= 0) || math.IsInf(c.Target, 0):
		return fmt.Errorf("target %v: want a training loss > 0, or 0 to derive it from the runs", c.Target)
	case len(c.Variants) == 0:
		return fmt.Errorf("variants: none")
	}
	for _, v := range c.Variants {
		g := c.variant(v, 0)
		if v.Algorithm != "d-psgd" && v.Algorithm != "matcha" {
			return fmt.Errorf("variant %s: algorithm %q: want d-psgd or matcha", v.Name(), v.Algorithm)
		}
		if err := g.Validate(); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name(), err)
		}
	}
	return nil
}

// variant returns the gossip configuration of run r of v.
func (c Config) variant(v Variant, r int) gossip.Config {
	g := c.Gossip
	g.LocalSteps, g.Matcha, g.Seed = v.LocalSteps, v.Algorithm == "matcha", c.Gossip.Seed+uint64(r)
	if g.Matcha {
		g.Budget = c.Budget
	}
	return g
}

// RunResult is one training of a variant.
type RunResult struct {
	Seed uint64 `json:"seed"`
	// Diverged is set when the training loss became NaN or infinite
	// (gossip.ErrDiverged); the run then has no other figures and the
	// row's means leave it out.
	Diverged bool `json:"diverged,omitempty"`
	// SecondsToTarget is nil when the loss never reached the target.
	SecondsToTarget *float64 `json:"seconds_to_target"`
	EpochsToTarget  *float64 `json:"epochs_to_target"`
	TestAccuracy    float64  `json:"test_accuracy"`
	TestLoss        float64  `json:"test_log_loss"`
	FinalTrainLoss  float64  `json:"final_train_loss"`
	Seconds         float64  `json:"seconds"`
	Bytes           uint64   `json:"bytes"`
	BytesPerEpoch   float64  `json:"bytes_per_epoch"`
	// Workers are the per-worker figures: speed, batch, compute, sleep
	// and communication seconds.
	Workers []gossip.WorkerStats `json:"workers"`
	Curve   []gossip.Point       `json:"curve"`
}

// Stat is a mean and standard deviation over runs.
type Stat struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// Row is one variant's summary over its runs.
type Row struct {
	Algorithm  string `json:"algorithm"`
	Shard      string `json:"shard"`
	LocalSteps int    `json:"local_steps"`
	// Batches is "equal" or "proportional" (to the speeds).
	Batches string `json:"batches"`
	// SecondsToTarget is the mean over the runs that reached the target
	// (Reached of Runs), nil if none did.
	SecondsToTarget *float64 `json:"seconds_to_target"`
	SecondsStd      float64  `json:"seconds_to_target_std"`
	Reached         int      `json:"reached"`
	// Diverged counts the runs whose loss became NaN or infinite; the
	// means are over the others.
	Diverged       int     `json:"diverged"`
	TestAccuracy   float64 `json:"test_accuracy"`
	AccuracyStd    float64 `json:"test_accuracy_std"`
	Bytes          float64 `json:"bytes"`
	BytesPerEpoch  float64 `json:"bytes_per_epoch"`
	FinalTrainLoss float64 `json:"final_train_loss"`
	// ShardSeconds is the time sharding took (once for the rows that
	// share the shards).
	ShardSeconds float64 `json:"shard_seconds"`
	// Matcha is MATCHA's plan (probabilities, α) when used.
	Matcha *gossip.Matcha `json:"matcha,omitempty"`
	Runs   []RunResult    `json:"runs"`
	// curve is the mean curve over the runs.
	curve []gossip.Point
}

// Result is the whole comparison.
type Result struct {
	Config Config `json:"-"`
	// Dataset names the data (the caller's).
	Dataset  string    `json:"dataset,omitempty"`
	Workers  int       `json:"workers"`
	Speeds   []float64 `json:"worker_speeds"`
	Topology string    `json:"topology"`
	Batch    int       `json:"batch"`
	Epochs   int       `json:"epochs"`
	LR       float64   `json:"lr"`
	// LRDecay and BatchWeighted are gossip.Config's.
	LRDecay       string  `json:"lr_decay,omitempty"`
	BatchWeighted bool    `json:"batch_weighted,omitempty"`
	Budget        float64 `json:"budget"`
	Target        float64 `json:"target"`
	// TargetFrom says where Target came from when it was derived.
	TargetFrom string  `json:"target_from,omitempty"`
	Link       float64 `json:"link_bytes_per_s"`
	Emulation  string  `json:"speed_emulation"`
	Rows       []Row   `json:"rows"`
}

// Run trains every variant Runs times on data.
func Run(ctx context.Context, cfg Config, data *job.Data) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := cfg.Gossip
	res := &Result{Config: cfg, Workers: g.Workers, Speeds: g.Speeds, Topology: g.Topology, Batch: g.Batch, Epochs: g.Epochs,
		LR: g.LR, LRDecay: g.LRDecay, BatchWeighted: g.BatchWeighted, Budget: cfg.Budget, Target: cfg.Target, Link: cfg.Net.Link, Emulation: gossip.EmulationWords}
	cache := map[string][][]int32{}
	cacheSecs := map[string]float64{}
	rows := make([]Row, len(cfg.Variants))
	shardsOf := make([][][]int32, len(cfg.Variants))
	for i, v := range cfg.Variants {
		name := v.Shard.Name()
		shards, ok := cache[name]
		if !ok {
			var secs float64
			var err error
			if shards, secs, err = data.Shards(v.Shard, g, g.Seed); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			cache[name], cacheSecs[name] = shards, secs
		}
		shardsOf[i], rows[i].ShardSeconds = shards, cacheSecs[name]
		rows[i].Algorithm, rows[i].Shard, rows[i].LocalSteps, rows[i].Batches = v.Algorithm, name, v.LocalSteps, "equal"
		if v.Shard.Scheme == string(shard.SchemeSubmodular) && g.Speeds != nil {
			rows[i].Batches = "proportional"
		}
	}
	// Run r of every variant, then run r+1: a change of the machine's
	// load during the comparison falls on every variant alike.
	for r := range cfg.Runs {
		for i, v := range cfg.Variants {
			gc := cfg.variant(v, r)
			rep, err := data.Train(ctx, gc, shardsOf[i], cfg.Net)
			if errors.Is(err, gossip.ErrDiverged) && ctx.Err() == nil {
				rows[i].Runs = append(rows[i].Runs, RunResult{Seed: gc.Seed, Diverged: true})
				if cfg.Diverged != nil {
					cfg.Diverged(v, r+1, err)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", v.Name(), r+1, err)
			}
			rr := RunResult{Seed: gc.Seed, TestAccuracy: *rep.Eval.Accuracy, TestLoss: *rep.Eval.LogLoss, FinalTrainLoss: rep.FinalLoss(),
				Seconds: rep.Seconds, Bytes: rep.Bytes, BytesPerEpoch: float64(rep.Bytes) / float64(gc.Epochs), Workers: rep.Workers, Curve: rep.Curve}
			rows[i].Matcha = rep.Matcha
			rows[i].Runs = append(rows[i].Runs, rr)
			if cfg.Progress != nil {
				cfg.Progress(v, r+1, rep)
			}
		}
	}
	if res.Target == 0 {
		res.Target, res.TargetFrom = DerivedTarget(rows), TargetFromWords
	}
	for i := range rows {
		for j := range rows[i].Runs {
			rows[i].Runs[j].reach(res.Target)
		}
		summarise(&rows[i])
	}
	res.Rows = rows
	return res, nil
}

// TargetFromWords says how DerivedTarget chooses.
const TargetFromWords = "derived: the highest of the runs' lowest training losses, which every run reached"

// DerivedTarget returns the highest of the runs' lowest training losses
// (over the points of their curves; diverged runs and non-finite losses
// left out): a loss every run reached, whose first crossing times every
// row. It is 0 when no run has a finite loss.
func DerivedTarget(rows []Row) float64 {
	target := 0.0
	for _, row := range rows {
		for _, r := range row.Runs {
			low := math.Inf(1)
			for _, p := range r.Curve {
				if !math.IsNaN(p.TrainLoss) && p.TrainLoss < low {
					low = p.TrainLoss
				}
			}
			if !r.Diverged && !math.IsInf(low, 0) {
				target = max(target, low)
			}
		}
	}
	return target
}

// reach records when r's training loss first reached target.
func (r *RunResult) reach(target float64) {
	r.SecondsToTarget, r.EpochsToTarget = nil, nil
	for _, p := range r.Curve {
		if p.TrainLoss <= target {
			s, e := p.Seconds, p.Epoch
			r.SecondsToTarget, r.EpochsToTarget = &s, &e
			return
		}
	}
}

// summarise fills a row's means from its runs.
func summarise(row *Row) {
	var secs, acc, bytes, bpe, loss []float64
	var runs []RunResult // those that did not diverge
	for _, r := range row.Runs {
		if r.Diverged {
			row.Diverged++
			continue
		}
		runs = append(runs, r)
		if r.SecondsToTarget != nil {
			secs = append(secs, *r.SecondsToTarget)
		}
		acc = append(acc, r.TestAccuracy)
		bytes = append(bytes, float64(r.Bytes))
		bpe = append(bpe, r.BytesPerEpoch)
		loss = append(loss, r.FinalTrainLoss)
	}
	row.Reached = len(secs)
	if len(secs) > 0 {
		m, s := meanStd(secs)
		row.SecondsToTarget, row.SecondsStd = &m, s
	}
	row.TestAccuracy, row.AccuracyStd = meanStd(acc)
	row.Bytes, _ = meanStd(bytes)
	row.BytesPerEpoch, _ = meanStd(bpe)
	row.FinalTrainLoss, _ = meanStd(loss)
	// The mean curve: the runs share their points' epochs.
	if len(runs) == 0 {
		return
	}
	n := len(runs[0].Curve)
	for _, r := range runs {
		n = min(n, len(r.Curve))
	}
	for k := range n {
		var p gossip.Point
		for _, r := range runs {
			p.Epoch = r.Curve[k].Epoch
			p.Seconds += r.Curve[k].Seconds / float64(len(runs))
			p.TrainLoss += r.Curve[k].TrainLoss / float64(len(runs))
		}
		row.curve = append(row.curve, p)
	}
}

// meanStd returns the mean and the sample standard deviation.
func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// WriteTable prints one line per variant: seconds to the target (mean ±
// std, runs that reached it), the speed-up over the first variant, test
// accuracy, final training loss, and megabytes per epoch.
func WriteTable(w io.Writer, res *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "algorithm\tshard\tF\tbatches\ts to target\treached\tvs first\ttest acc %\tfinal loss\tMB/epoch")
	base := res.Rows[0].SecondsToTarget
	for _, r := range res.Rows {
		secs, vs := "never", "-"
		if r.SecondsToTarget != nil {
			secs = fmt.Sprintf("%.2f ± %.2f", *r.SecondsToTarget, r.SecondsStd)
			if base != nil {
				vs = fmt.Sprintf("%+.0f%%", 100*(*r.SecondsToTarget / *base - 1))
			}
		}
		reached := fmt.Sprintf("%d/%d", r.Reached, len(r.Runs))
		if r.Diverged > 0 {
			reached += fmt.Sprintf(" (%d diverged)", r.Diverged)
		}
		acc, loss, mb := fmt.Sprintf("%.2f ± %.2f", 100*r.TestAccuracy, 100*r.AccuracyStd), fmt.Sprintf("%.4f", r.FinalTrainLoss), fmt.Sprintf("%.1f", r.BytesPerEpoch/1e6)
		if r.Diverged == len(r.Runs) {
			acc, loss, mb = "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Algorithm, r.Shard, r.LocalSteps, r.Batches,
			secs, reached, vs, acc, loss, mb)
	}
	return tw.Flush()
}

// Files are what WriteDir writes.
var Files = []string{"rcd.json", "loss_vs_time.svg", "loss_vs_epoch.svg", "loss_vs_time.png", "loss_vs_epoch.png"}

// WriteJSON writes the result as indented JSON.
func WriteJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteDir writes rcd.json and the two loss plots into dir, each plot as
// SVG and PNG.
func WriteDir(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, Files[0]), func(w io.Writer) error { return WriteJSON(w, res) }); err != nil {
		return err
	}
	series := make([]Series, len(res.Rows))
	for i, r := range res.Rows {
		series[i] = Series{Name: fmt.Sprintf("%s/%s F=%d", r.Algorithm, r.Shard, r.LocalSteps), Curve: r.curve}
	}
	if err := Figure(res.Title(), series, false, res.Target).Save(filepath.Join(dir, Files[1])); err != nil {
		return err
	}
	return Figure(res.Title(), series, true, res.Target).Save(filepath.Join(dir, Files[2]))
}
