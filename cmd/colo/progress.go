package main

import (
	"fmt"
	"math"
	"sync"
	"time"

	"colo/train"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// phase is one named phase of a long command (loading, partitioning,
// training, evaluation). On a terminal it draws a bar (mpb) that ends at
// 100% when the phase finishes, early or not; elsewhere it writes one
// plain line per step and one when it finishes, so that the logs of CI
// jobs and clusters show progress. It is safe for use from several
// goroutines.
type phase struct {
	e     *env
	name  string
	start time.Time

	mu          sync.Mutex
	done, total int64
	note        string
	quarter     int64 // the last quarter written as a line
	finished    bool

	p   *mpb.Progress // nil when not a terminal
	bar *mpb.Bar
}

// startPhase starts the phase name of total units (0: unknown yet).
func startPhase(e *env, name string, total int64) *phase {
	ph := &phase{e: e, name: name, start: time.Now(), total: total}
	if !e.isTerminal {
		return ph
	}
	ph.p = mpb.New(mpb.WithOutput(e.errOut), mpb.WithAutoRefresh(), mpb.WithRefreshRate(150*time.Millisecond))
	ph.bar = ph.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO),
			decor.Any(func(decor.Statistics) string {
				ph.mu.Lock()
				defer ph.mu.Unlock()
				if ph.note == "" {
					return ""
				}
				return "  " + ph.note
			})))
	return ph
}

// line writes one plain line when not on a terminal.
func (ph *phase) line(format string, args ...any) {
	if ph.e.isTerminal {
		return
	}
	fmt.Fprintf(ph.e.errOut, "%s: %s, %.1f s\n", ph.name, fmt.Sprintf(format, args...), time.Since(ph.start).Seconds())
}

// set records done out of total units; the done never falls. Off a
// terminal it writes a line at each quarter.
func (ph *phase) set(done, total int64) {
	ph.mu.Lock()
	if ph.finished || total <= 0 {
		ph.mu.Unlock()
		return
	}
	ph.total, ph.done = total, max(ph.done, min(done, total))
	q := 4 * ph.done / ph.total
	write := q > ph.quarter && q < 4 // the end has a line of its own
	if write {
		ph.quarter = q
	}
	done, total = ph.done, ph.total
	ph.mu.Unlock()
	if ph.bar != nil {
		ph.bar.SetTotal(total, false)
		ph.bar.SetCurrent(done)
	}
	if write {
		ph.line("%d%%", 25*q)
	}
}

// step records a step (a training pass) with its note, such as the
// loss: on a terminal in the bar, elsewhere as a line "pass 3/200, loss
// 0.5231".
func (ph *phase) step(what string, done, total int64, note string) {
	ph.mu.Lock()
	ph.note = note
	ph.quarter = 4 // steps have lines of their own
	ph.mu.Unlock()
	ph.set(done, total)
	if note != "" {
		note = ", " + note
	}
	ph.line("%s %d/%d%s", what, done, total, note)
}

// event notes a named part of the phase that ended (a start of best).
func (ph *phase) event(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ph.mu.Lock()
	ph.note = msg
	ph.mu.Unlock()
	ph.line("%s", msg)
}

// finish ends the phase at 100%, with a note saying how (such as
// "stopped at ε after pass 37 of 200"); on a terminal it waits for the
// bar's last frame. A phase finishes once.
func (ph *phase) finish(note string) {
	ph.mu.Lock()
	if ph.finished {
		ph.mu.Unlock()
		return
	}
	ph.finished = true
	ph.total = max(ph.total, 1) // a phase of unknown length is one unit
	ph.done = ph.total
	full := ph.total
	if note != "" {
		ph.note = note
	}
	ph.mu.Unlock()
	if ph.bar != nil {
		// The bar is full: its total, then complete (a phase that never
		// stepped, such as loading, would otherwise end at 0%).
		ph.bar.SetTotal(full, false)
		ph.bar.SetCurrent(full)
		ph.bar.SetTotal(-1, true)
		ph.p.Wait()
	}
	if note != "" {
		note = ", " + note
	}
	ph.line("done%s", note)
}

// abort ends the phase that failed: the bar stays where it was.
func (ph *phase) abort() {
	ph.mu.Lock()
	if ph.finished {
		ph.mu.Unlock()
		return
	}
	ph.finished = true
	ph.mu.Unlock()
	if ph.bar != nil {
		ph.bar.Abort(false)
		ph.p.Wait()
	}
}

// fraction is the part of the phase done, 1 once it finished.
func (ph *phase) fraction() float64 {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.finished {
		return 1
	}
	if ph.total <= 0 {
		return 0
	}
	return float64(ph.done) / float64(ph.total)
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
	train *phase
	eval  *phase
}

func newPasses(e *env, spec string, cfg train.Config) *passes {
	return &passes{e: e, spec: spec, cfg: cfg, prev: math.NaN(), train: startPhase(e, "train "+spec, int64(cfg.MaxPasses))}
}

// pass is a train.Progress.
func (t *passes) pass(p train.Pass) {
	t.train.step("pass", int64(p.Pass), int64(t.cfg.MaxPasses), fmt.Sprintf("loss %.4f", p.TrainLoss))
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
		t.train.finish(stop)
		t.eval = startPhase(t.e, "evaluate "+t.spec, 1)
	}
}

// end ends the phases when training returned with err.
func (t *passes) end(err error) {
	if err != nil {
		t.train.abort()
		if t.eval != nil {
			t.eval.abort()
		}
		return
	}
	t.train.finish("")
	if t.eval != nil {
		t.eval.finish("")
	}
}
