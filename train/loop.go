package train

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"colo/ps/clock"
	"colo/ps/proto"
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

// pull starts the pull of the values of k into vals on w.
func (k Keys) pull(w *worker.Worker, vals []float32) *worker.Future {
	if k.List != nil {
		return w.Pull(k.List, vals)
	}
	return w.PullRange(k.Begin, k.End, vals)
}

// pullAhead starts the pull of the next round's values of k into vals
// on w, before the current round's push (asynchronous training).
func (k Keys) pullAhead(w *worker.Worker, vals []float32) *worker.Future {
	if k.List != nil {
		return w.PullAhead(k.List, vals)
	}
	return w.PullRangeAhead(k.Begin, k.End, vals)
}

// push starts the push of grad, the values of k, on w.
func (k Keys) push(w *worker.Worker, grad []float32) *worker.Future {
	if k.List != nil {
		return w.Push(k.List, grad)
	}
	return w.PushRange(k.Begin, grad)
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
	// The spans are what the loop waits for, one after another; with
	// Overlap a push span ends when the loop has its acknowledgement in
	// hand and the pull span after it is the rest of the wait for the
	// next round's values.
	Track *timeline.Track
	// Overlap lets the phases of consecutive rounds overlap (see Loop);
	// false runs pull, compute and push one after another, each waited
	// for (Config.Sequential).
	Overlap bool
	// PullAhead, with Overlap under async training, sends a round's pull
	// before the previous round's push (Config.PullAhead).
	PullAhead bool
	// Advice is what the error of a non-finite training loss tells the
	// user to change; empty says to lower the learning rate (an
	// Advisor's advice, NewSchedule).
	Advice string
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
	// Phases is where the pass's time went on this machine (machine 0's
	// in a Result).
	Phases Phases `json:"phases"`
}

// Phases is where a worker's training time went: the seconds its loop
// spent in the application's Step (Compute), waiting for the values of a
// pull (Pull, including the wait for the round gate of BSP and bounded
// delay when the pull was sent before its push was acknowledged),
// waiting for the acknowledgement of a push (Push: under BSP the time
// until every worker pushed the round and the server applied it) and at
// the all-reduce after a pass (Barrier). What is left of a pass's time
// is the loop's own work and its hooks (load balancing, checkpoints).
type Phases struct {
	Compute float64 `json:"compute_s"`
	Pull    float64 `json:"pull_wait_s"`
	Push    float64 `json:"push_wait_s"`
	Barrier float64 `json:"barrier_s"`
}

// Add returns the phase-wise sum of p and q.
func (p Phases) Add(q Phases) Phases {
	return Phases{Compute: p.Compute + q.Compute, Pull: p.Pull + q.Pull, Push: p.Push + q.Push, Barrier: p.Barrier + q.Barrier}
}

// String writes the phases on one line, such as "compute 1.20 s, pull
// wait 3.10 s, push wait 0.80 s, barrier 0.05 s".
func (p Phases) String() string {
	return fmt.Sprintf("compute %.2f s, pull wait %.2f s, push wait %.2f s, barrier %.2f s", p.Compute, p.Pull, p.Push, p.Barrier)
}

// Progress is called on machine 0 after every pass.
type Progress func(p Pass)

// Loop trains a part on a worker: pass after pass, each batch is one
// round of pull, compute and push. After each pass the machines sum
// their loss through w.AllReduce, so that all of them see the same loss
// and stop at the same round. It returns the passes (identical on every
// machine apart from the times).
//
// With s.Overlap the loop does not wait for what it need not:
//
//   - the push of a round is not waited for before the next round's
//     pull is sent: under BSP and bounded delay the pull of the next
//     batch is handed to the worker right after the push, and the
//     worker's round gate sends it the moment every server acknowledged
//     the push, so that it leaves without a trip through the loop;
//   - the all-reduce after a pass runs while the pass's last push (and
//     the next pull, when it was sent) are in flight;
//   - under async training with s.PullAhead, the pull
//     of the next batch is sent before the current batch is computed,
//     so that its values travel during the computation (they then lack
//     this worker's push of the current round, as any other worker's).
//
// The computation of a round never starts before its values are in, so
// under BSP the overlapped loop trains the same model, bit for bit, as
// the sequential one. A pull is sent ahead only for a round that is
// certain to run: never past a step budget or the last pass, nor past
// the end of a pass when ε may stop training there (the loss is known
// only after the all-reduce), so that the traffic is exactly the
// rounds'. Rounds after which a hook runs (AfterRound, a checkpoint)
// are drained first: the hooks run with nothing in flight.
//
// When a call fails because the job was paused to replace a failed node
// (proto.ErrPaused) and the job takes checkpoints, the loop waits for the
// job to resume and rolls back to the newest complete checkpoint with
// every other worker (see run).
func Loop(ctx context.Context, w *worker.Worker, part Part, s Schedule, progress Progress) ([]Pass, error) {
	return loopAfter(ctx, w, part, s, progress, nil)
}

