package main

import (
	"fmt"
	"math"

	"colo/internal/progress"
	"colo/train"
)

// startPhase starts the phase name of total units (0: unknown yet) on
// e's standard error.
func startPhase(e *env, name string, total int64) *progress.Phase {
	return progress.Start(e.errOut, e.isTerminal, name, total)
}

// passes follows a training's passes in a phase "train SPEC", one step
// per pass with its loss. The phase finishes with the last pass, saying
// when training stopped before its last pass (at ε or at the step
// budget), and a phase "evaluate SPEC" follows until the end.
type passes struct {
	e     *env
	spec  string
	cfg   train.Config
	prev  float64
	train *progress.Phase
	eval  *progress.Phase
}

func newPasses(e *env, spec string, cfg train.Config) *passes {
	return &passes{e: e, spec: spec, cfg: cfg, prev: math.NaN(), train: startPhase(e, "train "+spec, int64(cfg.MaxPasses))}
}

// pass is a train.Progress.
func (t *passes) pass(p train.Pass) {
	t.train.Step("pass", int64(p.Pass), int64(t.cfg.MaxPasses), fmt.Sprintf("loss %.4f", p.TrainLoss))
	var stop string
	switch {
	case train.Converged(t.prev, p.TrainLoss, t.cfg.Epsilon):
		stop = fmt.Sprintf("stopped at ε = %g after pass %d of %d", t.cfg.Epsilon, p.Pass, t.cfg.MaxPasses)
	case t.cfg.MaxRounds() > 0 && p.Rounds >= t.cfg.MaxRounds():
		stop = fmt.Sprintf("step budget spent after pass %d of %d", p.Pass, t.cfg.MaxPasses)
	case p.Pass >= t.cfg.MaxPasses:
		stop = fmt.Sprintf("loss %.4f", p.TrainLoss)
	}
	t.prev = p.TrainLoss
	if stop != "" && t.eval == nil {
		t.train.Finish(stop)
		t.eval = startPhase(t.e, "evaluate "+t.spec, 1)
	}
}

// end ends the phases when training returned with err.
func (t *passes) end(err error) {
	if err != nil {
		t.train.Abort()
		if t.eval != nil {
			t.eval.Abort()
		}
		return
	}
	t.train.Finish("")
	if t.eval != nil {
		t.eval.Finish("")
	}
}
