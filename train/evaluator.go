package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/worker"
)

// Every says how often the evaluator scores the model: every Epochs
// epochs' worth of steps, every Steps steps, or every Interval of time.
// A step is one batch pushed by one worker (TensorFlow's global step):
// an epoch is the machines times the batches of a pass. The zero value
// never scores while training.
//
// As text (the --eval-every flag, a job file's eval_every) it is "2" (two
// epochs), "500steps" or a duration such as "30s" or "1m30s"; "0" is
// never. A job file may also give a number of epochs as a JSON number.
type Every struct {
	Epochs   int
	Steps    int64
	Interval time.Duration
}

// IsZero reports whether e never scores.
func (e Every) IsZero() bool { return e == Every{} }

// String writes e as ParseEvery reads it.
func (e Every) String() string {
	switch {
	case e.Steps > 0:
		return strconv.FormatInt(e.Steps, 10) + "steps"
	case e.Interval > 0:
		return e.Interval.String()
	}
	return strconv.Itoa(e.Epochs)
}

// ParseEvery reads an Every: "2" (epochs), "500steps" or a duration.
func ParseEvery(s string) (Every, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.Atoi(t); err == nil {
		if n < 0 {
			return Every{}, fmt.Errorf("eval every %q: want 0 (never) or a number of epochs", s)
		}
		return Every{Epochs: n}, nil
	}
	for _, unit := range []string{"steps", "step"} {
		if num, ok := strings.CutSuffix(t, unit); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 1 {
				return Every{}, fmt.Errorf("eval every %q: want a positive number of steps, such as 500steps", s)
			}
			return Every{Steps: n}, nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || d <= 0 {
		return Every{}, fmt.Errorf("eval every %q: want a number of epochs (2), of steps (500steps) or a positive duration (30s)", s)
	}
	return Every{Interval: d}, nil
}

// MarshalText writes e as String does.
func (e Every) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads e as ParseEvery does.
func (e *Every) UnmarshalText(b []byte) error {
	v, err := ParseEvery(string(b))
	if err == nil {
		*e = v
	}
	return err
}

// UnmarshalJSON reads a string as ParseEvery does, or a number of epochs.
func (e *Every) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return e.UnmarshalText([]byte(s))
	}
	return e.UnmarshalText(bytes.TrimSpace(b))
}

// Scorer is an application that an evaluator can score while it trains
// (validation curves): ScoreModel scores the values of the keys
// [0, NumKeys), Width each, as the servers hold them. It may change vals
// but not keep them.
type Scorer interface {
	App
	ScoreModel(vals []float32) Eval
}

// Check is one score of the evaluator: the model as the servers held it
// after Step steps (Epoch = Step over the steps of an epoch), Seconds
// after the evaluator started.
type Check struct {
	Step    int64   `json:"step"`
	Epoch   float64 `json:"epoch"`
	Seconds float64 `json:"seconds"`
	// Final marks the score of the model the workers ended with.
	Final      bool `json:"final,omitempty"`
	Validation Eval `json:"validation"`
}

// EvaluatorReport is what an evaluator did: its scores, in order, and
// what they cost it.
type EvaluatorReport struct {
	Every  string  `json:"every"`
	Checks []Check `json:"checks"`
	// Pulls is the number of pulls of the whole model, Probes of the
	// small pulls that follow the step count between them.
	Pulls  int `json:"pulls"`
	Probes int `json:"probes"`
	// ScoreSeconds is the time spent scoring.
	ScoreSeconds float64 `json:"score_seconds"`
	// BytesIn is the data the evaluator received (its node's counters).
	BytesIn int64 `json:"bytes_in"`
}

// ProbeInterval is how often an evaluator that scores by steps or epochs
// asks the servers for their step count between two scores.
const ProbeInterval = 20 * time.Millisecond

