package embed

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

	"colo/graph"
	"colo/placement"
	"colo/train"
	"colo/train/deploy"
)

// communities returns the edges of a planted-partition graph: groups of
// size nodes, an edge inside a group with probability pin, between
// groups with pout, drawn from seed.
func communities(groups, size int, pin, pout float64, seed uint64) []Pair {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := groups * size
	var pairs []Pair
	for u := range n {
		for v := u + 1; v < n; v++ {
			p := pout
			if u/size == v/size {
				p = pin
			}
			if rng.Float64() < p {
				pairs = append(pairs, Pair{uint64(u), uint64(v)})
			}
		}
	}
	return pairs
}

// newApp builds an App on pairs with a fraction holdOut held out.
func newApp(t testing.TB, pairs []Pair, cfg Config) *App {
	t.Helper()
	tr, held := Split(pairs, cfg.HoldOut, cfg.Seed)
	g, err := EdgeGraph(tr, "train")
	if err != nil {
		t.Fatal(err)
	}
	test, err := EdgeGraph(held, "held")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(g, test, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLossGradCentralDifferences checks LossGrad's gradient against
// central differences of its loss, on edges that share nodes, each with
// negatives of its own, one of them an end of the edge (skipped for that
// edge) and one drawn twice.
func TestLossGradCentralDifferences(t *testing.T) {
	for _, d := range []int{5, 16} { // 16: the vector kernels, where the processor has them
		lossGradCentralDifferences(t, d)
	}
}

func lossGradCentralDifferences(t *testing.T, d int) {
	const keys = 6
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, keys*d)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	pos := []int32{0, 1, 1, 2, 3, 4}
	neg := []int32{5, 2, 5, 0, 3, 2, 0, 4, 5, 1, 1, 2}
	const m, scale = 4, 0.7
	grad := make([]float32, len(vals))
	loss := LossGrad(vals, d, pos, neg, m, grad, scale)
	if !(loss > 0) {
		t.Fatalf("loss %v, want positive", loss)
	}
	lossAt := func(v []float32) float64 {
		return LossGrad(v, d, pos, neg, m, make([]float32, len(v)), scale)
	}
	for i := range vals {
		want := scale * central(lossAt, vals, i)
		if math.Abs(float64(grad[i])-want) > 2e-3*(1+math.Abs(want)) {
			t.Errorf("gradient of value %d (key %d): %v, central differences %v", i, i/d, grad[i], want)
		}
	}
	// The negatives of an edge that are its own ends are skipped: with
	// only such negatives, the loss is the positive pair's alone.
	g2 := make([]float32, len(vals))
	got := LossGrad(vals, d, []int32{0, 1}, []int32{0, 1}, 2, g2, 1)
	if want := math.Log1p(math.Exp(-dot(vals[0:d], vals[d:2*d]))); math.Abs(got-want) > 1e-9 {
		t.Errorf("loss with negatives equal to the ends: %v, want the positive pair's %v", got, want)
	}
}

// TestLossByHand checks LossGrad on vectors small enough to do by hand:
// e_0 = (1, 0), e_1 = (1, 0), e_2 = (0, 1); edge 0–1, negative 2: scores
// 1 for the edge and 0 on both sides.
func TestLossByHand(t *testing.T) {
	vals := []float32{1, 0, 1, 0, 0, 1}
	grad := make([]float32, 6)
	loss := LossGrad(vals, 2, []int32{0, 1}, []int32{2}, 1, grad, 1)
	want := math.Log1p(math.Exp(-1)) + 0.5*(2*math.Log(2))
	if math.Abs(loss-want) > 1e-9 {
		t.Errorf("loss %v, want %v", loss, want)
	}
	// ∂/∂e_0 = (σ(1)−1)·e_1 + ½σ(0)·e_2 = (σ(1)−1, ¼), the same for e_1
	// by symmetry, and ∂/∂e_2 = ½σ(0)·e_0 + ½σ(0)·e_1 = (½, 0).
	s1 := 1 / (1 + math.Exp(-1))
	wantGrad := []float64{s1 - 1, 0.25, s1 - 1, 0.25, 0.5, 0}
	for i, g := range grad {
		if math.Abs(float64(g)-wantGrad[i]) > 1e-6 {
			t.Errorf("grad[%d] = %v, want %v", i, g, wantGrad[i])
		}
	}
}

// TestScoreByHand ranks held-out edges at embeddings whose scores are
// known: equal vectors tie with every negative (MRR 1/(1 + M/2), AUC ½);
// orthogonal groups put every true link first (MRR 1, AUC 1) against
// negatives from the other group.
func TestScoreByHand(t *testing.T) {
	a := &App{Config: DefaultConfig(), Held: [][2]uint32{{0, 1}, {2, 3}}}
	a.Config.Dim, a.Config.EvalNegatives = 2, 50
	a.Graph, _ = EdgeGraph([]Pair{{0, 1}, {2, 3}, {4, 5}}, "hand")
	same := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	ev := a.Score(same)
	if ev.MRR == nil || ev.AUC == nil || ev.Samples != 2 {
		t.Fatalf("eval %+v: want MRR and AUC of 2 edges", ev)
	}
	if *ev.AUC != 0.5 {
		t.Errorf("AUC %v with every score tied, want 0.5", *ev.AUC)
	}
	// Every side ties with all its negatives but those equal to u or v;
	// the rank is 1 + (negatives kept)/2.
	if !(*ev.MRR > 1/(1+25.0) && *ev.MRR < 1/(1+10.0)) {
		t.Errorf("MRR %v with every score tied, want about 1/26", *ev.MRR)
	}
	// Nodes 0–3 along x, 4–5 along y: each held-out edge scores 1,
	// every negative outside 0–3 scores 0, those inside score 1 (ties).
	a.Held = [][2]uint32{{0, 1}}
	orth := []float32{1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1}
	ev = a.Score(orth)
	if *ev.AUC != 1 || *ev.MRR != 1 {
		t.Errorf("MRR %v, AUC %v for separated groups, want 1 and 1", *ev.MRR, *ev.AUC)
	}
	a.Held = nil
	if ev := a.Score(orth); ev.MRR != nil || ev.AUC != nil {
		t.Errorf("eval without held-out edges %+v, want no measure", ev)
	}
}

// TestPairsAndSplit reads an edge list with a reciprocal edge, a
// repeated one and a self-loop, and splits a larger graph: every edge in
// exactly one of the two sets, every held-out node trained on, the split
// the same for the same seed.
func TestPairsAndSplit(t *testing.T) {
	g, err := graph.Read(strings.NewReader("# c\n1 2\n2 1\n3 3\n7 3\n1 2\n"), "small", graph.LoadOptions{Format: graph.FormatSNAP, IndexBase: -1, HashBits: 20})
	if err != nil {
		t.Fatal(err)
	}
	pairs, loops := Pairs(g)
	if want := []Pair{{1, 2}, {3, 7}}; !slices.Equal(pairs, want) || loops != 1 {
		t.Errorf("pairs %v, %d self-loops; want %v, 1", pairs, loops, want)
	}
	all := communities(4, 20, 0.4, 0.02, 5)
	tr, held := Split(all, 0.2, 9)
	tr2, held2 := Split(all, 0.2, 9)
	if !slices.Equal(tr, tr2) || !slices.Equal(held, held2) {
		t.Error("two splits with the same seed differ")
	}
	if len(tr)+len(held) != len(all) {
		t.Fatalf("%d + %d edges after the split, want %d", len(tr), len(held), len(all))
	}
	if f := float64(len(held)) / float64(len(all)); f < 0.12 || f > 0.28 {
		t.Errorf("held out %.3f of the edges, want about 0.2", f)
	}
	in := map[Pair]int{}
	nodes := map[uint64]bool{}
	for _, p := range tr {
		in[p]++
		nodes[p.U], nodes[p.V] = true, true
	}
	for _, p := range held {
		in[p]++
		if !nodes[p.U] || !nodes[p.V] {
			t.Errorf("held-out edge %v has a node without a training edge", p)
		}
	}
	for _, p := range all {
		if in[p] != 1 {
			t.Errorf("edge %v is in %d of the sets, want 1", p, in[p])
		}
	}
	if tr3, held3 := Split(all, 0, 9); len(held3) != 0 || len(tr3) != len(all) {
		t.Errorf("holdout 0: %d held out, want none", len(held3))
	}
}

// TestEveryEdgeOncePerPass cuts the edges of three machines into batches
// and checks that a pass trains every edge exactly once, that a round's
// keys are the nodes of its batch's edges and, with uniform negatives,
// at most U other nodes, and that Step draws its batch negatives among
// the batch's nodes and its uniform ones among the round's keys.
func TestEveryEdgeOncePerPass(t *testing.T) {
	for _, c := range [][2]int{{10, 0}, {10, 6}, {0, 6}} {
		t.Run(fmt.Sprintf("%d batch and %d uniform negatives", c[0], c[1]), func(t *testing.T) { everyEdgeOncePerPass(t, c[0], c[1]) })
	}
}

func everyEdgeOncePerPass(t *testing.T, k, u int) {
	cfg := DefaultConfig()
	cfg.Dim, cfg.Negatives, cfg.UniformNegatives, cfg.UniformPool = 3, k, u, 2*u
	a := newApp(t, communities(3, 15, 0.5, 0.05, 2), cfg)
	p := placement.Uniform(a.Graph, 3, placement.NewRand(4))
	seen := make([]int, a.NumSamples())
	extras := 0
	for rank := range 3 {
		pt := a.Part(rank, train.Shard(p, rank), 4, 1).(*part)
		if pt.Batches() != 4 {
			t.Fatalf("machine %d: %d batches, want 4", rank, pt.Batches())
		}
		for b, bt := range pt.batches {
			var nodes []uint64
			for _, e := range bt.Rows {
				seen[e]++
				if p.Data[e] != int32(rank) {
					t.Errorf("edge %d on machine %d, placed on %d", e, rank, p.Data[e])
				}
				for _, v := range a.Graph.Params(int(e)) {
					nodes = append(nodes, uint64(v))
				}
			}
			slices.Sort(nodes)
			nodes = slices.Compact(nodes)
			keys := pt.Keys(b).List
			if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
				t.Fatalf("machine %d batch %d: keys %v, want a sorted list without repeats", rank, b, keys)
			}
			var extra []uint64
			for _, k := range keys {
				if _, ok := slices.BinarySearch(nodes, k); !ok {
					extra = append(extra, k)
				}
			}
			if len(keys)-len(extra) != len(nodes) || len(extra) > cfg.UniformPool {
				t.Errorf("machine %d batch %d: keys %v; want the nodes of its edges %v and at most %d others", rank, b, keys, nodes, cfg.UniformPool)
			}
			extras += len(extra)
			n := len(keys) * cfg.Dim
			pt.Step(b, make([]float32, n), make([]float32, n), 1)
			m := k + u
			if len(pt.neg) != bt.Len()*m {
				t.Fatalf("machine %d batch %d: %d negatives, want %d edges × (%d + %d)", rank, b, len(pt.neg), bt.Len(), k, u)
			}
			rd := pt.round(pt.stepped-1, b)
			for i, x := range pt.neg {
				if x < 0 || int(x) >= len(keys) {
					t.Fatalf("machine %d batch %d: negative at position %d of %d keys", rank, b, x, len(keys))
				}
				if _, ok := slices.BinarySearch(nodes, keys[x]); i%m < k && !ok {
					t.Errorf("machine %d batch %d: batch negative %d is not a node of the batch", rank, b, keys[x])
				}
				if i%m >= k && !slices.Contains(rd.pool, x) {
					t.Errorf("machine %d batch %d: uniform negative %d is not in the round's pool", rank, b, keys[x])
				}
			}
			if m > 1 && bt.Len() > 1 && slices.Equal(pt.neg[:m], pt.neg[m:2*m]) {
				t.Errorf("machine %d batch %d: the first two edges have the same negatives %v", rank, b, pt.neg[:m])
			}
			for i := range bt.Pos {
				if keys[rd.pos[i]] != bt.Keys[bt.Pos[i]] {
					t.Fatalf("machine %d batch %d: end %d of the edges is key %d in the batch, not in the round", rank, b, i, bt.Keys[bt.Pos[i]])
				}
			}
		}
	}
	for e, n := range seen {
		if n != 1 {
			t.Errorf("edge %d trained %d times in a pass, want once", e, n)
		}
	}
	if u > 0 && extras == 0 {
		t.Error("no round pulled a node outside its batch: the uniform negatives are not uniform")
	}
}

