package partition

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"colo/graph"
	"colo/internal/parallel"
	"colo/placement"
)

// bestStarts are the partitioners whose refined placements Best compares:
// Parsa wins on text and graphs, Bisect on data with few popular
// parameters (where it beats Lex: refined, w8a T_max 194 / 198 → 141 /
// 155 at k = 8 / 16, a9a 95 / 104 → 89 / 95), Community with annealing on
// graphs made of communities (ego-Facebook, k = 8 / 16: 809 / 979 →
// 741 / 959). A start runs only on graphs whose parameters have at least
// minParamDegree samples on average and, when maxEdges is set, of at most
// maxEdges edges; anneal sets its Refine.Anneal.
var bestStarts = []struct {
	name           string
	f              Func
	minParamDegree int64
	maxEdges       int64
	anneal         int
}{{"parsa", Parsa, 0, 0, 0}, {"bisect", Bisect, bisectMinParamDegree, 0, 0}, {"community, annealed", Community, 0, communityMaxEdges, communityAnneal}}

// communityMaxEdges is the size up to which Best also refines
// Community's placement with annealing, whose steps cost O(|N(u)|) each:
// 0.1 s on ego-Facebook (176k edges), 3 s on 20 Newsgroups, where it
// did not win (nor on a9a, w8a, soc-Slashdot0902 or email-Enron).
const communityMaxEdges = 1 << 18

// communityAnneal is the number of annealing steps per sample in Best's
// Community start.
const communityAnneal = 100

// bisectMinParamDegree is the mean number of samples per parameter from
// which Best also refines Bisect's placement. Where parameters are rarer
// Parsa's placements were better on every dataset measured (20
// Newsgroups: 27 samples per parameter, ego-Facebook 44, soc-Slashdot0902
// 12; a9a has 3,680, w8a 1,932) and Bisect would cost Best more than its
// other starts (20 Newsgroups, k = 16: 9.3 s against 6.4 s without it).
const bisectMinParamDegree = 256

// bestExtraSeeds is the number of further Parsa placements, from seeds
// opt.Seed+1, opt.Seed+2, …, that Best refines with bestThorough.
const bestExtraSeeds = 2

// bestThorough is the refinement Best applies to its further Parsa
// placements: FM passes that climb further past a local minimum and three
// V-cycles contracting pairs, which on text lower the connectivity (and
// with it T_sum and T_max) by 1–3% beyond the default refinement, at 2–4
// times its cost.
var bestThorough = RefineOptions{VCycles: 3, Patience: 1.0 / 20, Matching: true}

// Best runs Refine from several starting placements and returns the one
// of lowest T_max (R_max after BalanceDirections with
// Options.Directions; with Options.Round the start of lowest R_max is
// also refined by RefineRound, and the candidates compared on R_max
// unless Options.Async), ties to the lower T_sum: Parsa's and (on graphs whose
// parameters are popular, see bisectMinParamDegree) Bisect's placements
// with opt.Refine, on graphs of at most communityMaxEdges edges
// Community's with communityAnneal steps of annealing per sample, and on
// larger graphs bestExtraSeeds more Parsa placements (seeds opt.Seed+1,
// …) refined with bestThorough (its target and bounds taken from
// opt.Refine). Each start costs one partitioner run and one Refine;
// opt applies to all of them. Its progress (opt.Progress) is every
// start's on one fixed total, and opt.Phase names each start as it ends.
//
// The starts run concurrently on up to GOMAXPROCS goroutines, the thorough
// ones first; each depends only on its own options, and they are compared
// (and their reports passed on to opt.Report) in the order above, so the
// result does not depend on the number of goroutines or their scheduling.
// With Options.Round a goroutine left without a start while others still
// run refines ahead of time the start of lowest R_max among those done
// (runAhead), and the refinement is kept if that start is still the one
// to refine once all are done (stopped otherwise): on 20 Newsgroups at
// k = 8 the refinement then runs beside the last start instead of after
// it.
func Best(g *graph.Graph, opt Options) (*placement.Placement, error) {
	return best(g, opt, runtime.GOMAXPROCS(0))
}

