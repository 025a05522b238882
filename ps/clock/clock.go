// Package clock is the consistency clock of the parameter server: a pure,
// single-threaded state machine that a server drives with the pushes it
// receives and that says when each push may be acknowledged.
//
// Training runs in rounds: a worker pulls, computes and pushes, and its
// push ends the round. Worker w has pushed Done(w) rounds; the slowest
// worker has pushed Min() rounds. The three consistency models of the
// parameter server (seed 001 §2.3, seed 004 §II-B and §II-D) differ only
// in how far ahead of the slowest worker a worker may run:
//
//   - BSP (bulk synchronous): a worker starts round r+1 only when every
//     worker has pushed round r, and (on the server) the round's pushes
//     are aggregated and applied together before any is acknowledged.
//     Delay 0.
//   - Bounded delay τ (stale synchronous): a worker starts round r only
//     when the slowest has pushed r−τ rounds, so no worker is more than τ
//     rounds ahead of the slowest. Pushes are applied as they arrive.
//   - Asynchronous: no wait at all (τ = ∞).
//
// The server acknowledges the push of round r from a worker once
// Min() ≥ r+1−τ; a worker sends nothing of round r+1 before every server
// acknowledged its push of round r. So when a worker starts round r+1 the
// slowest worker has pushed at least r+1−τ rounds everywhere.
//
// The clock counts rounds, never time, so its tests need no sleeps.
// Push costs O(W) for W workers in the worst case and amortised O(1)
// when workers advance together.
package clock

import (
	"cmp"
	"fmt"
	"slices"
)

// Mode is a consistency model.
type Mode uint8

// Consistency models.
const (
	BSP Mode = iota
	Async
	Bounded
)

// String returns the mode's name as the CLI spells it.
func (m Mode) String() string {
	switch m {
	case BSP:
		return "bsp"
	case Async:
		return "async"
	case Bounded:
		return "bounded"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode reads "bsp", "async" or "bounded".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{BSP, Async, Bounded} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown consistency %q (bsp, async or bounded)", s)
}

// Config is a consistency model.
type Config struct {
	Mode Mode
	// Tau is the bound on the delay in rounds of Bounded, at least 1
	// (Bounded with τ = 0 is BSP without aggregation).
	Tau int
}

// DefaultConfig returns BSP.
func DefaultConfig() Config { return Config{Mode: BSP} }

// MaxTau bounds Tau.
const MaxTau = 1 << 20

// Validate checks c; errors name the field and the bound.
func (c Config) Validate() error {
	switch c.Mode {
	case BSP, Async:
		if c.Tau != 0 {
			return fmt.Errorf("clock: Tau %d is only for the bounded mode, not %s", c.Tau, c.Mode)
		}
	case Bounded:
		if c.Tau < 1 || c.Tau > MaxTau {
			return fmt.Errorf("clock: Tau %d out of range [1, %d] for the bounded mode", c.Tau, MaxTau)
		}
	default:
		return fmt.Errorf("clock: Mode %d is not bsp, async or bounded", c.Mode)
	}
	return nil
}

// Delay returns how many rounds a worker may run ahead of the slowest:
// 0 for BSP, Tau for Bounded and -1 (unbounded) for Async.
func (c Config) Delay() int {
	switch c.Mode {
	case Async:
		return -1
	case Bounded:
		return c.Tau
	}
	return 0
}

// String returns "bsp", "async" or "bounded(τ=3)".
func (c Config) String() string {
	if c.Mode == Bounded {
		return fmt.Sprintf("bounded(τ=%d)", c.Tau)
	}
	return c.Mode.String()
}

// Name returns the model as the command line and a job file spell it:
// "bsp", "async" or "ssp:τ" (bounded delay τ, stale synchronous parallel).
func (c Config) Name() string {
	if c.Mode == Bounded {
		return fmt.Sprintf("ssp:%d", c.Tau)
	}
	return c.Mode.String()
}

// Parse reads a model as Name writes it: bsp, async or ssp:τ with τ ≥ 1.
func Parse(s string) (Config, error) {
	switch s {
	case "bsp":
		return Config{Mode: BSP}, nil
	case "async":
		return Config{Mode: Async}, nil
	}
	var tau int
	if _, err := fmt.Sscanf(s, "ssp:%d", &tau); err == nil && fmt.Sprintf("ssp:%d", tau) == s {
		c := Config{Mode: Bounded, Tau: tau}
		if err := c.Validate(); err != nil {
			return c, fmt.Errorf("consistency %q: %w", s, err)
		}
		return c, nil
	}
	return Config{}, fmt.Errorf("consistency %q: want bsp, async or ssp:τ with τ ≥ 1", s)
}

// MarshalText writes c as Name does, so that a job file holds "ssp:3".
func (c Config) MarshalText() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return []byte(c.Name()), nil
}