// TestRoundCentralDifferences checks the gradient of a round with batch
// and uniform negatives, uniform ones outside the batch among them,
// against central differences of its loss, on both kernel paths.
func TestRoundCentralDifferences(t *testing.T) {
	for _, d := range []int{5, 16} {
		cfg := DefaultConfig()
		cfg.Dim, cfg.Negatives, cfg.UniformNegatives, cfg.UniformPool = d, 3, 4, 6
		a := newApp(t, communities(3, 10, 0.4, 0.05, 8), cfg)
		p := placement.Uniform(a.Graph, 1, placement.NewRand(1))
		pt := a.Part(0, train.Shard(p, 0), a.NumSamples()/3, 5).(*part)
		// A round whose uniform negatives fall outside the batch.
		var rd *round
		for r := range 50 {
			if rd = pt.round(r, r%pt.Batches()); len(rd.keys) > len(pt.batches[rd.b].Keys) {
				break
			}
		}
		if len(rd.keys) == len(pt.batches[rd.b].Keys) {
			t.Fatal("no round in 50 with a uniform negative outside its batch")
		}
		rng := rand.New(rand.NewPCG(3, 4))
		vals := make([]float32, len(rd.keys)*d)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * 0.5)
		}
		const scale = 0.7
		grad := make([]float32, len(vals))
		pt.lossGrad(rd, vals, grad, scale)
		lossAt := func(v []float32) float64 { return pt.lossGrad(rd, v, make([]float32, len(v)), scale) }
		outside := 0.0
		for i := range vals {
			want := scale * central(lossAt, vals, i)
			if math.Abs(float64(grad[i])-want) > 2e-3*(1+math.Abs(want)) {
				t.Errorf("d = %d: gradient of value %d (key %d): %v, central differences %v", d, i, i/d, grad[i], want)
			}
			if _, in := slices.BinarySearch(pt.batches[rd.b].Keys, rd.keys[i/d]); !in {
				outside += math.Abs(float64(grad[i]))
			}
		}
		if outside == 0 {
			t.Errorf("d = %d: the uniform negatives outside the batch have no gradient", d)
		}
	}
}

