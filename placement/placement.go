// Package placement is the placement of a training job on k machines and
// the cost model that scores it.
//
// A placement maps each sample u ∈ U to a worker and each parameter v ∈ V
// to a server; worker i and server i share machine i (seed 000 §3.2, seed
// 001 §2.4). With U_i the samples and V_i the parameters of machine i and
// N(U_i) the parameters its worker needs, the cost model of seed 000 §3.4
// and seed 001 Eq. (4), (6), (7) is, per machine i:
//
//	memory    M_i = |N(U_i)|                      (parameters the worker holds)
//	worker    W_i = |N(U_i) \ V_i|                (pulled from other machines)
//	server    S_i = Σ_{j≠i} |V_i ∩ N(U_j)|        (served to other machines)
//	traffic   T_i = W_i + S_i
//
// and in total M_max, T_max, T_sum, max|U_i|, the seed-000 objective
// max|U_i| · T_max of Eq. (3) and the number of machines whose M_i exceeds a
// memory bound θ. Traffic is counted in parameters per round; multiply by
// the bytes of a value for bytes.
//
// Evaluate computes all of it in O(|E| + k·workers) time and O(k) memory per
// goroutine by visiting each parameter once and stamping the machines whose
// workers need it. Baseline gives the mean cost of uniformly random
// placements, the reference that improvements are quoted against.
//
// Part files (ReadDataPart, WriteDir, …) are the exchange format with
// other partitioners: data.part has one line per sample with its machine,
// param.part one line per parameter with its id in the input and machine.
package placement

import (
	"fmt"
	"math/rand/v2"

	"colo/graph"
)

// Placement assigns each sample to a worker and each parameter to a server
// on K machines. Data[u] and Param[v] are machine numbers in [0, K), or
// Unassigned while a partitioner is still working.
type Placement struct {
	K     int
	Data  []int32
	Param []int32
}

// Unassigned marks a sample or parameter without a machine.
const Unassigned = -1

// New returns a placement of n samples and m parameters on k machines with
// nothing assigned.
func New(k, n, m int) *Placement {
	p := &Placement{K: k, Data: make([]int32, n), Param: make([]int32, m)}
	for i := range p.Data {
		p.Data[i] = Unassigned
	}
	for i := range p.Param {
		p.Param[i] = Unassigned
	}
	return p
}

// Clone returns a deep copy.
func (p *Placement) Clone() *Placement {
	return &Placement{K: p.K, Data: append([]int32(nil), p.Data...), Param: append([]int32(nil), p.Param...)}
}

// Validate checks that p places every sample and parameter of g on one of
// its K machines.
func (p *Placement) Validate(g *graph.Graph) error {
	if p.K <= 0 {
		return fmt.Errorf("placement: k = %d: want at least 1 machine", p.K)
	}
	if len(p.Data) != g.NumSamples() {
		return fmt.Errorf("placement: %d sample assignments for %d samples", len(p.Data), g.NumSamples())
	}
	if len(p.Param) != g.NumParams() {
		return fmt.Errorf("placement: %d parameter assignments for %d parameters", len(p.Param), g.NumParams())
	}
	for u, i := range p.Data {
		if i < 0 || int(i) >= p.K {
			return fmt.Errorf("placement: sample %d (id %d) on machine %d: want 0..%d", u, g.SampleID(u), i, p.K-1)
		}
	}
	for v, i := range p.Param {
		if i < 0 || int(i) >= p.K {
			return fmt.Errorf("placement: parameter %d (id %d) on server %d: want 0..%d", v, g.ParamID(v), i, p.K-1)
		}
	}
	return nil
}

// CheckK checks that k machines can hold n samples: 1 ≤ k ≤ n.
func CheckK(k, n int) error {
	switch {
	case k <= 0:
		return fmt.Errorf("k = %d: want at least 1 machine", k)
	case k > n:
		return fmt.Errorf("k = %d: more machines than the %d samples", k, n)
	}
	return nil
}

// Uniform returns a placement of g on k machines where every sample and
// every parameter goes to a machine drawn uniformly at random.
func Uniform(g *graph.Graph, k int, rng *rand.Rand) *Placement {
	p := &Placement{K: k, Data: make([]int32, g.NumSamples()), Param: make([]int32, g.NumParams())}
	for i := range p.Data {
		p.Data[i] = int32(rng.IntN(k))
	}
	for i := range p.Param {
		p.Param[i] = int32(rng.IntN(k))
	}
	return p
}

// NewRand returns the seeded generator colo uses wherever randomness is a
// parameter, so that a seed means the same thing everywhere.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x636f6c6f))
}
