package partition

import (
	"colo/graph"
	"colo/placement"
)

// RandomRows is the row-wise sharding of TorchRec and of most embedding
// servers, as a baseline: the samples are dealt to opt.K machines in a
// random order (|U_i| ≤ ⌈n/k⌉, as Random with opt.Balanced), and the
// parameters (an embedding table's rows, in the order of their ids) are
// cut into K contiguous ranges of equal size (sizes differing by at most
// one), range i on machine i. Nothing is placed by co-access. It takes
// O(n + m) time.
func RandomRows(g *graph.Graph, opt Options) (*placement.Placement, error) {
	if err := opt.Validate(g.NumSamples()); err != nil {
		return nil, err
	}
	rng := placement.NewRand(opt.Seed)
	n, m, k := g.NumSamples(), g.NumParams(), opt.K
	p := &placement.Placement{K: k, Data: make([]int32, n), Param: make([]int32, m)}
	for rank, u := range rng.Perm(n) {
		p.Data[u] = int32(rank % k)
	}
	for v := range m {
		p.Param[v] = int32(int64(v) * int64(k) / int64(m))
	}
	return p, nil
}
