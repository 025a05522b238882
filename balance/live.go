package balance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"colo/ps/route"
	"colo/ps/server"
	"colo/ps/worker"
)

// Config configures the load balancing of a running job of co-located
// machines (package train runs it; see docs/balance.md).
type Config struct {
	// Scheme is Average, Elastic, Aware or Oracle.
	Scheme string `json:"scheme"`
	// Every is the number of rounds between two decisions (seed 002: 1).
	Every int `json:"every"`
	// Slice is the granularity x in keys: shares are whole slices.
	Slice uint64 `json:"slice"`
	// Auto, when set, measures α on the running system before the first
	// decision and uses Eq. 4's slice from then on (Report.Calibration);
	// Slice is used only if α cannot be measured.
	Auto bool `json:"slice_auto,omitempty"`
	// Probe is the least number of keys of every server, its probe slice
	// (Alg. 2): an idle server still answers pulls, so its links stay
	// measured.
	Probe uint64 `json:"probe"`
	// Smoothing is the weight of the last window in the moving averages
	// of the link throughputs (1: the last window alone).
	Smoothing float64 `json:"smoothing"`
	// Jump, when above 1, is the factor by which a window's speed must
	// differ from the moving average for the average to restart from it:
	// a link whose rate changed is followed at once rather than over
	// several windows (0: always average).
	Jump float64 `json:"jump,omitempty"`
	// MinGain is the least fraction of the round time a new distribution
	// must save, by the scheme's own model, to be worth a move: below it
	// the keys stay (the role of Alg. 1's similarity_threshold), so that
	// noise in the measurements does not move keys back and forth.
	MinGain float64 `json:"min_gain"`
	// Horizon, when positive, is the number of rounds over which a move
	// must pay for itself: Aware and Oracle move only when the round time
	// saved, times Horizon, exceeds the time the moving keys take to
	// leave their servers at the speeds measured (MoveValues values a
	// key). 0 leaves the cost of moving out.
	Horizon int `json:"horizon"`
}

// DefaultConfig returns Average, deciding every round, slices of 1,024
// keys, probe slices of 1,024 keys, a smoothing of 0.5 that restarts on a
// jump of 1.5 times, and moves that
// save at least 5% and pay for themselves within 10 rounds.
func DefaultConfig() Config {
	return Config{Scheme: Average, Every: 1, Slice: 1024, Probe: 1024, Smoothing: 0.5, Jump: 1.5, MinGain: 0.05, Horizon: 10}
}

// Validate checks c; errors name the field.
func (c Config) Validate() error {
	if err := CheckScheme(c.Scheme); err != nil {
		return err
	}
	switch {
	case c.Every < 1:
		return fmt.Errorf("balance every %d rounds: want at least 1", c.Every)
	case c.Slice < 1:
		return fmt.Errorf("slice of %d keys: want at least 1", c.Slice)
	case !(c.Smoothing > 0 && c.Smoothing <= 1):
		return fmt.Errorf("smoothing %v: want (0, 1]", c.Smoothing)
	case c.Jump != 0 && !(c.Jump > 1) || math.IsInf(c.Jump, 1):
		return fmt.Errorf("jump %v: want 0 (always average) or a finite factor > 1", c.Jump)
	case !(c.MinGain >= 0 && c.MinGain < 1):
		return fmt.Errorf("min gain %v: want [0, 1)", c.MinGain)
	case c.Horizon < 0:
		return fmt.Errorf("horizon %d rounds: want 0 (moves are free) or more", c.Horizon)
	}
	return nil
}

// Decision is what one decision of the balancer saw and did.
type Decision struct {
	Round int `json:"round"`
	// Seconds is the mean time of the rounds since the previous decision
	// (on this worker), SRIT in the seed's words.
	Seconds float64 `json:"round_seconds"`
	// Speeds are the nodes' aggregate speeds S_i in keys per second (Eq.
	// 8) the decision used: measured (Aware), true (Oracle), none
	// (Average, Elastic).
	Speeds []float64 `json:"speeds,omitempty"`
	// Keys are the keys of each server after the decision.
	Keys []uint64 `json:"keys"`
	// Moved is the number of keys that changed server.
	Moved uint64 `json:"moved"`
	// Stale counts the links without a measurement in the window, whose
	// last estimate was used.
	Stale int `json:"stale,omitempty"`
}