// UnmarshalText reads c as Parse does.
func (c *Config) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Ack is a push that may be acknowledged: worker's push of round Round.
type Ack struct {
	Worker int
	Round  int64
}

// Clock tracks the rounds pushed by each worker. It is not safe for
// concurrent use.
type Clock struct {
	delay   int
	done    []int64
	min     int64
	atMin   int // workers whose done is min
	pending []Ack
	out     []Ack // the result of the last Push
}

// New returns the clock of a server with the given number of workers.
func New(workers int, cfg Config) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if workers < 1 {
		return nil, fmt.Errorf("clock: %d workers, at least 1", workers)
	}
	return &Clock{delay: cfg.Delay(), done: make([]int64, workers), atMin: workers}, nil
}

// Workers returns the number of workers.
func (c *Clock) Workers() int { return len(c.done) }

// Min returns the number of rounds the slowest worker has pushed.
func (c *Clock) Min() int64 { return c.min }

// Done returns the number of rounds worker w has pushed.
func (c *Clock) Done(w int) int64 { return c.done[w] }

// Complete reports whether every worker has pushed round r.
func (c *Clock) Complete(r int64) bool { return c.min > r }

// Lead returns how many rounds a worker in round r is ahead of the
// slowest worker: r − Min().
func (c *Clock) Lead(r int64) int64 { return r - c.min }

// MayStart reports whether a worker may start round r: Lead(r) ≤ delay.
func (c *Clock) MayStart(r int64) bool { return c.delay < 0 || c.Lead(r) <= int64(c.delay) }

// Completes reports whether worker w's push of round r, in order (r is
// Done(w)), is the last push of round r: every other worker has pushed
// it. O(1).
func (c *Clock) Completes(w int, r int64) bool {
	return w >= 0 && w < len(c.done) && r == c.done[w] && r == c.min && c.atMin == 1
}

// Pending returns the number of pushes not yet acknowledged.
func (c *Clock) Pending() int { return len(c.pending) }

// Push records worker w's push of round r, which must be the round after
// its previous push (in asynchronous mode, any later round: a worker
// pushes only to the servers it has keys for), and returns the pushes that may now be acknowledged
// (this one or earlier ones, by increasing round then worker). The
// returned slice is reused by the next call.
func (c *Clock) Push(w int, r int64) ([]Ack, error) {
	if w < 0 || w >= len(c.done) {
		return nil, fmt.Errorf("clock: push from worker %d of %d", w, len(c.done))
	}
	if c.delay < 0 && r > c.done[w] {
		// Asynchronous workers skip servers they have nothing for.
		c.done[w] = r
		c.recount()
	}
	if r != c.done[w] {
		return nil, fmt.Errorf("clock: worker %d pushed round %d, expected round %d", w, r, c.done[w])
	}
	c.done[w]++
	if r == c.min {
		c.atMin--
		if c.atMin == 0 {
			c.recount()
		}
	}
	if c.delay < 0 {
		c.out = append(c.out[:0], Ack{w, r})
		return c.out, nil
	}
	c.pending = append(c.pending, Ack{w, r})
	return c.release(), nil
}

// recount recomputes the minimum and how many workers are at it.
func (c *Clock) recount() {
	c.min = slices.Min(c.done)
	c.atMin = 0
	for _, d := range c.done {
		if d == c.min {
			c.atMin++
		}
	}
}

// release returns the pending pushes that may now be acknowledged.
func (c *Clock) release() []Ack {
	// Acknowledge round r once Min ≥ r+1−delay: the worker may then
	// start round r+1.
	out := c.out[:0]
	keep := c.pending[:0]
	for _, a := range c.pending {
		if a.Round+1-int64(c.delay) <= c.min {
			out = append(out, a)
		} else {
			keep = append(keep, a)
		}
	}
	c.pending = keep
	c.out = out
	slices.SortFunc(out, func(a, b Ack) int {
		if c := cmp.Compare(a.Round, b.Round); c != 0 {
			return c
		}
		return cmp.Compare(a.Worker, b.Worker)
	})
	return out
}
