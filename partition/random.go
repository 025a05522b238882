package partition

import (
	"colo/graph"
	"colo/placement"
)

// Random places g on opt.K machines at random. Parameters go to uniformly
// random servers. Samples go to uniformly random workers, or, with
// opt.Balanced, are dealt in a random order so that |U_i| ≤ ⌈n/k⌉.
func Random(g *graph.Graph, opt Options) (*placement.Placement, error) {
	if err := opt.Validate(g.NumSamples()); err != nil {
		return nil, err
	}
	rng := placement.NewRand(opt.Seed)
	p := placement.Uniform(g, opt.K, rng)
	if opt.Balanced {
		for rank, u := range rng.Perm(g.NumSamples()) {
			p.Data[u] = int32(rank % opt.K)
		}
	}
	return p, nil
}