// Report is what the balancer of worker 0 did during a job.
type Report struct {
	Config    Config     `json:"config"`
	Decisions []Decision `json:"decisions"`
	// KeysMoved is the keys moved in all; ControlBytes the bytes of the
	// measurements the workers exchanged (an all-reduce per decision).
	KeysMoved    uint64 `json:"keys_moved"`
	ControlBytes int64  `json:"control_bytes"`
	// Calibration is what Config.Auto measured, nil without it.
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Balancer re-decides the load distribution of a job of N co-located
// machines every Config.Every rounds and moves the keys
// (worker.Worker.Retable). Every worker has one and calls AfterRound
// after each round; the measurements are exchanged in an all-reduce, so
// every balancer takes the same decision. A Balancer is used by one
// goroutine.
type Balancer struct {
	cfg   Config
	n     int
	keys  uint64
	truth func() [][]float64
	// Estimates: the moving average of S_j, node j's speed of sending
	// in keys per second, -1 before the first measurement; the elastic
	// history of (load, time) per server.
	est     []float64
	hist    [][2][]float64
	prev    []worker.LinkTiming
	egress  func() server.Egress
	prevOut server.Egress
	version uint64
	last    time.Time
	lastRnd int
	untimed bool // the window since last starts with the untimed round
	report  Report
}

// New returns the balancer of a worker of a job of n machines and a
// model of keys keys. truth, for Oracle, returns the true link rates in
// bytes per second (truth()[j][i] from node j to node i, the diagonal
// ignored) at the time of the call; worker 0's are the ones every
// balancer uses.
//
// egress, when not nil, returns the counters of the server beside the
// worker (server.Server.Stats().Egress): the time it spent sending its
// answers, the best measure of a node's speed of sending. Without it the
// speeds come from the workers' timings of their pulls, which also count
// the time a request waits behind other traffic on its own machine.
func New(cfg Config, n int, keys uint64, truth func() [][]float64, egress func() server.Egress) (*Balancer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Scheme == Oracle && truth == nil {
		return nil, fmt.Errorf("balance scheme oracle: the deployment does not know the true link rates")
	}
	if cfg.Slice > keys {
		return nil, fmt.Errorf("balance: slice of %d keys: the model has %d", cfg.Slice, keys)
	}
	if uint64(n)*cfg.Probe > keys {
		return nil, fmt.Errorf("balance: %d servers of %d probe keys need %d keys, the model has %d", n, cfg.Probe, uint64(n)*cfg.Probe, keys)
	}
	b := &Balancer{cfg: cfg, n: n, keys: keys, truth: truth, egress: egress, est: slices.Repeat([]float64{-1}, n), hist: make([][2][]float64, n)}
	b.report.Config = cfg
	return b, nil
}

// Report returns what the balancer did.
func (b *Balancer) Report() Report { return b.report }

// keysOf returns the number of keys of the model each server holds in
// the Ranges table t.
func (b *Balancer) keysOf(t *route.Table) []uint64 {
	keys := make([]uint64, b.n)
	for s := range keys {
		lo, hi, _ := t.Range(s)
		keys[s] = min(hi, b.keys) - min(lo, b.keys)
	}
	return keys
}

// roundSeconds returns the mean time of the rounds since the last
// decision, 0 for the first window when it is the first round alone.
func (b *Balancer) roundSeconds(now time.Time, round int) float64 {
	if b.untimed {
		b.untimed = false
		if round-b.lastRnd <= 1 {
			return 0
		}
	}
	return now.Sub(b.last).Seconds() / float64(max(1, round-b.lastRnd))
}

// histLen is the number of windows the elastic fit looks back.
const histLen = 8

// AfterRound is called by the worker's training loop after round (the
// count of rounds so far); every Config.Every rounds it exchanges the
// workers' measurements, decides the shares and moves the keys.
func (b *Balancer) AfterRound(ctx context.Context, w *worker.Worker, round int) error {
	if b.last.IsZero() {
		// The first round is not timed: its start is not seen here.
		b.last, b.lastRnd, b.untimed = time.Now(), round-1, true
	}
	if round%b.cfg.Every != 0 {
		return nil
	}
	n, me := b.n, w.Rank()
	if k := w.Table().Kind(); k != route.Ranges {
		return fmt.Errorf("balance: the servers own %s of keys; balancing moves ranges (a dense model's placement)", k)
	}
	if b.cfg.Scheme == Average { // the round times alone: no exchange, no move
		d := Decision{Round: round, Seconds: b.roundSeconds(time.Now(), round)}
		d.Keys = b.keysOf(w.Table())
		b.report.Decisions = append(b.report.Decisions, d)
		b.last, b.lastRnd = time.Now(), round
		return nil
	}
	links := w.Stats().Links
	if len(links) != n || w.Servers() != n {
		return fmt.Errorf("balance: %d servers and %d workers: balancing runs on co-located machines", w.Servers(), n)
	}
	if b.prev == nil {
		b.prev = make([]worker.LinkTiming, n)
	}
	if b.cfg.Auto && b.report.Calibration == nil {
		// The calibration's pulls and time are kept out of the window's
		// measurements and round time.
		var out server.Egress
		if b.egress != nil {
			out = b.egress()
		}
		before := w.Stats().Links
		t0 := time.Now()
		c, err := b.calibrate(ctx, w)
		if err != nil {
			return fmt.Errorf("balance: %w", err)
		}
		b.last = b.last.Add(time.Since(t0))
		b.report.Calibration = &c
		b.cfg.Slice = c.Slice
		links = w.Stats().Links
		for j := range links {
			b.prev[j].Bytes += links[j].Bytes - before[j].Bytes
			b.prev[j].Nanos += links[j].Nanos - before[j].Nanos
		}
		if b.egress != nil {
			e := b.egress()
			b.prevOut.Bytes += e.Bytes - out.Bytes
			b.prevOut.Nanos += e.Nanos - out.Nanos
		}
	}
	// Row-major N×N bytes, then nanoseconds, of the pulls from server j
	// to worker i in the window: this worker fills column me. Then the
	// bytes and nanoseconds of each node's server's sending (egress),
	// this worker filling its node's. For Oracle, worker 0 adds the true
	// rates of the moment, so that every worker decides on the same
	// ones.
	size, eg, or := 2*n*n+2*n, 2*n*n, 2*n*n+2*n
	if b.cfg.Scheme == Oracle {
		size += n * n
	}
	v := make([]float64, size)
	for j, l := range links {
		v[j*n+me] = float64(l.Bytes - b.prev[j].Bytes)
		v[n*n+j*n+me] = float64(l.Nanos - b.prev[j].Nanos)
	}
	if b.egress != nil {
		e := b.egress()
		v[eg+me], v[eg+n+me] = float64(e.Bytes-b.prevOut.Bytes), float64(e.Nanos-b.prevOut.Nanos)
		b.prevOut = e
	}
	if b.cfg.Scheme == Oracle && me == 0 {
		rates := b.truth()
		for j := range n {
			for i := range n {
				if i != j && j < len(rates) && i < len(rates[j]) {
					v[or+j*n+i] = rates[j][i]
				}
			}
		}
	}
	copy(b.prev, links)
	sum, err := w.AllReduce(ctx, v)
	if err != nil {
		return fmt.Errorf("balance: exchanging the measurements: %w", err)
	}
	now := time.Now()
	d := Decision{Round: round, Seconds: b.roundSeconds(now, round)}
	b.report.ControlBytes += int64(8 * len(v))
	old := w.Table()
	cur := make([]float64, n)
	for s, k := range b.keysOf(old) {
		cur[s] = float64(k)
	}
	var shares []float64
	// predict returns the round time of shares by the scheme's model.
	var predict func(m []float64) float64
	switch b.cfg.Scheme {
	case Oracle:
		d.Speeds = make([]float64, n)
		for j := range n {
			for i := range n {
				if i != j {
					d.Speeds[j] += sum[or+j*n+i] / 4
				}
			}
		}
		model := Model{M: float64(b.keys), S: d.Speeds}
		predict = model.RoundTime
		shares, err = model.Solve()
	case Aware:
		d.Stale = b.measure(sum)
		d.Speeds = make([]float64, n)
		for j, e := range b.est {
			d.Speeds[j] = max(e, 0)
		}
		model := Model{M: float64(b.keys), S: d.Speeds}
		predict = model.RoundTime
		shares, err = model.Solve()
	case Elastic:
		lines := make([]Line, n)
		for j := range n {
			var t float64
			if out := sum[eg+n+j]; out > 0 {
				t = out / 1e9 / float64(max(1, round-b.lastRnd)) // sending time per round
			} else {
				for i := range n {
					if i != j {
						t += sum[n*n+j*n+i] / 1e9
					}
				}
				t /= float64(max(1, (n-1)*(round-b.lastRnd)))
			}
			h := &b.hist[j]
			h[0], h[1] = append(h[0], cur[j]), append(h[1], t)
			if len(h[0]) > histLen {
				h[0], h[1] = h[0][1:], h[1][1:]
			}
			lines[j] = Fit(h[0], h[1])
		}
		shares = Level(lines, float64(b.keys))
		predict = func(m []float64) float64 {
			t := 0.0
			for j, l := range lines {
				t = max(t, l.A+l.B*m[j])
			}
			return t
		}
	}
	if err != nil {
		return fmt.Errorf("balance: %s: %w", b.cfg.Scheme, err)
	}
	starts, err := Starts(shares, b.keys, b.cfg.Slice, b.cfg.Probe)
	if err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	next, err := route.FromRanges(starts, b.keys)
	if err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	keysOf := func(st []uint64) []float64 {
		m := make([]float64, n)
		for s := range n {
			end := b.keys
			if s+1 < n {
				end = st[s+1]
			}
			m[s] = float64(end - st[s])
		}
		return m
	}
	worth := true
	if predict != nil {
		before, after := predict(cur), predict(keysOf(starts))
		worth = after < before*(1-b.cfg.MinGain) || math.IsInf(before, 1) || math.IsNaN(before)
		if worth && d.Speeds != nil && b.cfg.Horizon > 0 && !math.IsInf(before, 1) {
			worth = (before-after)*float64(b.cfg.Horizon) > moveSeconds(old, next, d.Speeds)
		}
	}
	after := old // the table after the decision
	if worth && !slices.Equal(starts, old.Starts()) {
		after = next
		b.version++
		if _, err := w.Retable(ctx, next, b.version); err != nil {
			return fmt.Errorf("balance: %w", err)
		}
		moves, _ := worker.Moves(old, next)
		for _, m := range moves {
			d.Moved += m.End - m.Begin
		}
	}
	d.Keys = b.keysOf(after)
	b.report.KeysMoved += d.Moved
	b.report.Decisions = append(b.report.Decisions, d)
	b.last, b.lastRnd = time.Now(), round
	return nil
}

// MoveValues is the number of values a moving key carries that
// moveSeconds counts: its value and the two states of Adam, the most any
// update rule keeps (SGD and momentum carry fewer).
const MoveValues = 3

// moveSeconds estimates how long moving the keys from table old to next
// takes: each moving range leaves its server at that node's speed
// (keys per second), the ranges of one server one after another, the
// servers at once.
func moveSeconds(old, next *route.Table, speeds []float64) float64 {
	moves, err := worker.Moves(old, next)
	if err != nil {
		return math.Inf(1)
	}
	per := make([]float64, len(speeds))
	for _, m := range moves {
		if m.From < len(per) {
			per[m.From] += float64(m.End-m.Begin) * MoveValues
		}
	}
	var t float64
	for j, keys := range per {
		if keys > 0 {
			if speeds[j] <= 0 {
				return math.Inf(1)
			}
			t = max(t, keys/speeds[j])
		}
	}
	return t
}

// measure folds the window's measurements into the moving averages of
// the nodes' speeds and returns the number of nodes without a
// measurement, whose last estimate stays. Node j's speed in the window is
// the bytes its server sent over the time it spent sending them (its
// egress timing); without one, the bytes of its answers to the other
// workers' pulls over the longest of them, as the workers timed them
// (sum: bytes then nanoseconds, N×N, from server j to worker i). Either
// is Eq. 8's sum of the links' throughputs, each timed as Eq. 6 times a
// transfer, from its start to its end.
func (b *Balancer) measure(sum []float64) (stale int) {
	n := b.n
	eg := 2 * n * n
	for j := range n {
		bytes, longest := sum[eg+j], sum[eg+n+j] // the server's own timing
		if longest <= 0 {
			bytes = 0
			for i := range n {
				if i != j {
					bytes += sum[j*n+i]
					longest = max(longest, sum[n*n+j*n+i])
				}
			}
		}
		if bytes <= 0 || longest <= 0 {
			stale++
			continue
		}
		s := bytes / 4 / (longest / 1e9)
		if e := b.est[j]; e < 0 || b.cfg.Jump > 1 && (s > e*b.cfg.Jump || s*b.cfg.Jump < e) {
			b.est[j] = s
		} else {
			b.est[j] = (1-b.cfg.Smoothing)*e + b.cfg.Smoothing*s
		}
	}
	return stale
}
