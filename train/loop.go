package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"colo/ps/worker"
	"colo/timeline"
)

// Part is one machine's share of an application: its samples cut into
// the batches of a pass, and the computation of a batch. A part is used
// by one goroutine.
type Part interface {
	// Batches returns the number of batches (rounds) per pass; it is the
	// same on every machine.
	Batches() int
	// Keys returns the keys batch b reads and writes: a sorted list for a
	// sparse model, a range for a dense one.
	Keys(b int) Keys
	// Step computes batch b at the pulled values vals of Keys(b): it
	// returns the summed loss and the number of samples (and of those
	// predicted right, when the application predicts classes), adds
	// scale times the gradient of the summed loss to grad (laid out like
	// vals) and may update state the part keeps locally.
	Step(b int, vals, grad []float32, scale float32) (loss float64, samples, correct int)
}

// Keys are the keys of a batch: the sorted list List (a sparse model's
// batch reads the features its samples have) or, when List is nil, the
// range [Begin, End) (a dense model reads a block of its parameters).
// Loop pulls and pushes a list with Worker.Pull and Push, a range with
// PullRange and PushRange; the values are laid out key after key, Width
// values each, in both cases.
type Keys struct {
	List       []uint64
	Begin, End uint64
}

// ListKeys returns the keys of a sorted list.
func ListKeys(list []uint64) Keys { return Keys{List: list} }

// RangeKeys returns the keys [begin, end).
func RangeKeys(begin, end uint64) Keys { return Keys{Begin: begin, End: end} }

// Len returns the number of keys.
func (k Keys) Len() int {
	if k.List != nil {
		return len(k.List)
	}
	return int(k.End - k.Begin)
}

// Each calls f with every key in increasing order.
func (k Keys) Each(f func(key uint64)) {
	if k.List != nil {
		for _, key := range k.List {
			f(key)
		}
		return
	}
	for key := k.Begin; key < k.End; key++ {
		f(key)
	}
}

// pull pulls the values of k into vals on w.
func (k Keys) pull(w *worker.Worker, vals []float32) error {
	if k.List != nil {
		return w.Pull(k.List, vals).Wait()
	}
	return w.PullRange(k.Begin, k.End, vals).Wait()
}

// push pushes grad, the values of k, on w.
func (k Keys) push(w *worker.Worker, grad []float32) error {
	if k.List != nil {
		return w.Push(k.List, grad).Wait()
	}
	return w.PushRange(k.Begin, grad).Wait()
}

// Schedule says how long to train.
type Schedule struct {
	// Epsilon stops training when the relative change of the training
	// loss between two passes falls below it (0: never).
	Epsilon float64
	// MaxPasses bounds the number of passes over the data.
	MaxPasses int
	// MaxRounds, when positive, also bounds the rounds: training stops
	// after this many, in the middle of a pass if need be (a step
	// budget, Config.MaxSteps).
	MaxRounds int
	// AfterRound, when not nil, is called on the worker after each round
	// with the number of rounds so far, every worker at the same rounds:
	// the load balancer's hook (package balance), which may move keys
	// between servers there.
	AfterRound func(ctx context.Context, w *worker.Worker, rounds int) error
	// Checkpoint, when not nil, takes the job's checkpoints after every
	// Every rounds and, when it resumes, restores the newest before the
	// first round (see checkpoint.go).
	Checkpoint *Checkpointer
	// Samples is the number of training samples on all machines, and
	// Batches the number of batches of a pass: each gradient is scaled by
	// Batches/Samples, so that the servers apply the gradient of the mean
	// loss of a round's batch.
	Samples, Batches int
	// Track, when not nil, records the worker's pull, compute and push
	// spans of every round and the barrier after every pass
	// (Config.Trace); nil records nothing, at the cost of a nil check.
	Track *timeline.Track
}

// Validate checks s; errors name the field and the bound.
func (s Schedule) Validate() error {
	if !(s.Epsilon >= 0) {
		return fmt.Errorf("train: epsilon %v, want ≥ 0", s.Epsilon)
	}
	if s.MaxPasses < 1 {
		return fmt.Errorf("train: max passes %d, at least 1", s.MaxPasses)
	}
	if s.MaxRounds < 0 {
		return fmt.Errorf("train: max rounds %d, want 0 (none) or a number of rounds", s.MaxRounds)
	}
	if s.Samples < 1 || s.Batches < 1 {
		return fmt.Errorf("train: %d samples in %d batches per pass, want at least 1 of each", s.Samples, s.Batches)
	}
	return nil
}

// Pass is what one pass over the data measured, summed over machines.
type Pass struct {
	Pass   int `json:"pass"`
	Rounds int `json:"rounds"`
	// Samples is the number of samples trained in the pass, on every
	// machine (fewer than the data's when a step budget ends it).
	Samples int `json:"samples"`
	// Seconds is the time from the start of training to the end of the
	// pass, on machine 0.
	Seconds float64 `json:"seconds"`
	// TrainLoss is the mean log loss (lr) or mean squared error (mf) of
	// the samples during the pass, each at the model of its round.
	TrainLoss float64 `json:"train_loss"`
	// TrainAccuracy is the fraction of samples predicted right (lr).
	TrainAccuracy float64 `json:"train_accuracy,omitempty"`
}

