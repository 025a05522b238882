package balance

import (
	"fmt"
	"math"
)

// PaperAlpha is the latency coefficient α of §3.1 that the paper measured
// (β = α/W), in parameters.
const PaperAlpha = 1.2e5

// SliceCost is the synchronisation model of §3.1 on a homogeneous network:
// every one of N workers pushes and pulls M parameters through one server
// over bandwidth W, in slices of granularity x, each slice paying a
// latency β = α/W on top of its transmission, and the round an extra
// synchronisation delay Δt.
type SliceCost struct {
	M     float64 // data size of each worker
	W     float64 // bandwidth, in units of M per unit of time
	N     int     // number of nodes
	Alpha float64 // α, the latency per slice times W
	Delta float64 // Δt, the synchronisation delay
}

// Validate checks that M, W and Alpha are finite and > 0, N ≥ 1 and Delta
// finite and ≥ 0.
func (c SliceCost) Validate() error {
	if err := checkMAlphaN(c.M, c.Alpha, c.N); err != nil {
		return err
	}
	if !(c.W > 0) || math.IsInf(c.W, 1) {
		return fmt.Errorf("W = %v: the bandwidth must be finite and > 0", c.W)
	}
	if !(c.Delta >= 0) || math.IsInf(c.Delta, 1) {
		return fmt.Errorf("Delta = %v: the synchronisation delay must be finite and ≥ 0", c.Delta)
	}
	return nil
}

// Time returns the synchronisation time of Eq. 1 at granularity x > 0:
//
//	T(x) = (x/(W/N) + α/W)·(M/x + 1) + Δt,
//
// the time of one slice (its transmission, the server's bandwidth shared
// by N, plus its latency) times the number of slices M/x plus the one
// that does not overlap (Fig. 1). It treats M/x as a real number.
func (c SliceCost) Time(x float64) float64 {
	n := float64(c.N)
	return (x/(c.W/n)+c.Alpha/c.W)*(c.M/x+1) + c.Delta
}

// Granularity returns the slice granularity of Eq. 4, x = √(M·α/N), the
// minimiser of Eq. 1 over x > 0 (Eq. 3 has the form x + a/x with
// a = M·α/N). Eq. 1 is convex in x, so when √(M·α/N) > M (α > N·M) the
// best granularity that can be cut is a single slice and Granularity
// returns M. W and Δt do not enter, which is why the paper keeps Eq. 4 on
// heterogeneous networks. O(1).
func Granularity(M, alpha float64, n int) (float64, error) {
	if err := checkMAlphaN(M, alpha, n); err != nil {
		return 0, err
	}
	return min(math.Sqrt(M*alpha/float64(n)), M), nil
}

func checkMAlphaN(M, alpha float64, n int) error {
	if !(M > 0) || math.IsInf(M, 1) {
		return fmt.Errorf("M = %v: the data size must be finite and > 0", M)
	}
	if !(alpha > 0) || math.IsInf(alpha, 1) {
		return fmt.Errorf("Alpha = %v: must be finite and > 0", alpha)
	}
	if n < 1 {
		return fmt.Errorf("N = %d: the number of nodes must be ≥ 1", n)
	}
	return nil
}