// loopAfter is Loop; paused, when not nil, is a pause that failed a call
// after an earlier Loop ended (Work's evaluation): the loop rolls back
// first.
func loopAfter(ctx context.Context, w *worker.Worker, part Part, s Schedule, progress Progress, paused error) ([]Pass, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if part.Batches() != s.Batches {
		return nil, fmt.Errorf("train: machine %d has %d batches per pass, the schedule %d", w.Rank(), part.Batches(), s.Batches)
	}
	l := &loop{w: w, part: part, s: s, width: w.Width(), async: w.Clock().Mode == clock.Async}
	return l.run(ctx, progress, paused)
}

// rollsBack reports whether err is a pause that s's loop recovers from
// by rolling back to a checkpoint.
func (s Schedule) rollsBack(err error) bool {
	return err != nil && errors.Is(err, proto.ErrPaused) && s.Checkpoint != nil && s.Checkpoint.Config.Dir != ""
}

// slot holds the arrays of a round and its requests in flight; the loop
// alternates between two, so that a round's pull or push may still be
// travelling while the next round uses the other.
type slot struct {
	keys       Keys
	vals, grad []float32
	// pull is the pull of batch b of pass p into vals, push the push of
	// round pushed from grad; nil once waited for.
	pull      *worker.Future
	p, b      int
	push      *worker.Future
	pushRound int
	pushPass  int
}

// loop is the state of one worker's Loop.
type loop struct {
	w      *worker.Worker
	part   Part
	s      Schedule
	width  int
	async  bool
	slots  [2]slot
	phases Phases // of the current pass
}

// startPull sends the pull of batch b of pass p into sl; ahead marks
// it as the next round's, sent before the current round's push.
func (l *loop) startPull(sl *slot, p, b int, ahead bool) {
	sl.keys = l.part.Keys(b)
	n := sl.keys.Len() * l.width
	sl.vals, sl.grad = grow(sl.vals, n), grow(sl.grad, n)
	sl.p, sl.b = p, b
	if ahead {
		sl.pull = sl.keys.pullAhead(l.w, sl.vals)
		return
	}
	sl.pull = sl.keys.pull(l.w, sl.vals)
}

// waitPush waits for sl's push, if one is in flight.
func (l *loop) waitPush(sl *slot) error {
	if sl.push == nil {
		return nil
	}
	t0 := time.Now()
	t := l.s.Track.Start()
	err := sl.push.Wait()
	sl.push = nil
	l.s.Track.Span(timeline.Push, sl.pushRound, t)
	l.phases.Push += time.Since(t0).Seconds()
	if err != nil {
		return fmt.Errorf("pass %d round %d: push: %w", sl.pushPass, sl.pushRound, err)
	}
	return nil
}

// drain waits for every request in flight and returns the first error.
func (l *loop) drain() error {
	var first error
	for i := range l.slots {
		sl := &l.slots[i]
		if err := l.waitPush(sl); err != nil && first == nil {
			first = err
		}
		if sl.pull != nil {
			if err := sl.pull.Wait(); err != nil && first == nil {
				first = fmt.Errorf("pass %d: pull: %w", sl.p, err)
			}
			sl.pull = nil
		}
	}
	return first
}

// hookAfter reports whether a hook runs after the given number of
// rounds.
func (l *loop) hookAfter(rounds int) bool {
	return l.s.AfterRound != nil || l.s.Checkpoint.due(rounds)
}

