package replica

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The simulation below runs one range of a BSP job on a primary and its
// backup through a network of FIFO links with random delivery order
// between links, kills the primary at a random step (the messages it had
// sent that are still on the wire are each delivered or lost), fails
// over to the backup, and trains to the end. No goroutines and no time:
// a seeded random choice of the next message to deliver.

// simWidth is the number of values of the range.
const simWidth = 3

// rule is the update rule both servers apply to a round's sum: not
// linear, so that applying a round twice, or two rounds in another
// order, would show.
func rule(v []float32, sum []float32) {
	for i := range v {
		v[i] = v[i]*0.75 + sum[i] + 0.01*v[i]*v[i]
	}
}

// grad is worker w's push of round r at the values it pulled.
func grad(w int, r int64, v []float32) []float32 {
	g := make([]float32, simWidth)
	for i := range g {
		g[i] = float32(math.Sin(float64(v[i])+float64(w)*1.3+float64(r)*0.7)) / float32(w+2)
	}
	return g
}

// msg is a message of the simulation.
type msg struct {
	kind   string // push, ack (to a worker), fwd (to the backup), bak (backup's ack)
	worker int
	round  int64
	vals   []float32 // push: the gradient; fwd: the round's sum
	seq    uint64
	pushes []Push
}

// link is a FIFO link.
type link struct {
	from, to string
	q        []msg
}

// sim is the state of one simulated run.
type sim struct {
	t       *testing.T
	rng     *rand.Rand
	workers int
	rounds  int64
	links   map[[2]string]*link
	// The servers: the primary's store, its BSP hold and its primary
	// state; the backup's copy and its record.
	primary, backup []float32
	held            map[int64][][]float32 // by round, per worker (owner's)
	prim            *Primary[msg]
	rep             *Replica
	dead            bool // the primary is dead
	failed          bool // the backup owns the range
	// async applies each push on arrival (update rule: the sum), and
	// lets a worker keep two pushes unacknowledged; BSP holds a round's
	// pushes and applies their sum, and a worker waits for each
	// acknowledgement.
	async bool
	// The workers: the next round each computes, and its pushes not yet
	// acknowledged (kept to be sent again), by round.
	round   []int64
	pending []map[int64][]float32
	steps   int // the rounds computed, over all workers
	// acked records the pushes acknowledged to workers, to check that
	// each was in the backup's copy when it was.
	lostAck string
}

func (s *sim) send(from, to string, m msg) {
	k := [2]string{from, to}
	l := s.links[k]
	if l == nil {
		l = &link{from: from, to: to}
		s.links[k] = l
	}
	l.q = append(l.q, m)
}

func worker(w int) string { return fmt.Sprintf("w%d", w) }

// owner returns the server that owns the range.
func (s *sim) owner() string {
	if s.failed {
		return "backup"
	}
	return "primary"
}

// compute has worker w compute its next rounds while it may (under BSP
// one at a time, at the owner's values: the pull of a BSP round sees
// every earlier round; under async two ahead, of values that do not
// depend on the model, so that the final sum is exact) and send them.
func (s *sim) compute(w int) {
	window := 1
	if s.async {
		window = 2
	}
	for s.round[w] < s.rounds && len(s.pending[w]) < window {
		r := s.round[w]
		var g []float32
		if s.async {
			g = make([]float32, simWidth)
			for i := range g {
				g[i] = float32((w+1)*(int(r)+1)*(i+1)) / 4
			}
		} else {
			v := s.primary
			if s.failed {
				v = s.backup
			}
			g = grad(w, r, v)
		}
		s.pending[w][r] = g
		s.round[w]++
		s.steps++
		s.send(worker(w), s.owner(), msg{kind: "push", worker: w, round: r, vals: g})
	}
}

// sum adds a round's pushes in worker rank order.
func sum(pushes [][]float32) []float32 {
	out := make([]float32, simWidth)
	for _, g := range pushes {
		for i := range out {
			out[i] += g[i]
		}
	}
	return out
}

