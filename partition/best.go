package partition

import (
	"colo/graph"
	"colo/placement"
)

// bestStarts are the partitioners whose refined placements Best compares:
// Parsa wins on text and graphs, Bisect on data with few popular
// parameters (where it beats Lex: refined, w8a T_max 194 / 198 → 141 /
// 155 at k = 8 / 16, a9a 95 / 104 → 89 / 95).
var bestStarts = []Func{Parsa, Bisect}

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
// of lowest T_max, ties to the lower T_sum: Parsa's and Bisect's placements
// with opt.Refine, then bestExtraSeeds more Parsa placements (seeds
// opt.Seed+1, …) refined with bestThorough (its target and bounds taken
// from opt.Refine). Each start costs one partitioner run and one Refine;
// opt applies to all of them. It reports nothing of its own.
func Best(g *graph.Graph, opt Options) (*placement.Placement, error) {
	var best *placement.Placement
	var bc *placement.Cost
	try := func(f Func, o Options) error {
		p, err := f(g, o)
		if err != nil {
			return err
		}
		if p, _, err = Refine(g, p, o); err != nil {
			return err
		}
		c, err := placement.Evaluate(g, p, o.Theta)
		if err != nil {
			return err
		}
		if best == nil || c.TMax < bc.TMax || (c.TMax == bc.TMax && c.TSum < bc.TSum) {
			best, bc = p, c
		}
		return nil
	}
	for _, f := range bestStarts {
		if err := try(f, opt); err != nil {
			return nil, err
		}
	}
	for x := uint64(1); x <= bestExtraSeeds; x++ {
		o := opt
		o.Seed += x
		o.Refine.VCycles, o.Refine.Patience, o.Refine.Matching = bestThorough.VCycles, bestThorough.Patience, bestThorough.Matching
		if err := try(Parsa, o); err != nil {
			return nil, err
		}
	}
	return best, nil
}