// best is Best on the given number of goroutines.
func best(g *graph.Graph, opt Options, workers int) (*placement.Placement, error) {
	type start struct {
		name    string
		f       Func
		o       Options
		p       *placement.Placement
		c       *placement.Cost
		err     error
		reports []report
		dir     DuplexStats // the balance by direction (Options.Directions)
		// With Options.Round: the start before the balance by
		// direction, and its cost.
		pre  *placement.Placement
		preC *placement.Cost
	}
	var starts []*start
	nstarts := 0
	for _, b := range bestStarts {
		if g.NumEdges() < b.minParamDegree*int64(g.NumParams()) || (b.maxEdges > 0 && g.NumEdges() > b.maxEdges) {
			continue
		}
		s := &start{f: b.f, o: opt, name: b.name}
		if b.anneal > 0 {
			s.o.Refine.Anneal = b.anneal
		}
		starts = append(starts, s)
		nstarts++
	}
	// Where the annealed Community start runs (small graphs) it took the
	// place of the thorough starts, which won nowhere beside it
	// (ego-Facebook, criteo_train_first1000, MovieLens 100k).
	extra := uint64(bestExtraSeeds)
	for _, s := range starts {
		if s.o.Refine.Anneal > 0 {
			extra = 0
		}
	}
	for x := uint64(1); x <= extra; x++ {
		o := opt
		o.Seed += x
		o.Refine.VCycles, o.Refine.Patience, o.Refine.Matching = bestThorough.VCycles, bestThorough.Patience, bestThorough.Matching
		starts = append(starts, &start{f: Parsa, o: o, name: fmt.Sprintf("parsa seed %d, thorough", o.Seed)})
	}
	// Progress: each start has an equal share of one total, known from
	// the first report (see shares).
	sh := newShares(len(starts), opt.Progress, opt.Phase)
	for i, s := range starts {
		s.o.Report = nil
		if opt.Report != nil {
			s.o.Report = func(name string, value any) { s.reports = append(s.reports, report{name, value}) }
		}
		s.o.Progress, s.o.Phase = sh.part(i), nil
	}
	index := make(map[*start]int, len(starts))
	for i, s := range starts {
		index[s] = i
	}
	// The memory of the refinements' V-cycles, handed from a start that
	// ended to the next one (see levelMem): on 20 Newsgroups Parsa's
	// start, which runs after a thorough one, then allocates none.
	var memMu sync.Mutex
	var mems []*levelMem
	run := func(s *start) {
		p, err := s.f(g, s.o)
		var c *placement.Cost
		if err == nil {
			memMu.Lock()
			mem := new(levelMem)
			if n := len(mems); n > 0 {
				mem, mems = mems[n-1], mems[:n-1]
			}
			memMu.Unlock()
			p, _, c, err = refine(g, p, s.o, mem)
			memMu.Lock()
			mems = append(mems, mem)
			memMu.Unlock()
		}
		if err == nil && opt.Round {
			s.pre, s.preC = p.Clone(), c
		}
		if err == nil && opt.Directions {
			// For synchronous training: each start balanced by
			// direction, compared on R_max.
			s.dir = balanceDirections(g, p, opt.Seed, 1)
		}
		if err == nil {
			s.c, err = placement.Evaluate(g, p, s.o.Theta)
		}
		s.p, s.err = p, err
		sh.end(index[s], s.name)
	}
	// The annealing and thorough starts cost the most: they go first.
	order := make([]*start, 0, len(starts))
	for _, s := range starts[:nstarts] {
		if s.o.Refine.Anneal > 0 {
			order = append(order, s)
		}
	}
	order = append(order, starts[nstarts:]...)
	for _, s := range starts[:nstarts] {
		if s.o.Refine.Anneal == 0 {
			order = append(order, s)
		}
	}
	rmax := opt.Directions || (opt.Round && !opt.Async)
	better := func(c, than *placement.Cost, rmax bool) bool {
		return than == nil || busiest(c, rmax) < busiest(than, rmax) || (busiest(c, rmax) == busiest(than, rmax) && c.TSum < than.TSum)
	}
	// roundStart is the start of lowest R_max before the balance among
	// those done (all of them at the end), the first in starts' order on
	// a tie; nil if one failed.
	roundStart := func(done []bool) *start {
		var round *start
		for i, s := range starts {
			if !done[i] {
				continue
			}
			if s.err != nil {
				return nil
			}
			if round == nil || better(s.preC, round.preC, true) {
				round = s
			}
		}
		return round
	}
	var ahead []*refinedAhead
	if !opt.Round {
		parallel.For(len(order), workers, func(i int) { run(order[i]) })
	} else {
		ahead = runAhead(len(order), workers, func(i int) { run(order[i]) }, func(i int) int { return index[order[i]] },
			func(done []bool) (int, *placement.Placement, uint64) {
				if s := roundStart(done); s != nil {
					return index[s], s.pre, s.o.Seed
				}
				return -1, nil, 0
			},
			func(p *placement.Placement, seed uint64, stop *atomic.Bool) (*placement.Placement, RoundStats, error) {
				return refineRound(g, p, opt.RoundOpt, seed, stop)
			})
	}
	var bp *placement.Placement
	var bc *placement.Cost
	var bd DuplexStats
	for _, s := range starts {
		if s.err != nil {
			return nil, s.err
		}
		for _, r := range s.reports {
			opt.Report(r.name, r.value)
		}
		if better(s.c, bc, rmax) {
			bp, bc, bd = s.p, s.c, s.dir
		}
	}
	if !opt.Round {
		if opt.Directions && opt.Report != nil {
			opt.Report("directions", bd)
		}
		return bp, nil
	}
	// One more candidate: the start of lowest R_max refined by
	// RefineRound. From the others (R_max 40,104 and 26,706 against
	// 26,512 on 20 Newsgroups, k = 8) it ended higher (23,222 and 21,798
	// against 21,372, with the powers up to 32), at the same cost each.
	all := make([]bool, len(starts))
	for i := range all {
		all[i] = true
	}
	round := roundStart(all)
	var rp *placement.Placement
	var rst RoundStats
	var err error
	for _, a := range ahead {
		if a.start == index[round] && a.err == nil {
			rp, rst = a.p, a.st
		}
	}
	if rp == nil {
		if rp, rst, err = RefineRound(g, round.pre, opt.RoundOpt, round.o.Seed); err != nil {
			return nil, err
		}
	}
	var rd DuplexStats
	if opt.Directions {
		rd = balanceDirections(g, rp, opt.Seed, workers)
	}
	rc, err := placement.Evaluate(g, rp, opt.Theta)
	if err != nil {
		return nil, err
	}
	// RefineRound does not bound the memory: under θ its candidate
	// may not break the bound on more machines than the other.
	took := better(rc, bc, rmax) && rc.OverTheta <= bc.OverTheta
	if took {
		bp, bd = rp, rd
	}
	if opt.Report != nil {
		if opt.Directions {
			opt.Report("directions", bd)
		}
		opt.Report("round", struct {
			Start string `json:"start"`
			RoundStats
			Kept bool `json:"kept"`
		}{round.name, rst, took})
	}
	return bp, nil
}

