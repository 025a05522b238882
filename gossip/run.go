package gossip

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"colo/kv"
	"colo/ps/node"
	"colo/transport"
	"colo/transport/mem"
)

// ErrDiverged is wrapped by the error of a run whose training loss became
// NaN or infinite.
var ErrDiverged = errors.New("the model diverged")

// Learner is the model the workers train: a flat parameter vector and a
// gradient oracle per worker.
type Learner interface {
	// NumParams is the length of the parameter vector.
	NumParams() int
	// Oracle returns worker rank's gradient oracle, used by one goroutine.
	Oracle(rank int) Oracle
}

// Oracle computes gradients on one worker.
type Oracle interface {
	// LossGrad sets grad to the mean gradient of the loss over the
	// samples rows at params and returns the summed loss over them.
	LossGrad(params []float32, rows []int32, grad []float32) float64
}

// WorkerID is the transport node id of worker rank.
func WorkerID(rank int) transport.NodeID { return transport.NodeID(rank + 1) }

// MemNetwork returns an in-memory network for n workers, each on a host
// of its own whose network interface sends and receives at nic bytes per
// second (0: unlimited), as colo train's in-process clusters emulate
// --link-bandwidth: a worker's messages to all its neighbours share it.
func MemNetwork(n int, nic float64, seed uint64) (*mem.Network, error) {
	cfg := mem.DefaultConfig()
	cfg.Seed = seed
	net, err := mem.New(cfg)
	if err != nil {
		return nil, err
	}
	for i := range n {
		if err := net.SetHost(WorkerID(i), i); err != nil {
			return nil, err
		}
		if nic > 0 {
			if err := net.SetNIC(i, nic, nic); err != nil {
				return nil, err
			}
		}
	}
	return net, nil
}

// Point is one point of a loss curve: the mean training loss of the
// samples of the last epoch's worth of iterations (fewer in the first
// epoch), over all workers, at the moment the last worker finished them.
type Point struct {
	Epoch     float64 `json:"epoch"`
	Seconds   float64 `json:"seconds"`
	TrainLoss float64 `json:"train_loss"`
}

// WorkerStats is what one worker did.
type WorkerStats struct {
	Rank int `json:"rank"`
	// Speed is r_i and Slowdown r_max/r_i.
	Speed    float64 `json:"speed"`
	Slowdown float64 `json:"slowdown"`
	// Samples is the size of the worker's shard and Batch its mean batch.
	Samples int     `json:"samples"`
	Batch   float64 `json:"batch"`
	// Processed is the number of samples it trained on over the run.
	Processed int `json:"processed"`
	// ComputeSeconds is the measured time of its gradient steps,
	// SleepSeconds the emulated slowness added after them
	// ((Slowdown−1)·ComputeSeconds, up to timer precision) and
	// CommSeconds the time spent sending to and waiting for neighbours.
	ComputeSeconds float64 `json:"compute_seconds"`
	SleepSeconds   float64 `json:"sleep_seconds"`
	CommSeconds    float64 `json:"comm_seconds"`
	// BytesSent and MsgsSent count the frames it sent while training
	// (transport.Stats).
	BytesSent uint64 `json:"bytes_sent"`
	MsgsSent  uint64 `json:"messages_sent"`
}

// Result is the outcome of Run.
type Result struct {
	Config Config `json:"config"`
	// Algorithm is "d-psgd" or "matcha".
	Algorithm string `json:"algorithm"`
	// Matcha is MATCHA's plan, when used.
	Matcha *Matcha `json:"matcha,omitempty"`
	// IterationsPerEpoch is K = ⌈n/Batch⌉, Rounds the number of
	// averagings.
	IterationsPerEpoch int `json:"iterations_per_epoch"`
	Rounds             int `json:"rounds"`
	// Seconds is the wall-clock time of training, from the moment every
	// endpoint was up to the last worker's last step.
	Seconds float64 `json:"seconds"`
	// Curve is the training loss against time and epochs.
	Curve []Point `json:"curve"`
	// Bytes and Messages count every frame the workers sent.
	Bytes    uint64 `json:"bytes"`
	Messages uint64 `json:"messages"`
	// Emulation describes the speed emulation.
	Emulation string        `json:"speed_emulation"`
	Workers   []WorkerStats `json:"workers"`
	// Model is the average of the workers' final models (Alg. 2's output)
	// and Models the final model of each worker.
	Model  []float32   `json:"-"`
	Models [][]float32 `json:"-"`
}