// TestRoundsDeterministic: a round's keys, negatives and gradient are
// the same whether the next round's keys were asked for before its step
// (Loop's pull ahead) or after, and a part restored from another's
// checkpoint state goes on as the other does.
func TestRoundsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dim, cfg.Negatives, cfg.UniformNegatives, cfg.UniformPool = 4, 3, 5, 7
	a := newApp(t, communities(3, 12, 0.4, 0.05, 3), cfg)
	p := placement.Uniform(a.Graph, 2, placement.NewRand(2))
	rows := train.Shard(p, 1)
	type out struct {
		keys []uint64
		grad []float32
		loss float64
	}
	step := func(pt *part, b int, keys []uint64) out {
		vals := make([]float32, len(keys)*cfg.Dim)
		for i := range vals {
			vals[i] = float32(i%7) * 0.1
		}
		grad := make([]float32, len(vals))
		l, _, _ := pt.Step(b, vals, grad, 1)
		return out{keys, grad, l}
	}
	const rounds = 9
	var seq, ahead []out
	s1 := a.Part(1, rows, 3, 7).(*part)
	for r := range rounds {
		b := r % 3
		seq = append(seq, step(s1, b, s1.Keys(b).List))
	}
	s2 := a.Part(1, rows, 3, 7).(*part)
	next := s2.Keys(0).List
	for r := range rounds {
		cur := next
		if r+1 < rounds {
			next = s2.Keys((r + 1) % 3).List
		}
		ahead = append(ahead, step(s2, r%3, cur))
	}
	for r := range rounds {
		if !slices.Equal(seq[r].keys, ahead[r].keys) || !slices.Equal(seq[r].grad, ahead[r].grad) || seq[r].loss != ahead[r].loss {
			t.Fatalf("round %d: keys, gradient or loss differ with the keys asked for ahead", r)
		}
	}
	if slices.Equal(seq[0].keys, seq[3].keys) {
		t.Errorf("batch 0 pulls the same keys in passes 1 and 2 (%v): the uniform negatives are not drawn anew", seq[0].keys)
	}
	// A part restored at round 4 goes on as s1 did from round 4.
	s3 := a.Part(1, rows, 3, 7).(*part)
	s3.stepped = 4
	state, err := s3.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s4 := a.Part(1, rows, 3, 7).(*part)
	s4.Keys(0)
	if err := s4.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	for r := 4; r < rounds; r++ {
		got := step(s4, r%3, s4.Keys(r%3).List)
		if !slices.Equal(got.keys, seq[r].keys) || !slices.Equal(got.grad, seq[r].grad) || got.loss != seq[r].loss {
			t.Fatalf("restored at round 4: round %d differs from the uninterrupted part's", r)
		}
	}
	if err := s4.UnmarshalBinary([]byte{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "3 bytes") {
		t.Errorf("a state of 3 bytes: err = %v", err)
	}
}

