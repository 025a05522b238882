package partition

import (
	"colo/graph"
	"colo/placement"
)

// Lex places g on opt.K machines by sorting the samples by their
// parameters, rarest first, and cutting the sorted list into K runs of
// ⌊n/k⌋ or ⌈n/k⌉ samples; then the parameters by opt.ParamAlgo.
//
// Each sample's key is its parameters ranked by how few samples use them,
// sorted; keys compare lexicographically, so the samples that share a
// rare parameter are consecutive and land on one or two machines, and
// common parameters, needed everywhere anyway, only order what is left.
// It takes O(|E| log |E|) time. On datasets with few parameters each used
// by many samples (a9a, w8a) it needs far fewer parameters to cross than
// the greedy algorithms, whose partitions all grow at once and so all end
// up needing every parameter; it is a good start for Refine there
// (lex+refine). It reports nothing and ignores opt.Progress.
func Lex(g *graph.Graph, opt Options) (*placement.Placement, error) {
	n, k := g.NumSamples(), opt.K
	if err := opt.Validate(n); err != nil {
		return nil, err
	}
	p := placement.New(k, n, g.NumParams())
	for x, u := range rarityOrder(finest(g), nil) {
		p.Data[u] = int32(int64(x) * int64(k) / int64(n))
	}
	if _, err := AssignParamsWith(g, p, opt.ParamAlgo, opt.Seed); err != nil {
		return nil, err
	}
	return p, nil
}
