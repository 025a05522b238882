// Package progress reports the phases of a long command (loading,
// partitioning, training, evaluation): on a terminal as bars (mpb), off
// it as plain lines, so that the logs of CI jobs and clusters show
// progress too. A Phase costs O(1) per report.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Phase is one named phase of a long command (loading, partitioning,
// training, evaluation). On a terminal it draws a bar (mpb) that ends at
// 100% when the phase finishes, early or not; elsewhere it writes one
// plain line per step and one when it finishes, so that the logs of CI
// jobs and clusters show progress. It is safe for use from several
// goroutines.
type Phase struct {
	w        io.Writer
	terminal bool
	name     string
	start    time.Time

	mu          sync.Mutex
	done, total int64
	note        string
	quarter     int64 // the last quarter written as a line
	finished    bool

	p   *mpb.Progress // nil when not a terminal
	bar *mpb.Bar
}

// Start starts the phase name of total units (0: unknown yet), writing
// to w, with a bar when w is a terminal.
func Start(w io.Writer, terminal bool, name string, total int64) *Phase {
	ph := &Phase{w: w, terminal: terminal, name: name, start: time.Now(), total: total}
	if !terminal {
		return ph
	}
	ph.p = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithRefreshRate(150*time.Millisecond))
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

// Line writes one plain line when not on a terminal.
func (ph *Phase) Line(format string, args ...any) {
	if ph.terminal {
		return
	}
	fmt.Fprintf(ph.w, "%s: %s, %.1f s\n", ph.name, fmt.Sprintf(format, args...), time.Since(ph.start).Seconds())
}

// Set records done out of total units; the done never falls. Off a
// terminal it writes a line at each quarter.
func (ph *Phase) Set(done, total int64) {
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
		ph.Line("%d%%", 25*q)
	}
}

// Step records a step (a training pass) with its note, such as the
// loss: on a terminal in the bar, elsewhere as a line "pass 3/200, loss
// 0.5231".
func (ph *Phase) Step(what string, done, total int64, note string) {
	ph.mu.Lock()
	ph.note = note
	ph.quarter = 4 // steps have lines of their own
	ph.mu.Unlock()
	ph.Set(done, total)
	if note != "" {
		note = ", " + note
	}
	ph.Line("%s %d/%d%s", what, done, total, note)
}

// Event notes a named part of the phase that ended (a start of best).
func (ph *Phase) Event(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ph.mu.Lock()
	ph.note = msg
	ph.mu.Unlock()
	ph.Line("%s", msg)
}

// Finish ends the phase at 100%, with a note saying how (such as
// "stopped at ε after pass 37 of 200"); on a terminal it waits for the
// bar's last frame. A phase finishes once.
func (ph *Phase) Finish(note string) {
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
	ph.Line("done%s", note)
}

// Abort ends the phase that failed: the bar stays where it was.
func (ph *Phase) Abort() {
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

// Fraction is the part of the phase done, 1 once it finished.
func (ph *Phase) Fraction() float64 {
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