// TestOneMachineMatchesLocal trains on a one-machine cluster and with
// train.Local, without and with uniform negatives: the same part,
// negatives and updates in the same order, so the losses of every pass
// and the held-out ranking are equal bit for bit.
func TestOneMachineMatchesLocal(t *testing.T) {
	for _, u := range []int{0, 5} {
		t.Run(fmt.Sprint("uniform ", u), func(t *testing.T) { oneMachineMatchesLocal(t, u) })
	}
}

func oneMachineMatchesLocal(t *testing.T, u int) {
	cfg := DefaultConfig()
	cfg.Dim, cfg.Negatives, cfg.UniformNegatives, cfg.UniformPool, cfg.HoldOut, cfg.EvalNegatives = 8, 4, u, 2*u, 0.1, 20
	a := newApp(t, communities(4, 12, 0.5, 0.03, 11), cfg)
	job := train.DefaultJob()
	if err := Defaults(&job); err != nil {
		t.Fatal(err)
	}
	tc := job.Config
	tc.Machines, tc.Batch, tc.MaxPasses = 1, 40, 4
	passes, model, err := train.Local(a, tc)
	if err != nil {
		t.Fatal(err)
	}
	want := a.ScoreModel(model)
	p := placement.Uniform(a.Graph, 1, placement.NewRand(1))
	job.App, job.Data.Train, job.Placement, job.Config = "embed", "communities", "uniform", tc
	res, err := train.Run(context.Background(), job, a, p, deploy.InProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RoundsDetail) != len(passes) {
		t.Fatalf("cluster: %d passes, Local %d", len(res.RoundsDetail), len(passes))
	}
	for i, q := range passes {
		got := res.RoundsDetail[i]
		if got.TrainLoss != q.TrainLoss || got.Rounds != q.Rounds || got.Samples != q.Samples {
			t.Errorf("pass %d: cluster loss %v after %d rounds of %d edges, Local %v after %d of %d",
				i+1, got.TrainLoss, got.Rounds, got.Samples, q.TrainLoss, q.Rounds, q.Samples)
		}
	}
	if passes[len(passes)-1].TrainLoss >= passes[0].TrainLoss {
		t.Errorf("the training loss did not fall: %v", passes)
	}
	if res.MRR == nil || *res.MRR != *want.MRR || *res.AUC != *want.AUC || res.Samples != want.Samples {
		t.Errorf("cluster eval %v/%v on %d edges, Local %v/%v on %d", res.MRR, res.AUC, res.Samples, *want.MRR, *want.AUC, want.Samples)
	}
}