// runs reports whether the round after the given number of rounds, batch
// b of pass p, certainly runs: whether a pull may be sent for it ahead.
func (l *loop) runs(rounds, p, b int) bool {
	if !l.s.Overlap || l.s.budgetSpent(rounds) || l.hookAfter(rounds) || p >= l.s.MaxPasses {
		return false
	}
	// Past a pass's end, ε may stop training (the loss is summed after
	// the pass).
	return b > 0 || l.s.Epsilon == 0
}

// next returns the pass and batch of the round after batch b of pass p.
func (l *loop) next(p, b int) (int, int) {
	if b+1 < l.s.Batches {
		return p, b + 1
	}
	return p + 1, 0
}

// run trains from the checkpoint to resume from, if any, and, when the
// job is paused to replace a failed node (a call fails with
// proto.ErrPaused), rolls back to the job's last checkpoint once it
// resumes and trains again from there (see rollback).
func (l *loop) run(ctx context.Context, progress Progress, paused error) ([]Pass, error) {
	var st *WorkerState
	var passes []Pass
	err := paused
	if c := l.s.Checkpoint; err == nil && c != nil && c.Config.Resume != "" {
		st, err = c.restore(ctx, l.w, l.part, c.Config.Resume)
	}
	for {
		// A pause, perhaps again while rolling back.
		for err != nil {
			if !l.s.rollsBack(err) {
				if werr := l.s.Checkpoint.abandon(); werr != nil {
					err = fmt.Errorf("%w (and the checkpoint being written: %v)", err, werr)
				}
				return passes, err
			}
			st, err = l.rollback(ctx, err)
		}
		if passes, err = l.train(ctx, progress, st); err == nil {
			return passes, nil
		}
	}
}

// rollback waits, after a call failed with the pause of the job (cause),
// for the failed node's replacement, then rolls this worker back to the
// newest complete checkpoint of the job's directory: every worker does,
// and loads its servers' snapshots (Checkpointer.restore, as a resumed
// job does, the replacement included), so that every server and worker
// is at that checkpoint's round and the job goes on from there.
func (l *loop) rollback(ctx context.Context, cause error) (*WorkerState, error) {
	l.drain() // every call failed with the pause
	l.phases = Phases{}
	// A checkpoint being written is finished or fails with the pause
	// before worker 0 picks the one to roll back to.
	if err := l.s.Checkpoint.abandon(); err != nil {
		return nil, fmt.Errorf("rolling back after %v: %w", cause, err)
	}
	if _, err := l.w.Rejoin(ctx); err != nil {
		return nil, fmt.Errorf("%w (the job was paused after: %v)", err, cause)
	}
	if err := l.w.Resume(); err != nil {
		return nil, err
	}
	c := l.s.Checkpoint
	st, err := c.restore(ctx, l.w, l.part, c.Config.Dir)
	if err != nil && !errors.Is(err, proto.ErrPaused) {
		return nil, fmt.Errorf("rolling back after %v: %w", cause, err)
	}
	return st, err
}