// EmulationWords documents the speed emulation in results.
const EmulationWords = "a worker of speed r sleeps (r_max/r − 1) × its measured compute time after each step, so each step takes r_max/r times its measured compute time"

// SecondsToTarget returns the time of the first curve point whose loss is
// at most target, and false if the loss never got there.
func (r *Result) SecondsToTarget(target float64) (float64, bool) {
	for _, p := range r.Curve {
		if p.TrainLoss <= target {
			return p.Seconds, true
		}
	}
	return 0, false
}

// FinalLoss returns the training loss of the last curve point.
func (r *Result) FinalLoss() float64 {
	if len(r.Curve) == 0 {
		return 0
	}
	return r.Curve[len(r.Curve)-1].TrainLoss
}

// Protocol constants of the model exchange.
const (
	appGossip uint32 = 0x60551
	cmdModel  uint16 = 1
)

// plan gives the mixing matrix of each averaging round.
type plan struct {
	fixed  Weights
	matcha *Matcha
	seed   uint64
	n      int
}

func (p *plan) weights(round int) Weights {
	if p.matcha == nil {
		return p.fixed
	}
	return p.matcha.Weights(p.n, p.matcha.Active(nil, p.seed, round))
}

// newPlan returns the mixing plan of cfg (validated) and its algorithm's
// name.
func newPlan(cfg Config) (*plan, string, error) {
	pl := &plan{fixed: cfg.Weights, seed: cfg.Seed, n: cfg.Workers}
	if cfg.Weights != nil {
		return pl, "d-psgd", nil
	}
	t, err := New(cfg.Topology, cfg.Workers)
	if err != nil {
		return nil, "", err
	}
	if !cfg.Matcha {
		pl.fixed = MetropolisHastings(t)
		return pl, "d-psgd", nil
	}
	if pl.matcha, err = NewMatcha(t, cfg.Budget); err != nil {
		return nil, "", err
	}
	return pl, "matcha", nil
}

