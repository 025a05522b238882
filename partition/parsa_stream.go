package partition

import (
	"fmt"
	"slices"
)

// ParsaStream is a Parsa run over blocks whose rows the caller supplies
// one at a time, in the order of the run's jobs: what an out-of-core run
// (package partition/ooc) drives while it reads each block from disk. One
// thread, τ = 0: each block is partitioned by Alg. 3 of seed 001 against
// the neighbour sets and the counts |U_i| left by every block before it,
// so that the blocks and the global sample of RunParsa's plan, given in
// its order, give exactly RunParsa's placement. It holds the neighbour
// sets, the machine masks C_v of the samples placed (MaskWords(k) words
// per parameter), the counts and one block: O(m·k/64 + block) memory,
// whatever |E|. It is not safe for concurrent use.
type ParsaStream struct {
	r      *runner
	blk    *block
	lo, hi []int64
	used   []uint64 // the masks C_v
}

// NewParsaStream returns a run over n samples and m parameters with
// opt (its Parsa options with the defaults of ParsaOptions.WithDefaults
// filled in). total is the number of sample assignments the run will make,
// initialisation included, which the progress callback opt.Progress is
// told beside the count so far.
func NewParsaStream(opt Options, n, m int, total int64) *ParsaStream {
	po := opt.Parsa.WithDefaults()
	k := opt.K
	counts := make([]int64, k)
	lo, hi := sizeBounds(counts, n, po)
	r := &runner{k: k, m: m, sets: po.NewSets(m, k), counts: counts, po: po, total: total,
		progress: opt.Progress, limit: slices.Min(hi)}
	blk := newBlock(k, m)
	blk.tick = r.tick
	return &ParsaStream{r: r, blk: blk, lo: lo, hi: hi, used: make([]uint64, m*MaskWords(k))}
}

// Global runs the global initialisation (seed 001 §4.4) on the rows of
// its sample: partitioned as one block from empty sets, its neighbour
// sets replace the run's.
func (s *ParsaStream) Global(rows BlockRows) { s.r.globalRows(s.blk, rows) }

// Init runs an individual initialisation job on the rows of a block:
// partitioned against the run's sets, counting only its own samples, its
// neighbour sets replace the run's and its placement is dropped.
func (s *ParsaStream) Init(rows BlockRows) {
	r, blk := s.r, s.blk
	s.grow(rows, true)
	r.sets.Reset()
	r.sets.Push(blk.params, blk.own[:len(blk.params)*blk.w])
}

// Block partitions the samples of one block by Alg. 3 and adds them to
// the run: their neighbour sets, their counts and the masks C_v. It
// returns the machine of each of rows.Samples, in their order, valid
// until the next call.
func (s *ParsaStream) Block(rows BlockRows) []int32 {
	r, blk := s.r, s.blk
	s.grow(rows, false)
	own := blk.own[:len(blk.params)*blk.w]
	for i, a := range blk.added {
		r.counts[i] += a
	}
	r.sets.Push(blk.params, own)
	w := blk.w
	for l, v := range blk.params {
		for x := range w {
			s.used[int(v)*w+x] |= own[l*w+x]
		}
	}
	return blk.out[:len(rows.Samples)]
}

// grow builds the block of rows, pulls its view and assigns its samples.
func (s *ParsaStream) grow(rows BlockRows, init bool) {
	r, blk := s.r, s.blk
	blk.buildRows(rows.Samples, rows.Off, rows.Adj, rows.Local)
	r.setView(blk, init, len(rows.Samples))
	blk.pull(r.sets)
	growParsa(blk, 0)
}

// Counts returns |U_i| after the blocks so far. The slice is the run's.
func (s *ParsaStream) Counts() []int64 { return s.r.counts }

// Masks returns the machine masks C_v = {i : some sample placed on i
// uses v}, MaskWords(k) words per parameter, after the blocks so far. The
// slice is the run's.
func (s *ParsaStream) Masks() []uint64 { return s.used }

// Check returns an error naming the first machine whose count |U_i| is
// outside the run's bounds lo_i ≤ |U_i| ≤ hi_i, which one thread with
// τ = 0 never leaves once every sample is placed.
func (s *ParsaStream) Check() error {
	for i, c := range s.r.counts {
		if c < s.lo[i] || c > s.hi[i] {
			return fmt.Errorf("machine %d has %d samples, outside [%d, %d]", i, c, s.lo[i], s.hi[i])
		}
	}
	return nil
}