// Progress is called on machine 0 after every pass.
type Progress func(p Pass)

// Loop trains a part on a worker: pass after pass, each batch is one
// round of pull, compute and push. After each pass the machines sum
// their loss through w.AllReduce, so that all of them see the same loss
// and stop at the same round. It returns the passes (identical on every
// machine apart from the times).
func Loop(ctx context.Context, w *worker.Worker, part Part, s Schedule, progress Progress) ([]Pass, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if part.Batches() != s.Batches {
		return nil, fmt.Errorf("train: machine %d has %d batches per pass, the schedule %d", w.Rank(), part.Batches(), s.Batches)
	}
	width := w.Width()
	scale := float32(float64(s.Batches) / float64(s.Samples))
	var vals, grad []float32
	var passes []Pass
	start := time.Now()
	prev := math.NaN()
	rounds, p0, b0 := 0, 0, 0
	var loss float64
	var samples, correct int
	if c := s.Checkpoint; c != nil && c.Config.Resume != "" {
		st, err := c.restore(ctx, w, part)
		if err != nil {
			return nil, err
		}
		rounds, p0, b0, passes = st.Rounds, st.Pass, st.Batch, st.Passes
		loss, samples, correct = math.Float64frombits(st.LossBits), st.Samples, st.Correct
		prev = math.Float64frombits(st.PrevBits)
		start = start.Add(-time.Duration(st.Seconds * float64(time.Second)))
	}
	for p := p0; p < s.MaxPasses; p++ {
		for b := b0; b < s.Batches; b++ {
			if s.budgetSpent(rounds) {
				break
			}
			keys := part.Keys(b)
			n := keys.Len() * width
			vals, grad = grow(vals, n), grow(grad, n)
			t := s.Track.Start()
			if err := keys.pull(w, vals); err != nil {
				return passes, fmt.Errorf("pass %d round %d: pull: %w", p, rounds, err)
			}
			t = s.Track.Span(timeline.Pull, rounds, t)
			clear(grad)
			l, m, c := part.Step(b, vals, grad, scale)
			loss, samples, correct = loss+l, samples+m, correct+c
			t = s.Track.Span(timeline.Compute, rounds, t)
			if err := keys.push(w, grad); err != nil {
				return passes, fmt.Errorf("pass %d round %d: push: %w", p, rounds, err)
			}
			s.Track.Span(timeline.Push, rounds, t)
			rounds++
			if s.AfterRound != nil {
				if err := s.AfterRound(ctx, w, rounds); err != nil {
					return passes, fmt.Errorf("pass %d round %d: %w", p, rounds, err)
				}
			}
			if s.Checkpoint.due(rounds) {
				st := WorkerState{Rounds: rounds, Pass: p, Batch: b + 1, LossBits: math.Float64bits(loss), Samples: samples, Correct: correct,
					PrevBits: math.Float64bits(prev), Seconds: time.Since(start).Seconds(), Passes: passes}
				if err := s.Checkpoint.save(ctx, w, part, st); err != nil {
					return passes, fmt.Errorf("pass %d round %d: %w", p, rounds, err)
				}
			}
		}
		b0 = 0
		t := s.Track.Start()
		sum, err := w.AllReduce(ctx, []float64{loss, float64(samples), float64(correct)})
		if err != nil {
			return passes, fmt.Errorf("pass %d: summing the loss: %w", p, err)
		}
		s.Track.Span(timeline.Barrier, p+1, t)
		pass := Pass{Pass: p + 1, Rounds: rounds, Samples: int(sum[1]), Seconds: time.Since(start).Seconds()}
		if sum[1] > 0 {
			pass.TrainLoss = sum[0] / sum[1]
			pass.TrainAccuracy = sum[2] / sum[1]
		}
		passes = append(passes, pass)
		if progress != nil && w.Rank() == 0 {
			progress(pass)
		}
		if math.IsNaN(pass.TrainLoss) || math.IsInf(pass.TrainLoss, 0) {
			return passes, fmt.Errorf("pass %d: the training loss is %v: lower the learning rate", p+1, pass.TrainLoss)
		}
		if Converged(prev, pass.TrainLoss, s.Epsilon) || s.budgetSpent(rounds) {
			break
		}
		prev = pass.TrainLoss
		loss, samples, correct = 0, 0, 0
	}
	return passes, nil
}

// budgetSpent reports whether rounds reached the step budget.
func (s Schedule) budgetSpent(rounds int) bool { return s.MaxRounds > 0 && rounds >= s.MaxRounds }

// Converged reports whether the loss changed by less than a fraction eps
// of the previous loss prev (NaN before the first pass).
func Converged(prev, loss, eps float64) bool {
	if math.IsNaN(prev) || eps <= 0 {
		return false
	}
	return math.Abs(prev-loss) < eps*math.Abs(prev)
}

// grow returns s resized to n, reallocated when too small.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