// train runs the loop from st (nil: from the start).
func (l *loop) train(ctx context.Context, progress Progress, st *WorkerState) (passes []Pass, err error) {
	s, w := l.s, l.w
	scale := float32(float64(s.Batches) / float64(s.Samples))
	start := time.Now()
	prev := math.NaN()
	rounds, p0, b0 := 0, 0, 0
	var loss float64
	var samples, correct int
	if st != nil {
		rounds, p0, b0, passes = st.Rounds, st.Pass, st.Batch, st.Passes
		loss, samples, correct = math.Float64frombits(st.LossBits), st.Samples, st.Correct
		prev = math.Float64frombits(st.PrevBits)
		start = start.Add(-time.Duration(st.Seconds * float64(time.Second)))
	}
	defer func() {
		// Nothing is left in flight, whatever ended the loop.
		if derr := l.drain(); err == nil && derr != nil {
			err = derr
		}
	}()
	for p := p0; p < s.MaxPasses; p++ {
		for b := b0; b < s.Batches; b++ {
			if s.budgetSpent(rounds) {
				break
			}
			cur, other := &l.slots[rounds%2], &l.slots[(rounds+1)%2]
			if cur.pull == nil {
				l.startPull(cur, p, b, false)
			} else if cur.p != p || cur.b != b {
				return passes, fmt.Errorf("pass %d round %d: the pull sent ahead was of pass %d batch %d", p, rounds, cur.p, cur.b)
			}
			// The previous round's push, then the one that last used
			// cur.grad (async keeps up to two in flight).
			if !l.async {
				if err := l.waitPush(other); err != nil {
					return passes, err
				}
			}
			if err := l.waitPush(cur); err != nil {
				return passes, err
			}
			t0 := time.Now()
			t := s.Track.Start()
			err := cur.pull.Wait()
			cur.pull = nil
			t = s.Track.Span(timeline.Pull, rounds, t)
			t1 := time.Now()
			l.phases.Pull += t1.Sub(t0).Seconds()
			if err != nil {
				return passes, fmt.Errorf("pass %d round %d: pull: %w", p, rounds, err)
			}
			np, nb := l.next(p, b)
			if l.async && l.s.PullAhead && l.runs(rounds+1, np, nb) {
				l.startPull(other, np, nb, true)
			}
			clear(cur.grad)
			lo, m, c := l.part.Step(b, cur.vals, cur.grad, scale)
			loss, samples, correct = loss+lo, samples+m, correct+c
			t = s.Track.Span(timeline.Compute, rounds, t)
			l.phases.Compute += time.Since(t1).Seconds()
			cur.push, cur.pushRound, cur.pushPass = cur.keys.push(w, cur.grad), rounds, p
			rounds++
			switch {
			case !s.Overlap || l.hookAfter(rounds):
				if err := l.drain(); err != nil {
					return passes, err
				}
			case !(l.async && l.s.PullAhead) && l.runs(rounds, np, nb):
				l.startPull(other, np, nb, false)
			}
			if s.AfterRound != nil {
				if err := s.AfterRound(ctx, w, rounds); err != nil {
					return passes, fmt.Errorf("pass %d round %d: %w", p, rounds, err)
				}
			}
			if s.Checkpoint.due(rounds) {
				st := WorkerState{Rounds: rounds, Pass: p, Batch: b + 1, LossBits: math.Float64bits(loss), Samples: samples, Correct: correct,
					PrevBits: math.Float64bits(prev), Seconds: time.Since(start).Seconds(), Passes: passes}
				if err := s.Checkpoint.save(ctx, w, l.part, st, false); err != nil {
					return passes, fmt.Errorf("pass %d round %d: %w", p, rounds, err)
				}
			}
		}
		b0 = 0
		t0 := time.Now()
		t := s.Track.Start()
		sum, err := w.AllReduce(ctx, []float64{loss, float64(samples), float64(correct)})
		if err != nil {
			return passes, fmt.Errorf("pass %d: summing the loss: %w", p, err)
		}
		s.Track.Span(timeline.Barrier, p+1, t)
		l.phases.Barrier += time.Since(t0).Seconds()
		pass := Pass{Pass: p + 1, Rounds: rounds, Samples: int(sum[1])}
		if sum[1] > 0 {
			pass.TrainLoss = sum[0] / sum[1]
			pass.TrainAccuracy = sum[2] / sum[1]
		}
		stop := Converged(prev, pass.TrainLoss, s.Epsilon) || s.budgetSpent(rounds) || p+1 >= s.MaxPasses
		if stop {
			// The pass's last push is part of the pass.
			if err := l.drain(); err != nil {
				return passes, err
			}
		}
		pass.Seconds, pass.Phases = time.Since(start).Seconds(), l.phases
		l.phases = Phases{}
		passes = append(passes, pass)
		if progress != nil && w.Rank() == 0 {
			progress(pass)
		}
		if math.IsNaN(pass.TrainLoss) || math.IsInf(pass.TrainLoss, 0) {
			return passes, fmt.Errorf("pass %d: the training loss is %v: %s", p+1, pass.TrainLoss, cmp.Or(s.Advice, "lower the learning rate"))
		}
		if stop {
			break
		}
		prev = pass.TrainLoss
		loss, samples, correct = 0, 0, 0
	}
	// The checkpoint being written, and the last one if it was skipped.
	if err := s.Checkpoint.finish(ctx, w, l.part, rounds); err != nil {
		return passes, fmt.Errorf("round %d: %w", rounds, err)
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