// Run trains learner decentralised (Alg. 2): worker i starts from init,
// trains on the samples shards[i] and, every cfg.LocalSteps iterations,
// exchanges its model with its neighbours over endpoints opened on net
// (node ids WorkerID(i)) and replaces it by the weighted average. Each
// worker is a goroutine; a worker's arithmetic does not depend on timing,
// so a run is deterministic for a fixed seed (the averages sum the models
// in worker order) and only the times vary. The result's Model is the
// average of the final models.
func Run(ctx context.Context, cfg Config, learner Learner, shards [][]int32, init []float32, net node.Network) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Workers
	if len(shards) != n {
		return nil, fmt.Errorf("gossip: %d shards for %d workers", len(shards), n)
	}
	if len(init) != learner.NumParams() {
		return nil, fmt.Errorf("gossip: %d initial parameters, the model has %d", len(init), learner.NumParams())
	}
	total := 0
	for _, s := range shards {
		total += len(s)
	}
	eps := make([]node.Endpoint, n)
	defer func() {
		for _, ep := range eps {
			if ep != nil {
				ep.Close()
			}
		}
	}()
	for i := range eps {
		ep, err := net.Listen(WorkerID(i), nil)
		if err != nil {
			return nil, fmt.Errorf("gossip: worker %d: %w", i, err)
		}
		eps[i] = ep
	}
	for i, a := range eps {
		for j, b := range eps {
			if i != j {
				a.SetPeer(WorkerID(j), b.Addr())
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	reps := make([]*WorkerReport, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if reps[i], errs[i] = RunWorker(ctx, cfg, i, learner.Oracle(i), shards[i], total, init, eps[i], start, nil); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	for i, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("gossip: worker %d: %w", i, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Assemble(cfg, reps, seconds)
}

// WorkerReport is what one worker did: its final model, a record of each
// iteration (summed loss, samples, and when it ended, from the shared
// start) and its counters. A worker process sends it to the process that
// assembles the result.
type WorkerReport struct {
	Rank  int             `json:"rank"`
	Model []float32       `json:"model"`
	Loss  []float64       `json:"loss"`
	Count []int           `json:"count"`
	At    []time.Duration `json:"at_ns"`
	Stats WorkerStats     `json:"stats"`
	// Other are the messages the worker received that were not models of
	// the exchange, in order, for the caller's own protocol.
	Other []*transport.Message `json:"-"`
}

// RunWorker runs worker rank of cfg alone: it trains on rows (of total
// samples over all workers) from init, averaging over ep, whose peers
// (WorkerID of every other rank) are reachable, and times its iterations
// from start. early are messages of the exchange received before it
// started. Run runs one per goroutine; a process per worker runs one.
func RunWorker(ctx context.Context, cfg Config, rank int, oracle Oracle, rows []int32, total int, init []float32, ep transport.Endpoint, start time.Time, early []*transport.Message) (*WorkerReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= cfg.Workers {
		return nil, fmt.Errorf("gossip: rank %d of %d workers", rank, cfg.Workers)
	}
	if total < 1 {
		return nil, errors.New("gossip: no samples to train on")
	}
	pl, _, err := newPlan(cfg)
	if err != nil {
		return nil, err
	}
	K := (total + cfg.Batch - 1) / cfg.Batch
	iters := K * cfg.Epochs
	w := &worker{rank: rank, cfg: &cfg, plan: pl, ep: ep, oracle: oracle, rows: rows,
		slow: slowdown(cfg.Speeds, cfg.Workers)[rank], k: K, x: append([]float32(nil), init...),
		loss: make([]float64, iters), count: make([]int, iters), at: make([]time.Duration, iters),
		held: map[uint64]map[int]*transport.Message{}}
	for _, m := range early {
		if err := w.hold(m, 0); err != nil {
			return nil, err
		}
	}
	before := ep.Stats().Total()
	if err := w.run(ctx, start); err != nil {
		return nil, err
	}
	after := ep.Stats().Total()
	st := transport.LinkStats{BytesSent: after.BytesSent - before.BytesSent, MsgsSent: after.MsgsSent - before.MsgsSent}
	ws := WorkerStats{Rank: rank, Speed: 1, Slowdown: w.slow, Samples: len(rows),
		Batch: float64(len(rows)) / float64(K), ComputeSeconds: w.compute.Seconds(),
		SleepSeconds: w.slept.Seconds(), Processed: w.processed, CommSeconds: w.comm.Seconds(), BytesSent: st.BytesSent, MsgsSent: st.MsgsSent}
	if cfg.Speeds != nil {
		ws.Speed = cfg.Speeds[rank]
	}
	return &WorkerReport{Rank: rank, Model: w.x, Loss: w.loss, Count: w.count, At: w.at, Stats: ws, Other: w.other}, nil
}

// Assemble builds the result of a run from every worker's report:
// the average model, the loss curve and the counters. seconds is the
// run's wall-clock time.
func Assemble(cfg Config, reps []*WorkerReport, seconds float64) (*Result, error) {
	pl, alg, err := newPlan(cfg)
	if err != nil {
		return nil, err
	}
	n := cfg.Workers
	if len(reps) != n {
		return nil, fmt.Errorf("gossip: %d worker reports for %d workers", len(reps), n)
	}
	total := 0
	for i, r := range reps {
		if r == nil || r.Rank != i || len(r.Model) != len(reps[0].Model) {
			return nil, fmt.Errorf("gossip: the report of worker %d is missing or not worker %d's", i, i)
		}
		total += r.Stats.Samples
	}
	K := (total + cfg.Batch - 1) / cfg.Batch
	iters := K * cfg.Epochs
	for i, r := range reps {
		if len(r.Loss) != iters || len(r.Count) != iters || len(r.At) != iters {
			return nil, fmt.Errorf("gossip: worker %d recorded %d iterations, want %d", i, len(r.Loss), iters)
		}
	}
	res := &Result{Config: cfg, Algorithm: alg, Matcha: pl.matcha, Emulation: EmulationWords,
		IterationsPerEpoch: K, Seconds: seconds}
	if n > 1 {
		res.Rounds = iters / cfg.LocalSteps
	}
	// The output model: the average of the workers' models.
	P := len(reps[0].Model)
	acc := make([]float64, P)
	for _, r := range reps {
		res.Models = append(res.Models, r.Model)
		for j, v := range r.Model {
			acc[j] += float64(v)
		}
	}
	res.Model = make([]float32, P)
	for j, v := range acc {
		res.Model[j] = float32(v / float64(n))
	}
	res.Curve = curve(reps, K, iters, cfg.PointsPerEpoch)
	for _, r := range reps {
		res.Bytes += r.Stats.BytesSent
		res.Messages += r.Stats.MsgsSent
		res.Workers = append(res.Workers, r.Stats)
	}
	return res, nil
}

// curve returns PointsPerEpoch points per epoch, at the ends of equal
// slices of its K iterations: each the mean training loss over the
// samples of the last K iterations (one epoch's worth, fewer in the first
// epoch) of all workers, at the time the slowest worker ended the
// point's iteration. The trailing epoch smooths the noise of single
// batches, as a per-epoch training loss does, without waiting for the
// epoch's end.
func curve(reps []*WorkerReport, K, iters, perEpoch int) []Point {
	var out []Point
	for p := 1; p*K <= iters*perEpoch; p++ {
		hi := (p*K + perEpoch/2) / perEpoch // iteration count at the point, rounded
		if hi < 1 || (len(out) > 0 && float64(hi)/float64(K) <= out[len(out)-1].Epoch) {
			continue
		}
		lo := max(0, hi-K)
		var loss float64
		var cnt int
		var at time.Duration
		for _, r := range reps {
			for k := lo; k < hi; k++ {
				loss += r.Loss[k]
				cnt += r.Count[k]
			}
			at = max(at, r.At[hi-1])
		}
		if cnt > 0 {
			out = append(out, Point{Epoch: float64(hi) / float64(K), Seconds: at.Seconds(), TrainLoss: loss / float64(cnt)})
		}
	}
	return out
}

// worker is one worker's state in Run.
type worker struct {
	rank   int
	cfg    *Config
	plan   *plan
	ep     transport.Endpoint
	oracle Oracle
	rows   []int32
	slow   float64
	k      int
	x      []float32
	// loss, count and at record each iteration: summed loss, samples and
	// the time it ended.
	loss  []float64
	count []int
	at    []time.Duration
	// held are models received for rounds not yet reached, by round and
	// sender.
	held                  map[uint64]map[int]*transport.Message
	compute, slept, comm  time.Duration
	debt                  time.Duration
	sendBuf, mixBuf, grad []float32
	processed             int
	other                 []*transport.Message
}

// epochOrder returns the worker's samples in the order of epoch e.
func epochOrder(rows []int32, seed uint64, rank, epoch int) []int32 {
	order := append([]int32(nil), rows...)
	rng := rand.New(rand.NewPCG(seed, uint64(rank)<<32|uint64(epoch)))
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// Batches returns worker rank's batches of epoch e: its samples rows
// shuffled by a stream of seed, rank and epoch and cut into k batches of
// ⌊len/k⌋ or ⌈len/k⌉ samples. Every sample is in exactly one batch.
func Batches(rows []int32, k int, seed uint64, rank, epoch int) [][]int32 {
	order := epochOrder(rows, seed, rank, epoch)
	out := make([][]int32, k)
	for b := range k {
		out[b] = order[b*len(order)/k : (b+1)*len(order)/k]
	}
	return out
}

func (w *worker) run(ctx context.Context, start time.Time) error {
	cfg := w.cfg
	w.grad = make([]float32, len(w.x))
	sched, err := parseDecay(cfg.LRDecay)
	if err != nil {
		return err
	}
	it := 0
	for e := range cfg.Epochs {
		for _, rows := range Batches(w.rows, w.k, cfg.Seed, w.rank, e) {
			rate := sched.rate(cfg.LR, e, it, cfg.Epochs*w.k)
			clear(w.grad)
			if len(rows) > 0 {
				t0 := time.Now()
				w.loss[it] = w.oracle.LossGrad(w.x, rows, w.grad)
				c := time.Since(t0)
				if math.IsNaN(w.loss[it]) || math.IsInf(w.loss[it], 0) {
					return fmt.Errorf("epoch %d, iteration %d: the training loss is %v: %w; lower the learning rate (lr %v)", e+1, it+1, w.loss[it], ErrDiverged, cfg.LR)
				}
				w.compute += c
				if err := w.emulate(ctx, c); err != nil {
					return err
				}
			}
			w.count[it] = len(rows)
			w.processed += len(rows)
			mix := cfg.Workers > 1 && (it+1)%cfg.LocalSteps == 0
			round := uint64((it + 1) / cfg.LocalSteps)
			step := float32(rate)
			if cfg.BatchWeighted {
				step = float32(rate * float64(cfg.Workers*len(rows)) / float64(cfg.Batch))
			}
			if cfg.Order == AdaptThenCombine {
				axpy(w.x, -step, w.grad)
			}
			if mix {
				if err := w.average(ctx, round); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
			}
			if cfg.Order == CombineThenAdapt {
				axpy(w.x, -step, w.grad)
			}
			w.at[it] = time.Since(start)
			it++
		}
		if w.rank == 0 && cfg.Progress != nil {
			cfg.Progress(e + 1)
		}
	}
	return nil
}

// emulate sleeps (slow−1)·c, carrying the timer's error over to the next
// step so that the total slept stays (slow−1)·ΣC.
func (w *worker) emulate(ctx context.Context, c time.Duration) error {
	if w.slow <= 1 {
		return nil
	}
	want := time.Duration(float64(c)*(w.slow-1)) + w.debt
	if want <= 0 {
		w.debt = want
		return nil
	}
	t0 := time.Now()
	t := time.NewTimer(want)
	select {
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-t.C:
	}
	got := time.Since(t0)
	w.slept += got
	w.debt = want - got
	return nil
}

func axpy(x []float32, a float32, y []float32) {
	for i, v := range y {
		x[i] += a * v
	}
}

// average sends the worker's model to the workers whose row of W has a
// weight on it, waits for the models its own row weighs and replaces its
// model by Σ_j W_ij x_j, summed in worker order.
func (w *worker) average(ctx context.Context, round uint64) error {
	t0 := time.Now()
	defer func() { w.comm += time.Since(t0) }()
	W := w.plan.weights(int(round))
	i := w.rank
	w.sendBuf = append(w.sendBuf[:0], w.x...)
	msg := &transport.Message{Header: transport.Header{Type: transport.TypeData, Cmd: cmdModel, App: appGossip, ID: round},
		KV: kv.Batch{Vals: w.sendBuf}}
	for j := range W {
		if j != i && W[j][i] != 0 {
			if err := w.ep.Send(ctx, WorkerID(j), msg); err != nil {
				return err
			}
		}
	}
	held := w.held[round]
	if held == nil {
		held = map[int]*transport.Message{}
	}
	delete(w.held, round)
	need := 0
	for j, v := range W[i] {
		if j != i && v != 0 {
			need++
		}
	}
	for countFrom(held, W[i], i) < need {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case pe, ok := <-w.ep.Down():
			if ok {
				return pe
			}
			return transport.ErrClosed
		case m, ok := <-w.ep.Recv():
			if !ok {
				return transport.ErrClosed
			}
			if err := w.hold(m, round); err != nil {
				return err
			}
			if got := w.held[round]; got != nil {
				maps.Copy(held, got)
				delete(w.held, round)
			}
		}
	}
	if cap(w.mixBuf) < len(w.x) {
		w.mixBuf = make([]float32, len(w.x))
	}
	out := w.mixBuf[:len(w.x)]
	clear(out)
	for j, v := range W[i] {
		if v == 0 {
			continue
		}
		src := w.sendBuf
		if j != i {
			src = held[j].KV.Vals
		}
		axpy(out, float32(v), src)
	}
	w.x, w.mixBuf = out, w.x
	// The neighbours' models go back to the transport's pool: a model a
	// round per neighbour would otherwise be garbage.
	for _, m := range held {
		m.Release()
	}
	return nil
}

// hold keeps the model of an exchange message for its round; now is the
// round the worker is at. Other messages are kept in w.other.
func (w *worker) hold(m *transport.Message, now uint64) error {
	if m.App != appGossip || m.Cmd != cmdModel {
		w.other = append(w.other, m)
		return nil
	}
	from := int(m.Sender) - 1
	if len(m.KV.Vals) != len(w.x) || from < 0 || from >= w.cfg.Workers {
		return fmt.Errorf("node %d sent %d values for round %d: want a worker's %d", m.Sender, len(m.KV.Vals), m.ID, len(w.x))
	}
	if m.ID < now {
		return fmt.Errorf("worker %d sent round %d while this worker is at round %d", from, m.ID, now)
	}
	if w.held[m.ID] == nil {
		w.held[m.ID] = map[int]*transport.Message{}
	}
	w.held[m.ID][from] = m
	return nil
}

// countFrom counts the models in got that row (worker i's weights) needs.
func countFrom(got map[int]*transport.Message, row []float64, i int) int {
	c := 0
	for j := range got {
		if j != i && row[j] != 0 {
			c++
		}
	}
	return c
}
