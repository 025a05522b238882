package distparsa

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"colo/cluster"
	"colo/graph"
	"colo/partition"
	"colo/placement"
	"colo/ps/proto"
	"colo/ps/worker"
)

func testGraph(t *testing.T, seed uint64, n, m int) *graph.Graph {
	t.Helper()
	g, err := graph.Sparse(graph.SparseConfig{Samples: n, Params: m, Gamma: 0.8, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSetsAgainstMemory pushes random blocks of masks through the sets on
// the parameter server and into partition.MemNeighborSets and checks that
// every pull, |S_i| and |U_i| agree.
func TestSetsAgainstMemory(t *testing.T) {
	for _, k := range []int{3, 64, 70} {
		const m, n = 200, 50
		l := Layout{Params: m, Samples: n, K: k, Workers: 1}
		cc := cluster.DefaultConfig()
		cc.Machines, cc.NumKeys, cc.Width = 1, l.NumKeys(), l.Width()
		ctx := context.Background()
		c, err := cluster.Start(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		mw := partition.MaskWords(k)
		err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
			s, err := NewSets(w, l)
			if err != nil {
				return err
			}
			ref := partition.NewMemNeighborSets(m, k)
			counts := make([]int64, k)
			rng := placement.NewRand(uint64(k))
			for round := range 20 {
				params := make([]uint32, 0, 40)
				for _, v := range rng.Perm(m)[:1+rng.IntN(40)] {
					params = append(params, uint32(v))
				}
				got, want := make([]uint64, len(params)*mw), make([]uint64, len(params)*mw)
				s.Pull(params, got)
				ref.Pull(params, want)
				if !slices.Equal(got, want) {
					t.Errorf("k=%d round %d: pulled %x, want %x", k, round, got, want)
				}
				gs, ws := make([]int64, k), make([]int64, k)
				s.Sizes(gs)
				ref.Sizes(ws)
				gc := make([]int64, k)
				s.Counts(gc)
				if !slices.Equal(gs, ws) || !slices.Equal(gc, counts) {
					t.Errorf("k=%d round %d: sizes %v counts %v, want %v and %v", k, round, gs, gc, ws, counts)
				}
				masks := slices.Clone(got)
				added := make([]int64, k)
				for j := range params {
					for range 2 {
						i := rng.IntN(k)
						masks[j*mw+i/64] |= 1 << (i % 64)
						added[i]++
					}
				}
				s.PushBlock(params, masks, added)
				ref.Push(params, masks)
				for i, a := range added {
					counts[i] += a
				}
			}
			return s.Err()
		})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestOneWorkerIsSequential checks that one worker under BSP (τ = 0)
// gives RunParsa's placement with τ = 0, element by element.
func TestOneWorkerIsSequential(t *testing.T) {
	g := testGraph(t, 3, 1500, 600)
	for _, po := range []partition.ParsaOptions{
		{Init: partition.InitGlobal, Blocks: 6},
		{Init: partition.InitNone, Blocks: 4},
		{Init: partition.InitGlobal, Blocks: 5, GrowBy: partition.GrowParams, Epsilon: 0.05},
		{Init: partition.InitGlobal, Blocks: 3, Refine: 2},
	} {
		opt := partition.Options{K: 7, Seed: 9, Parsa: po}
		want, _, err := partition.RunParsa(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, rep, err := InProcess(context.Background(), g, opt, Config{Workers: 1}, nil)
		if err != nil {
			t.Fatalf("%+v: %v", po, err)
		}
		if !slices.Equal(got.Data, want.Data) || !slices.Equal(got.Param, want.Param) {
			t.Errorf("%+v: one worker differs from the sequential run", po)
		}
		if rep.PerWorker[0].Blocks != rep.Parsa.Blocks {
			t.Errorf("%+v: the worker partitioned %d blocks of %d", po, rep.PerWorker[0].Blocks, rep.Parsa.Blocks)
		}
	}
}

// TestWorkersPlaceEverySampleOnce runs 2 to 4 workers under BSP, bounded
// delay and eventual consistency and checks that every sample is placed
// once, by the worker whose block holds it, within the balance bound; BSP
// runs are checked to be reproducible.
func TestWorkersPlaceEverySampleOnce(t *testing.T) {
	g := testGraph(t, 5, 2000, 800)
	n, k := g.NumSamples(), 6
	for _, w := range []int{2, 3, 4} {
		for _, tau := range []int{0, 1, partition.TauInfinite} {
			opt := partition.Options{K: k, Seed: 2, Parsa: partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 9}}
			p, rep, err := InProcess(context.Background(), g, opt, Config{Workers: w, Tau: tau}, nil)
			if err != nil {
				t.Fatalf("W=%d τ=%d: %v", w, tau, err)
			}
			if err := p.Validate(g); err != nil {
				t.Fatalf("W=%d τ=%d: %v", w, tau, err)
			}
			size := make([]int, k)
			for _, i := range p.Data {
				size[i]++
			}
			if slices.Min(size) < n/k || slices.Max(size) > (n+k-1)/k {
				t.Errorf("W=%d τ=%d: sizes %v, want %d..%d", w, tau, size, n/k, (n+k-1)/k)
			}
			placed := 0
			for r, res := range rep.PerWorker {
				if want := len(Blocks(9, w, r)); res.Blocks != want {
					t.Errorf("W=%d τ=%d: worker %d partitioned %d blocks, want %d", w, tau, r, res.Blocks, want)
				}
				placed += res.Samples
			}
			if placed != n {
				t.Errorf("W=%d τ=%d: the workers partitioned %d samples, want %d", w, tau, placed, n)
			}
			if tau == 0 {
				again, _, err := InProcess(context.Background(), g, opt, Config{Workers: w}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(again.Data, p.Data) || !slices.Equal(again.Param, p.Param) {
					t.Errorf("W=%d: two BSP runs differ", w)
				}
			}
		}
	}
}

// TestDeadWorker stops worker 1's node after its first block: the run
// fails naming it and returns no placement.
func TestDeadWorker(t *testing.T) {
	g := testGraph(t, 7, 1000, 400)
	opt := partition.Options{K: 4, Seed: 1, Parsa: partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 8}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, _, err := inProcess(ctx, g, opt, Config{Workers: 3}, nil, func(c *cluster.Cluster) func(rank, block int) {
		return func(rank, block int) {
			if rank == 1 {
				c.WorkerNode(1).Close()
			}
		}
	})
	if err == nil || p != nil {
		t.Fatalf("placement %v, error %v: want a failure", p != nil, err)
	}
	var ne *proto.NodeError
	if !errors.As(err, &ne) || !(strings.Contains(err.Error(), "worker 1") || strings.Contains(err.Error(), "server 1")) {
		t.Errorf("error %q does not name machine 1 (its worker or its server)", err)
	}
	t.Log(err)
}

// TestConfigValidate checks the bounds of Config.
func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Workers: 0}, {Workers: 2, Tau: -1}, {Workers: 2, Tau: 1 << 30}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}

// TestCountsShareTheDeficit checks the counts a block sees with W
// workers: each partition's distance from the mean divided by W, the
// exact counts in Totals.
func TestCountsShareTheDeficit(t *testing.T) {
	s := &Sets{l: Layout{K: 4, Workers: 3}, counts: []int64{90, 120, 120, 150}}
	got, exact := make([]int64, 4), make([]int64, 4)
	s.Counts(got)
	s.Totals(exact)
	// mean 120: 120 − 30/3, 120, 120, 120 + 30/3.
	if want := []int64{110, 120, 120, 130}; !slices.Equal(got, want) {
		t.Errorf("Counts %v, want %v", got, want)
	}
	if !slices.Equal(exact, s.counts) {
		t.Errorf("Totals %v, want %v", exact, s.counts)
	}
	s.l.Workers = 1
	s.Counts(got)
	if !slices.Equal(got, s.counts) {
		t.Errorf("one worker: Counts %v, want the exact %v", got, s.counts)
	}
}

// TestJobRoundTrip writes a job and reads it back, and checks that a job
// missing its data, output or k is refused.
func TestJobRoundTrip(t *testing.T) {
	j := Job{Data: "g.svm", IndexBase: -1, HashBits: 20, K: 8, Seed: 3, Blocks: 12, Init: "global",
		GlobalFraction: 0.05, Epsilon: 0.05, Config: Config{Workers: 3, Tau: partition.TauInfinite}, Out: "out", Keys: 1000}
	path := filepath.Join(t.TempDir(), "job.json")
	if err := WriteJob(path, j); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != j {
		t.Errorf("read %+v, wrote %+v", got, j)
	}
	for _, bad := range []func(*Job){
		func(j *Job) { j.Data = "" },
		func(j *Job) { j.Out = "" },
		func(j *Job) { j.K = 0 },
		func(j *Job) { j.Init = "sometimes" },
		func(j *Job) { j.Config.Workers = 0 },
		func(j *Job) { j.Keys = 0 },
		func(j *Job) { j.SharedSpill, j.SpillDir = true, "" },
	} {
		b := j
		bad(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
}

// TestIdleWorkers runs more workers than blocks: the workers without a
// block push nothing in every round and the run still places every
// sample.
func TestIdleWorkers(t *testing.T) {
	g := testGraph(t, 9, 300, 100)
	opt := partition.Options{K: 3, Seed: 4, Parsa: partition.ParsaOptions{Init: partition.InitNone, Blocks: 2}}
	p, rep, err := InProcess(context.Background(), g, opt, Config{Workers: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(g); err != nil {
		t.Fatal(err)
	}
	if rep.PerWorker[2].Blocks != 0 || rep.PerWorker[3].Blocks != 0 || rep.PerWorker[0].Samples+rep.PerWorker[1].Samples != g.NumSamples() {
		t.Errorf("per worker %+v", rep.PerWorker)
	}
}

// TestParamsAreSequential checks the distributed Alg. 2: for W workers,
// under each consistency model, the parameters are those that
// partition.AssignParams gives for the run's data placement and the plan's
// seed, exactly, with the same statistics; and every parameter is
// assigned once (Validate). k = 1 and k > 64 (two mask words) included.
func TestParamsAreSequential(t *testing.T) {
	small := testGraph(t, 12, 1200, 500)
	// More parameters than one push of masks carries (maskChunk).
	wide := testGraph(t, 13, 600, maskChunk+2000)
	if wide.NumParams() <= maskChunk {
		t.Fatalf("%d parameters: want more than %d", wide.NumParams(), maskChunk)
	}
	repaired := 0
	for _, tc := range []struct {
		w, tau, k int
		g         *graph.Graph
	}{
		{2, 0, 5, small}, {3, 0, 8, small}, {4, 1, 6, small}, {3, partition.TauInfinite, 4, small},
		{2, 0, 70, small}, {2, 0, 1, small}, {2, 0, 3, wide},
	} {
		g := tc.g
		name := fmt.Sprintf("W=%d τ=%d k=%d m=%d", tc.w, tc.tau, tc.k, g.NumParams())
		opt := partition.Options{K: tc.k, Seed: 6, Parsa: partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 10}}
		cfg := Config{Workers: tc.w, Tau: tc.tau}
		p, rep, err := InProcess(context.Background(), g, opt, cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := p.Validate(g); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pl, err := partition.PlanParsa(g, cfg.PlanOptions(g, opt))
		if err != nil {
			t.Fatal(err)
		}
		want := placement.New(tc.k, g.NumSamples(), g.NumParams())
		copy(want.Data, p.Data)
		st := partition.AssignParams(g, want, pl.ParamSeed)
		if !slices.Equal(p.Param, want.Param) {
			t.Errorf("%s: the distributed assignment differs from AssignParams", name)
		}
		repaired += rep.Parsa.Repaired
		if rep.Parsa.Params != st {
			t.Errorf("%s: statistics %+v, want %+v", name, rep.Parsa.Params, st)
		}
	}
	// The runs with stale views moved samples after the blocks: the
	// workers assigned the parameters from the repaired placement.
	if repaired == 0 {
		t.Errorf("no run repaired its balance: the moves to the owners are not exercised")
	}
	t.Logf("%d samples moved by the repairs", repaired)
}

// TestRunNodeReadsTheFile runs the job of a data file on W machines of a
// cluster in this process, each reading its own blocks of the file
// (RunNode): the placement machine 0 writes is the one the same run on
// the loaded graph gives, and with one machine the sequential Parsa's
// (τ = 0); every machine partitioned its blocks and no other.
func TestRunNodeReadsTheFile(t *testing.T) {
	g0 := testGraph(t, 21, 1800, 700)
	data := filepath.Join(t.TempDir(), "g.svm")
	f, err := os.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.WriteLibSVM(f, g0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g, err := graph.Load(data, graph.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w   int
		tau int
		po  partition.ParsaOptions
	}{
		{1, 0, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 7}},
		{1, 0, partition.ParsaOptions{Init: partition.InitNone, GrowBy: partition.GrowParams, Epsilon: 0.05}},
		{2, 0, partition.ParsaOptions{Init: partition.InitGlobal}},
		{3, 0, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 10}},
		{3, 1, partition.ParsaOptions{Init: partition.InitGlobal, Blocks: 10}},
	} {
		lo := graph.DefaultLoadOptions()
		cfg := Config{Workers: tc.w, Tau: tc.tau}
		job := Job{Data: data, Format: string(lo.Format), IndexBase: lo.IndexBase, HashBits: lo.HashBits, K: 5, Seed: 8,
			Blocks: tc.po.Blocks, Init: string(tc.po.Init), GrowBy: string(tc.po.GrowBy), Epsilon: tc.po.Epsilon,
			Config: cfg, Out: filepath.Join(t.TempDir(), "out"), SpillDir: t.TempDir(), Keys: cfg.Layout(g, 5).NumKeys()}
		results := runNodes(t, job)
		got, err := placement.ReadDir(job.Out, g, 5)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if err := got.Validate(g); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if tc.po.GrowBy != partition.GrowParams {
			size := make([]int, 5)
			for _, i := range got.Data {
				size[i]++
			}
			if n := g.NumSamples(); slices.Min(size) < n/5 || slices.Max(size) > (n+4)/5 {
				t.Errorf("%+v: sizes %v", tc, size)
			}
		}
		// Under BSP the placement does not depend on timing.
		want, _, err := InProcess(context.Background(), g, job.Options(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.tau == 0 && (!slices.Equal(got.Data, want.Data) || !slices.Equal(got.Param, want.Param)) {
			t.Errorf("%+v: the run from the file differs from the run on the loaded graph", tc)
		}
		if tc.w == 1 {
			seq, _, err := partition.RunParsa(g, job.Options())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Data, seq.Data) || !slices.Equal(got.Param, seq.Param) {
				t.Errorf("%+v: one machine differs from the sequential run", tc)
			}
		}
		t.Logf("W=%d τ=%d: %d blocks, %d samples moved by the repair", tc.w, tc.tau, results[0].Stats.Blocks, results[0].Stats.Repaired)
		placed := 0
		for r, res := range results {
			b := results[0].Stats.Blocks
			if want := len(Blocks(b, tc.w, r)); res.Blocks != want {
				t.Errorf("%+v: machine %d partitioned %d blocks, want %d", tc, r, res.Blocks, want)
			}
			if res.File == nil || res.File.Samples != g.NumSamples() {
				t.Errorf("%+v: machine %d: no statistics of its reading of the file", tc, r)
			}
			placed += res.Samples
		}
		if placed != g.NumSamples() {
			t.Errorf("%+v: the machines partitioned %d samples, want %d", tc, placed, g.NumSamples())
		}
	}
}
