package balance

import (
	"fmt"
	"math"
)

// Probe describes the probe slices of §3.2: slices of Size parameters
// that keep every link measured, Num of them for each server.
type Probe struct {
	// Num is num_probe, the probe slices each server is given first (the
	// paper's experiments use 2). 0 turns probing off.
	Num int `json:"num_probe"`
	// Size is size_probe, the size of a probe slice (the paper's
	// experiments use 10 000 parameters). A slice is a probe slice when its
	// size equals Size exactly. It must be > 0 when Num > 0.
	Size float64 `json:"size_probe"`
}

func (p Probe) validate() error {
	if p.Num < 0 {
		return fmt.Errorf("Probe.Num = %d: must be ≥ 0", p.Num)
	}
	if p.Num > 0 && (!(p.Size > 0) || math.IsInf(p.Size, 1)) {
		return fmt.Errorf("Probe.Size = %v: must be finite and > 0", p.Size)
	}
	return nil
}

// Segment cuts M parameters into slices: n·probe.Num probe slices of
// probe.Size first, then slices of granularity x (Eq. 4, see Granularity)
// for the rest, the last one holding the remainder. It returns the sizes,
// paras_j of Alg. 2, which sum to M.
//
// The paper has each worker pick the probe granularity at random with
// probability partition_rate (Eq. 5), chosen so that every server gets at
// least num_probe probe slices; Eq. 5 uses w and n without defining them.
// Segment instead places exactly n·Num probe slices at the front, which
// is what Alg. 2 consumes (it looks probe slices up by size, so their
// place does not matter to it). It runs in O(M/x + n·Num).
func Segment(M, x float64, n int, probe Probe) ([]float64, error) {
	if !(M > 0) || math.IsInf(M, 1) {
		return nil, fmt.Errorf("M = %v: the data size must be finite and > 0", M)
	}
	if !(x > 0) || x > M {
		return nil, fmt.Errorf("x = %v: the slice granularity must be in (0, M = %v]", x, M)
	}
	if n < 1 {
		return nil, fmt.Errorf("n = %d: the number of nodes must be ≥ 1", n)
	}
	if err := probe.validate(); err != nil {
		return nil, err
	}
	probes := n * probe.Num
	rest := M - float64(probes)*probe.Size
	if probes > 0 && rest < 0 {
		return nil, fmt.Errorf("Probe: %d probe slices of %v exceed M = %v", probes, probe.Size, M)
	}
	full := int(math.Floor(rest / x))
	paras := make([]float64, 0, probes+full+1)
	for range probes {
		paras = append(paras, probe.Size)
	}
	for range full {
		paras = append(paras, x)
	}
	// The remainder, unless it is only rounding noise.
	if r := rest - float64(full)*x; r > 1e-12*M {
		paras = append(paras, r)
	}
	return paras, nil
}

// Assign runs Alg. 2 of the paper, the slice assignment: it returns
// assign_j, the server of every slice j, given the target loads m (from
// Solve or Distribute) and the slice sizes paras (from Segment).
//
// First (lines 2–10) each server i in turn takes the next probe.Num
// slices whose size is exactly probe.Size, scanning forward from where
// the previous server stopped, so that even a server with no load keeps
// being measured; probe slices run out silently. Then (lines 11–20) every
// slice not yet assigned, in order, goes to the server with the largest
// remaining load m_i − assigned_i (the first such server on ties).
//
// Every slice is assigned exactly once. Without probe slices beyond a
// server's target, each server ends within one slice of its target:
// |assigned_i − m_i| ≤ max_j paras_j.
//
// m must be finite and ≥ 0 and sum, as paras do, to the same M (up to a
// relative 10⁻⁹). It runs in O(num_slice + N·num_slice), as the paper
// states; m and paras are not modified.
func Assign(m, paras []float64, probe Probe) ([]int, error) {
	if len(m) == 0 {
		return nil, fmt.Errorf("m: no servers")
	}
	if err := probe.validate(); err != nil {
		return nil, err
	}
	var sumM, sumP float64
	for i, v := range m {
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("m[%d] = %v: a load must be finite and ≥ 0", i, v)
		}
		sumM += v
	}
	for j, v := range paras {
		if !(v > 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("paras[%d] = %v: a slice size must be finite and > 0", j, v)
		}
		sumP += v
	}
	if math.Abs(sumM-sumP) > 1e-9*max(sumM, sumP) {
		return nil, fmt.Errorf("m: the loads sum to %v but the slices (paras) to %v", sumM, sumP)
	}

	rem := append([]float64(nil), m...)
	assign := make([]int, len(paras))
	for j := range assign {
		assign[j] = -1
	}
	index := 0
	for i := range rem { // lines 2–10
		for range probe.Num {
			for index < len(paras) && paras[index] != probe.Size {
				index++
			}
			if index >= len(paras) {
				break
			}
			assign[index] = i
			rem[i] -= paras[index]
			index++
		}
	}
	for j, size := range paras { // lines 11–20
		if assign[j] >= 0 {
			continue
		}
		best, receiver := math.Inf(-1), 0
		for i, r := range rem {
			if best < r-size {
				best, receiver = r-size, i
			}
		}
		assign[j] = receiver
		rem[receiver] = best
	}
	return assign, nil
}