// TestClusterDeterministic trains three machines under BSP twice with
// uniform negatives: the runs' losses and held-out figures are equal bit
// for bit, and differ from a run with another seed.
func TestClusterDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dim, cfg.Negatives, cfg.UniformNegatives, cfg.UniformPool, cfg.HoldOut, cfg.EvalNegatives = 8, 4, 6, 9, 0.1, 20
	a := newApp(t, communities(4, 12, 0.5, 0.03, 11), cfg)
	p := placement.Uniform(a.Graph, 3, placement.NewRand(1))
	run := func(seed uint64) *train.Result {
		job := train.DefaultJob()
		if err := Defaults(&job); err != nil {
			t.Fatal(err)
		}
		job.App, job.Data.Train, job.Placement = "embed", "communities", "uniform"
		job.Config.Machines, job.Config.Batch, job.Config.MaxPasses, job.Config.Seed = 3, 60, 3, seed
		res, err := train.Run(context.Background(), job, a, p, deploy.InProcess{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1, r2, r3 := run(1), run(1), run(2)
	losses := func(r *train.Result) []float64 {
		var l []float64
		for _, q := range r.RoundsDetail {
			l = append(l, q.TrainLoss)
		}
		return l
	}
	if !slices.Equal(losses(r1), losses(r2)) || *r1.MRR != *r2.MRR || *r1.AUC != *r2.AUC {
		t.Errorf("two runs with seed 1: losses %v and %v, MRR %v and %v", losses(r1), losses(r2), *r1.MRR, *r2.MRR)
	}
	if slices.Equal(losses(r1), losses(r3)) {
		t.Errorf("seeds 1 and 2 give the same losses %v", losses(r1))
	}
}

// TestLearnsCommunities trains on a planted-partition graph (4 groups of
// 25 nodes, links inside a group with probability 0.4, between groups
// 0.01) and checks that held-out links rank far above chance (AUC ½,
// MRR about 0.05 against 100 negatives). A quarter of the uniform
// negatives share the held-out edge's group and are as likely a link, so
// the best achievable AUC is about 7/8 and MRR about 1/13.
func TestLearnsCommunities(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dim, cfg.HoldOut = 8, 0.1
	a := newApp(t, communities(4, 25, 0.4, 0.01, 21), cfg)
	job := train.DefaultJob()
	if err := Defaults(&job); err != nil {
		t.Fatal(err)
	}
	tc := job.Config
	tc.Batch, tc.MaxPasses = 100, 10
	_, model, err := train.Local(a, tc)
	if err != nil {
		t.Fatal(err)
	}
	ev := a.ScoreModel(model)
	t.Logf("%d held-out edges: MRR %.3f, AUC %.3f", ev.Samples, *ev.MRR, *ev.AUC)
	if *ev.AUC < 0.75 || *ev.MRR < 0.1 {
		t.Errorf("held-out MRR %.3f, AUC %.3f: want above 0.1 and 0.75", *ev.MRR, *ev.AUC)
	}
}

// writeFile writes content to a file of dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadInput checks that bad options and files are errors that name
// the option or the file (and line), never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.txt", "0 1\n1 2\n2 0\n2 3\n")
	job := func(trainFile, testFile string, mod func(*Config)) train.Job {
		j := defaultJob(t)
		j.Data.Train, j.Data.Test = trainFile, testFile
		c := DefaultConfig()
		if mod != nil {
			mod(&c)
		}
		if err := j.SetOptions(c); err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, tc := range []struct {
		name string
		job  train.Job
		want string
	}{
		{"dimension 0", job(good, "", func(c *Config) { c.Dim = 0 }), "dim 0 (--dim)"},
		{"no negatives", job(good, "", func(c *Config) { c.Negatives, c.UniformNegatives = 0, 0 }), "negatives 0 and uniform_negatives 0"},
		{"negatives below 0", job(good, "", func(c *Config) { c.Negatives = -2 }), "negatives -2 (--negatives): want 0..65536"},
		{"uniform negatives below 0", job(good, "", func(c *Config) { c.UniformNegatives = -1 }), "uniform_negatives -1 (--uniform-negatives): want 0..65536"},
		{"too many uniform negatives", job(good, "", func(c *Config) { c.UniformNegatives = 1 << 17 }), "uniform_negatives 131072"},
		{"pool below 0", job(good, "", func(c *Config) { c.UniformPool = -1 }), "uniform_pool -1 (--uniform-pool): want 0..16777216"},
		{"uniform negatives without a pool", job(good, "", func(c *Config) { c.UniformNegatives, c.UniformPool = 3, 0 }), "uniform_negatives 3 with uniform_pool 0"},
		{"a pool without uniform negatives", job(good, "", func(c *Config) { c.Negatives, c.UniformNegatives, c.UniformPool = 1, 0, 5 }), "uniform_pool 5 with uniform_negatives 0"},
		{"holdout 1", job(good, "", func(c *Config) { c.HoldOut = 1 }), "holdout 1 (--holdout)"},
		{"self-loops only", job(writeFile(t, dir, "loops.txt", "# loops\n4 4\n5 5\n"), "", nil), "loops.txt has no edges"},
		{"empty", job(writeFile(t, dir, "empty.txt", "# nothing\n"), "", nil), "empty.txt"},
		{"negative id", job(writeFile(t, dir, "neg.txt", "0 1\n-3 4\n"), "", nil), "neg.txt:2"},
		{"id past 64 bits", job(writeFile(t, dir, "big.txt", "0 1\n1 99999999999999999999\n"), "", nil), "big.txt:2"},
		{"three fields", job(writeFile(t, dir, "three.txt", "0 1 2\n"), "", nil), "three.txt:1"},
		{"test node out of range", job(good, writeFile(t, dir, "test.txt", "0 1\n1 9\n"), nil), "node 9 is not a node of the training graph"},
		{"missing file", job(filepath.Join(dir, "none.txt"), "", nil), "none.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, test, err := Load(tc.job)
			if err == nil {
				_, err = Open(tc.job, g, test)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one that says %q", err, tc.want)
			}
		})
	}
	j := job(good, "", nil)
	j.Data.Load.Format = "libsvm"
	if _, _, err := Load(j); err == nil || !strings.Contains(err.Error(), "want snap") {
		t.Errorf("libsvm format: err = %v, want one that asks for snap", err)
	}
	j = job(good, "", nil)
	j.Config.Rule.L2 = 0.1
	g, test, err := Load(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(j, g, test); err == nil || !strings.Contains(err.Error(), "rule.l2") {
		t.Errorf("L2 penalty: err = %v, want one naming rule.l2", err)
	}
	if _, err := New(g, nil, Config{Dim: 0, Negatives: 1, EvalNegatives: 1}); err == nil {
		t.Error("New with dim 0: no error")
	}
	noEdges, err := EdgeGraph(nil, "nothing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(noEdges, nil, DefaultConfig()); err == nil || !strings.Contains(err.Error(), "nothing has no edges") {
		t.Errorf("graph without edges: err = %v", err)
	}
}

// defaultJob returns the engine's default job with the
// application's defaults.
func defaultJob(t *testing.T) train.Job {
	t.Helper()
	j := train.DefaultJob()
	j.App = "embed"
	if err := Defaults(&j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestEgoFacebook trains ego-Facebook in one process for a few passes
// and checks that held-out links rank far above chance.
func TestEgoFacebook(t *testing.T) {
	const path = "../../../shared/data/ego-Facebook/facebook_combined.txt.gz"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("ego-Facebook not found beside the repository: %v", err)
	}
	if testing.Short() {
		t.Skip("short")
	}
	j := defaultJob(t)
	j.Data.Train = path
	g, test, err := Load(j)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(j, g, test)
	if err != nil {
		t.Fatal(err)
	}
	if a.NumKeys() != 4039 || a.NumSamples()+len(a.Held) != 88234 {
		t.Fatalf("%d nodes and %d+%d edges, want 4,039 and 88,234", a.NumKeys(), a.NumSamples(), len(a.Held))
	}
	tc := j.Config
	tc.MaxPasses = 3
	passes, model, err := train.Local(a, tc)
	if err != nil {
		t.Fatal(err)
	}
	ev := a.ScoreModel(model)
	t.Logf("%s: loss %.4f → %.4f, held-out MRR %.3f AUC %.3f on %d edges", fmt.Sprint(len(passes), " passes"),
		passes[0].TrainLoss, passes[len(passes)-1].TrainLoss, *ev.MRR, *ev.AUC, ev.Samples)
	if *ev.AUC < 0.9 || *ev.MRR < 0.2 {
		t.Errorf("held-out MRR %.3f, AUC %.3f: want above 0.2 and 0.9", *ev.MRR, *ev.AUC)
	}
}

// central returns the derivative of loss in vals[i] by central
// differences with a step of 0.01.
func central(loss func([]float32) float64, vals []float32, i int) float64 {
	const h = 1e-2
	up, down := slices.Clone(vals), slices.Clone(vals)
	up[i] += h
	down[i] -= h
	return (loss(up) - loss(down)) / (2 * h)
}