// deliver handles message m on the link from → to.
func (s *sim) deliver(from, to string, m msg) {
	switch {
	case to == "primary" && m.kind == "push":
		s.hold(m, func(r int64, total []float32, pushes []Push) {
			s.apply(s.primary, total)
			var acks []msg
			for _, p := range pushes {
				acks = append(acks, msg{kind: "ack", worker: p.Worker, round: p.Round})
			}
			seq, rel := s.prim.Apply(acks)
			s.send("primary", "backup", msg{kind: "fwd", seq: seq, vals: total, pushes: pushes})
			s.release(rel)
		})
	case to == "primary" && m.kind == "bak":
		rel, err := s.prim.Acked(1, m.seq)
		if err != nil {
			s.t.Fatal(err)
		}
		s.release(rel)
	case to == "backup" && m.kind == "fwd":
		apply, err := s.rep.Update(m.seq, m.pushes)
		if err != nil {
			s.t.Fatal(err)
		}
		if apply {
			s.apply(s.backup, m.vals)
		}
		if !s.dead {
			s.send("backup", "primary", msg{kind: "bak", seq: s.rep.Applied()})
		}
	case to == "backup" && m.kind == "push":
		if s.rep.Has(m.worker, m.round) {
			// Sent again after the failover: the old primary had
			// replicated it.
			s.send("backup", worker(m.worker), msg{kind: "ack", worker: m.worker, round: m.round})
			return
		}
		s.hold(m, func(r int64, total []float32, pushes []Push) {
			s.apply(s.backup, total)
			if _, err := s.rep.Update(s.rep.Applied()+1, pushes); err != nil {
				s.t.Fatal(err)
			}
			for _, p := range pushes {
				s.send("backup", worker(p.Worker), msg{kind: "ack", worker: p.Worker, round: p.Round})
			}
		})
	case m.kind == "ack":
		w := m.worker
		if _, ok := s.pending[w][m.round]; !ok {
			if m.round >= s.round[w] {
				s.t.Fatalf("worker %d at round %d got the acknowledgement of round %d", w, s.round[w], m.round)
			}
			// The old primary's acknowledgement got out after the
			// worker sent the push again: the second answer to a
			// request already done is dropped.
			return
		}
		delete(s.pending[w], m.round)
		s.compute(w)
	default:
		s.t.Fatalf("no handler for %s from %s to %s", m.kind, from, to)
	}
}

// apply applies an update to a store: the rule under BSP, the sum under
// async.
func (s *sim) apply(v, update []float32) {
	if !s.async {
		rule(v, update)
		return
	}
	for i := range v {
		v[i] += update[i]
	}
}

// hold keeps the owner's push until the round is complete, then applies
// it with apply; under async it applies each push at once.
func (s *sim) hold(m msg, apply func(r int64, total []float32, pushes []Push)) {
	if s.async {
		apply(m.round, m.vals, []Push{{Worker: m.worker, Round: m.round}})
		return
	}
	h := s.held[m.round]
	if h == nil {
		h = make([][]float32, s.workers)
		s.held[m.round] = h
	}
	if h[m.worker] != nil {
		s.t.Fatalf("worker %d pushed round %d twice to the owner", m.worker, m.round)
	}
	h[m.worker] = m.vals
	for _, g := range h {
		if g == nil {
			return
		}
	}
	delete(s.held, m.round)
	pushes := make([]Push, s.workers)
	for w := range pushes {
		pushes[w] = Push{Worker: w, Round: m.round}
	}
	apply(m.round, sum(h), pushes)
}

// release sends acknowledgements the primary released, checking that
// each push is in the backup's copy.
func (s *sim) release(acks []msg) {
	for _, a := range acks {
		if !s.rep.Has(a.worker, a.round) && s.lostAck == "" {
			s.lostAck = fmt.Sprintf("worker %d's push of round %d acknowledged before the backup had it", a.worker, a.round)
		}
		s.send("primary", worker(a.worker), a)
	}
}

// fail kills the primary: each message it sent that is still on the
// wire is delivered or lost at random, its links close and its hold is
// lost; the backup owns the range, and every worker whose push is not
// acknowledged sends it again there.
func (s *sim) fail() {
	s.dead = true
	s.held = map[int64][][]float32{}
	for k, l := range s.links {
		switch {
		case k[1] == "primary":
			delete(s.links, k)
		case k[0] == "primary":
			// The kernel's buffer: a prefix of the messages gets out.
			l.q = l.q[:s.rng.IntN(len(l.q)+1)]
		}
	}
	// The backup takes over once it has read what the primary sent it,
	// up to the end of the link.
	if l := s.links[[2]string{"primary", "backup"}]; l != nil {
		for _, m := range l.q {
			s.deliver("primary", "backup", m)
		}
		delete(s.links, [2]string{"primary", "backup"})
	}
	s.failed = true
	for w := range s.round {
		var rs []int64
		for r := range s.pending[w] {
			rs = append(rs, r)
		}
		slices.Sort(rs)
		for _, r := range rs {
			s.send(worker(w), "backup", msg{kind: "push", worker: w, round: r, vals: s.pending[w][r]})
		}
	}
}

