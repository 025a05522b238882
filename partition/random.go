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

// AssignParams assigns every parameter of g to a server given the data
// partition in p, overwriting p.Param. Each parameter goes to a machine
// drawn uniformly at random.
func AssignParams(g *graph.Graph, p *placement.Placement, seed uint64) {
	rng := placement.NewRand(seed)
	for v := range p.Param {
		p.Param[v] = int32(rng.IntN(p.K))
	}
}