// Watch is the work of an evaluator node n (proto.RoleEvaluator): it
// scores s's model every e (stepsPerEpoch steps make an epoch) while the
// workers train, and once more when they are done (node.Trained), and
// returns its report once that final score is made. It pulls outside
// the consistency clock, so the workers never wait for it. The end of
// the job before the final score (another node failed) ends it with the
// job's error.
//
// checked, when not nil, is called after every score.
func Watch(ctx context.Context, n *node.Node, s Scorer, e Every, stepsPerEpoch int64, checked func(Check)) (*EvaluatorReport, error) {
	w := n.Worker()
	if w == nil {
		return nil, errors.New("train: the evaluator's node has no client")
	}
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("train: %d steps per epoch", stepsPerEpoch)
	}
	ev := &evaluator{w: w, s: s, start: time.Now(), perEpoch: stepsPerEpoch, checked: checked,
		rep:  &EvaluatorReport{Every: e.String()},
		vals: make([]float32, s.NumKeys()*s.Width()), one: make([]float32, s.Width())}
	period := e.Steps
	if e.Epochs > 0 {
		period = int64(e.Epochs) * stepsPerEpoch
	}
	next := period // the step of the next score
	tick := time.NewTicker(ProbeInterval)
	if e.Interval > 0 {
		tick.Reset(e.Interval)
	}
	defer tick.Stop()
	for {
		select {
		case <-n.Trained():
			_, err := ev.score(true, 0)
			if errors.Is(err, proto.ErrPaused) {
				// A pause that came and went since the last probe (a
				// node replaced while the workers finished the job):
				// the evaluator's calls fail with it until it rejoins.
				if err = ev.rejoin(ctx); err == nil {
					_, err = ev.score(true, 0)
				}
			}
			if err != nil {
				return ev.rep, ev.ended(n, err)
			}
			ev.rep.BytesIn = int64(n.Stats().Inter.BytesRecv)
			return ev.rep, nil
		case <-n.Done():
			if err := n.Wait(); err != nil {
				return ev.rep, err
			}
			return ev.rep, errors.New("train: the job ended before the evaluator's final score")
		case <-ctx.Done():
			return ev.rep, context.Cause(ctx)
		case <-tick.C:
		}
		if e.Interval > 0 {
			_, err := ev.score(false, 0)
			if errors.Is(err, proto.ErrPaused) {
				err = ev.rejoin(ctx)
			}
			if err != nil {
				return ev.rep, ev.ended(n, err)
			}
			continue
		}
		if period == 0 {
			continue
		}
		steps, err := ev.probe()
		scored := false
		if err == nil && steps >= next {
			// The probe read one server; the model's pull reads them
			// all, and one may not have reached the step yet: then the
			// score waits for a later probe.
			scored, err = ev.score(false, next)
		}
		if errors.Is(err, proto.ErrPaused) {
			// A node failed and is being replaced: wait for the job to
			// resume. The workers roll back to a checkpoint and the
			// servers count steps from 0 again, as after a resume.
			if err = ev.rejoin(ctx); err != nil {
				return ev.rep, ev.ended(n, err)
			}
			next = period
			continue
		}
		if err != nil {
			return ev.rep, ev.ended(n, err)
		}
		if !scored {
			continue
		}
		last := ev.rep.Checks[len(ev.rep.Checks)-1].Step
		next = (last/period + 1) * period
	}
}

// evaluator is Watch's state.
type evaluator struct {
	w        *worker.Worker
	s        Scorer
	start    time.Time
	perEpoch int64
	rep      *EvaluatorReport
	vals     []float32
	one      []float32 // a probe's value
	checked  func(Check)
}

// ended returns the job's error when the job ended under a call that
// failed with err, err otherwise.
func (ev *evaluator) ended(n *node.Node, err error) error {
	select {
	case <-n.Done():
		if jerr := n.Wait(); jerr != nil {
			return jerr
		}
	default:
	}
	return err
}

// rejoin waits for a paused job to resume and lets the evaluator's
// calls through again.
func (ev *evaluator) rejoin(ctx context.Context) error {
	if _, err := ev.w.Rejoin(ctx); err != nil {
		return err
	}
	return ev.w.Resume()
}

// probe returns the servers' step count, pulling one value.
func (ev *evaluator) probe() (int64, error) {
	var steps int64
	ev.rep.Probes++
	if err := ev.w.PullRangeSteps(0, 1, ev.one, &steps).Wait(); err != nil {
		return 0, fmt.Errorf("evaluator: step count: %w", err)
	}
	return steps, nil
}

// score pulls the model and scores it, and says whether it recorded a
// check: a score that is not final and whose pull read fewer than
// atLeast steps is not one.
func (ev *evaluator) score(final bool, atLeast int64) (bool, error) {
	var steps int64
	ev.rep.Pulls++
	if err := ev.w.PullRangeSteps(0, uint64(ev.s.NumKeys()), ev.vals, &steps).Wait(); err != nil {
		return false, fmt.Errorf("evaluator: pulling the model: %w", err)
	}
	if !final && steps < atLeast {
		return false, nil
	}
	if n := len(ev.rep.Checks); n > 0 && ev.rep.Checks[n-1].Step == steps {
		// Nothing changed since the last score.
		ev.rep.Checks[n-1].Final = ev.rep.Checks[n-1].Final || final
		return true, nil
	}
	t := time.Now()
	score := ev.s.ScoreModel(ev.vals)
	ev.rep.ScoreSeconds += time.Since(t).Seconds()
	c := Check{Step: steps, Epoch: float64(steps) / float64(ev.perEpoch),
		Seconds: t.Sub(ev.start).Seconds(), Final: final, Validation: score}
	ev.rep.Checks = append(ev.rep.Checks, c)
	if ev.checked != nil {
		ev.checked(c)
	}
	return true, nil
}
