package partition

import (
	"colo/graph"
	"colo/placement"
)

// bestStarts are the partitioners whose refined placements Best compares:
// Parsa wins on text and graphs, Lex on data with few popular parameters.
var bestStarts = []Func{Parsa, Lex}

// Best runs Refine from several starting placements (Parsa's and Lex's)
// and returns the one of lowest T_max, ties to the lower T_sum. Each
// start costs one partitioner run and one Refine; opt applies to all of
// them. It reports nothing of its own.
func Best(g *graph.Graph, opt Options) (*placement.Placement, error) {
	var best *placement.Placement
	var bc *placement.Cost
	for _, f := range bestStarts {
		p, err := f(g, opt)
		if err != nil {
			return nil, err
		}
		if p, _, err = Refine(g, p, opt); err != nil {
			return nil, err
		}
		c, err := placement.Evaluate(g, p, opt.Theta)
		if err != nil {
			return nil, err
		}
		if best == nil || c.TMax < bc.TMax || (c.TMax == bc.TMax && c.TSum < bc.TSum) {
			best, bc = p, c
		}
	}
	return best, nil
}
