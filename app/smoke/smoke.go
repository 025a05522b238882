// Package smoke is the parameter server's built-in smoke job: workers
// push known increments to overlapping keys and worker 0 checks that every
// value is the exact sum. colo launch runs it on a cluster of processes,
// colo node --job smoke on one node.
//
//	res, err := smoke.DefaultConfig().Run(ctx, w, numWorkers)
package smoke

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"colo/ps/worker"
)

// Config is the built-in smoke job: every worker pushes known integer
// increments to random keys that overlap between workers, round after
// round, and at the end worker 0 pulls every key and checks that each
// value is the exact sum of all increments: nothing lost, nothing applied
// twice. The increments depend only on the seed, the worker's rank and
// the round, so any worker can recompute everyone's.
type Config struct {
	// Keys is the key space [0, Keys).
	Keys uint64
	// Batch is the number of keys each worker pushes per round.
	Batch int
	// Rounds is the number of rounds.
	Rounds int
	// Seed seeds the keys and increments.
	Seed uint64
}

// DefaultConfig returns 20 rounds of 10k keys out of 100k.
func DefaultConfig() Config { return Config{Keys: 100_000, Batch: 10_000, Rounds: 20, Seed: 1} }

// Validate checks s; errors name the field and the bound.
func (s Config) Validate() error {
	if s.Keys < 1 || s.Keys > 1<<26 {
		return fmt.Errorf("smoke: Keys %d out of range [1, %d]", s.Keys, 1<<26)
	}
	if s.Batch < 1 || uint64(s.Batch) > s.Keys {
		return fmt.Errorf("smoke: Batch %d out of range [1, Keys = %d]", s.Batch, s.Keys)
	}
	if s.Rounds < 1 {
		return fmt.Errorf("smoke: Rounds %d, at least 1", s.Rounds)
	}
	return nil
}

// increments returns worker w's keys and increments of round r.
func (s Config) increments(w, r int) ([]uint64, []float32) {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(w)<<32|uint64(r)))
	seen := make(map[uint64]bool, s.Batch)
	keys := make([]uint64, 0, s.Batch)
	for len(keys) < s.Batch {
		k := rng.Uint64N(s.Keys)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([]float32, len(keys))
	for i := range vals {
		vals[i] = float32(1 + rng.IntN(3))
	}
	return keys, vals
}

// Result is what one worker did.
type Result struct {
	Rank       int     `json:"rank"`
	KeysPushed uint64  `json:"keys_pushed"`
	Seconds    float64 `json:"seconds"`
	KeysPerSec float64 `json:"keys_per_s"`
	// Checked is set on the worker that verified the sums.
	Checked bool `json:"checked"`
}

// Run runs the job on worker w of a cluster of workers workers. Every
// worker must run it; they meet at a barrier before the check.
func (s Config) Run(ctx context.Context, w *worker.Worker, workers int) (Result, error) {
	res := Result{Rank: w.Rank()}
	if err := s.Validate(); err != nil {
		return res, err
	}
	if w.Width() != 1 {
		return res, fmt.Errorf("smoke: the job pushes one value per key, the cluster has width %d", w.Width())
	}
	start := time.Now()
	for r := range s.Rounds {
		keys, vals := s.increments(w.Rank(), r)
		if err := w.Push(keys, vals).Wait(); err != nil {
			return res, err
		}
		res.KeysPushed += uint64(len(keys))
	}
	res.Seconds = time.Since(start).Seconds()
	res.KeysPerSec = float64(res.KeysPushed) / res.Seconds
	if err := w.Barrier(ctx); err != nil {
		return res, err
	}
	if w.Rank() != 0 {
		return res, nil
	}
	want := make([]float32, s.Keys)
	for q := range workers {
		for r := range s.Rounds {
			keys, vals := s.increments(q, r)
			for i, k := range keys {
				want[k] += vals[i]
			}
		}
	}
	got := make([]float32, s.Keys)
	if err := w.PullRange(0, s.Keys, got).Wait(); err != nil {
		return res, err
	}
	for k := range got {
		if got[k] != want[k] {
			return res, fmt.Errorf("smoke: key %d is %v, the exact sum is %v", k, got[k], want[k])
		}
	}
	res.Checked = true
	return res, nil
}