// run simulates the job, killing the primary after killAt deliveries
// (never when negative), and returns the final values of the owner and
// the rounds computed.
func run(t *testing.T, async bool, seed uint64, workers int, rounds int64, killAt int) ([]float32, int, string) {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 7)), workers: workers, rounds: rounds, links: map[[2]string]*link{},
		primary: make([]float32, simWidth), backup: make([]float32, simWidth), held: map[int64][][]float32{},
		prim: NewPrimary[msg]([]int{1}), rep: NewReplica(workers), async: async,
		round: make([]int64, workers), pending: make([]map[int64][]float32, workers)}
	for w := range s.pending {
		s.pending[w] = map[int64][]float32{}
	}
	for w := range workers {
		s.compute(w)
	}
	for n := 0; ; n++ {
		if n == killAt {
			s.fail()
		}
		var ready []*link
		for _, l := range s.links {
			if len(l.q) > 0 {
				ready = append(ready, l)
			}
		}
		if len(ready) == 0 {
			break
		}
		slices.SortFunc(ready, func(a, b *link) int {
			if c := cmpStr(a.from, b.from); c != 0 {
				return c
			}
			return cmpStr(a.to, b.to)
		})
		l := ready[s.rng.IntN(len(ready))]
		m := l.q[0]
		l.q = l.q[1:]
		s.deliver(l.from, l.to, m)
	}
	for w, r := range s.round {
		if r != rounds || len(s.pending[w]) > 0 {
			t.Fatalf("seed %d, kill at %d: worker %d ended at round %d of %d (rounds %v, held %v, replica %+v, failed %v)", seed, killAt, w, r, rounds, s.round, s.held, s.rep, s.failed)
		}
	}
	if s.failed {
		return s.backup, s.steps, s.lostAck
	}
	return s.primary, s.steps, s.lostAck
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestFailoverBSP kills the primary at every step of many seeded runs:
// no push is acknowledged before the backup has it, no worker computes a
// round twice, and the backup ends with the values of the run without
// failure, bit for bit.
func TestFailoverBSP(t *testing.T) {
	const workers, rounds = 3, 6
	want, steps, lost := run(t, false, 1, workers, rounds, -1)
	if lost != "" {
		t.Fatal(lost)
	}
	if steps != workers*rounds {
		t.Fatalf("%d rounds computed without failure, want %d", steps, workers*rounds)
	}
	for seed := range uint64(40) {
		for killAt := 0; killAt < 60; killAt++ {
			got, steps, lost := run(t, false, seed, workers, rounds, killAt)
			if lost != "" {
				t.Fatalf("seed %d, primary killed at step %d: %s", seed, killAt, lost)
			}
			if steps != workers*rounds {
				t.Fatalf("seed %d, primary killed at step %d: %d rounds computed, want %d", seed, killAt, steps, workers*rounds)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, primary killed at step %d: values %v, without failure %v", seed, killAt, got, want)
			}
		}
	}
}

// TestFailoverAsync does the same under asynchronous training, each push
// applied on arrival and forwarded alone, two pushes of each worker in
// flight: no push is acknowledged before the backup has it, and the
// backup ends with every push applied exactly once (the pushes are
// small multiples of 1/4, so that their sum is exact in any order).
func TestFailoverAsync(t *testing.T) {
	const workers, rounds = 3, 6
	want := make([]float32, simWidth)
	for w := range workers {
		for r := range rounds {
			for i := range want {
				want[i] += float32((w+1)*(r+1)*(i+1)) / 4
			}
		}
	}
	for seed := range uint64(40) {
		for killAt := -1; killAt < 60; killAt++ {
			got, steps, lost := run(t, true, seed, workers, rounds, killAt)
			if lost != "" {
				t.Fatalf("seed %d, primary killed at step %d: %s", seed, killAt, lost)
			}
			if steps != workers*rounds {
				t.Fatalf("seed %d, primary killed at step %d: %d rounds computed, want %d", seed, killAt, steps, workers*rounds)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, primary killed at step %d: values %v, want every push once: %v", seed, killAt, got, want)
			}
		}
	}
}