// RMax is Best with Options.Round: Best's starts, and one more
// candidate, the start of lowest R_max refined by RefineRound (and
// balanced by direction with Options.Directions), compared on R_max, the
// bound of a round of synchronous training (T_max with Options.Async,
// for training that does not wait for rounds), ties to the lower T_sum.
func RMax(g *graph.Graph, opt Options) (*placement.Placement, error) {
	opt.Round = true
	return Best(g, opt)
}

// busiest is the cost Best keeps the lowest of: R_max when the placement
// is for synchronous training (Options.Directions), T_max otherwise.
func busiest(c *placement.Cost, directions bool) int64 {
	if directions {
		return c.RMax
	}
	return c.TMax
}

// report is one call of Options.Report, kept to be passed on later.
type report struct {
	name  string
	value any
}

// refinedAhead is a start refined by RefineRound while others still ran.
type refinedAhead struct {
	start int // the start's index
	stop  atomic.Bool
	p     *placement.Placement
	st    RoundStats
	err   error
}

// runAhead runs run(0), …, run(n−1) on up to workers goroutines, as
// parallel.For does, for Best with Options.Round. A goroutine that finds
// no start left to run while others still run does not stop: it refines
// ahead of time, with refine, the start that choose names among those
// done (its index, placement and seed; index −1 for none), unless that
// one is refined already, and then looks again. Once every start is done,
// the refinements of any start other than choose's over all of them are
// stopped. It returns the refinements, stopped or not, for Best to take
// the one of its chosen start, if any, instead of refining it again:
// refine is a pure function of the start, so the result does not depend
// on what was refined ahead. On 20 Newsgroups at k = 8 the start of
// lowest R_max is among the first two of three, and its refinement runs
// beside the third start instead of after it. startOf maps the i of run
// to the index of its start.
func runAhead(n, workers int, run func(i int), startOf func(i int) int,
	choose func(done []bool) (int, *placement.Placement, uint64),
	refine func(*placement.Placement, uint64, *atomic.Bool) (*placement.Placement, RoundStats, error)) []*refinedAhead {
	var (
		mu      sync.Mutex
		next    int
		running int
		done    = make([]bool, n)
		ahead   []*refinedAhead
		wg      sync.WaitGroup
	)
	// finished marks a start done; with every start done it stops the
	// refinements of the others than the chosen one.
	finished := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		done[startOf(i)] = true
		running--
		if running > 0 || next < n {
			return
		}
		chosen, _, _ := choose(done)
		for _, a := range ahead {
			if a.start != chosen {
				a.stop.Store(true)
			}
		}
	}
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for {
				mu.Lock()
				if next < n {
					i := next
					next++
					running++
					mu.Unlock()
					run(i)
					finished(i)
					continue
				}
				var a *refinedAhead
				var p *placement.Placement
				var seed uint64
				if running > 0 {
					var chosen int
					chosen, p, seed = choose(done)
					a = &refinedAhead{start: chosen}
					for _, b := range ahead {
						if b.start == chosen {
							a = nil
						}
					}
					if chosen < 0 {
						a = nil
					}
				}
				if a == nil {
					mu.Unlock()
					return
				}
				ahead = append(ahead, a)
				mu.Unlock()
				a.p, a.st, a.err = refine(p, seed, &a.stop)
			}
		})
	}
	wg.Wait()
	return ahead
}
