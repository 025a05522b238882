package server

import (
	"fmt"

	"colo/ps/route"
)

// Moving key ranges between servers (live re-assignment).
//
// A server can change the keys it owns while a job runs: Retable gives it
// a new routing table (a Ranges table, the form of dense models); it
// keeps the values and rule states of the keys it owns in both tables,
// starts the keys it gains at zero and keeps the store of the old table
// aside, from which Take hands out the keys it lost. Put installs keys it
// gained with the values and states another server's Take gave. The
// workers drive the moves between rounds (worker.Worker.Retable): no push
// is in flight, so no update is lost or applied twice, and under BSP the
// model is the same bit for bit as without the moves. From its first
// Retable on, a server refuses any request for keys of [0, NumKeys) that
// the current table does not give it, naming the table's version: a
// request routed by an old table is answered with an error, never
// applied to keys the server no longer owns.

// keyRange returns the keys [lo, hi) of a store whose index is one
// range.
func (s *Store) keyRange() (lo, hi uint64, ok bool) {
	if !s.ranged || s.width == 0 {
		return 0, 0, false
	}
	return s.lo, s.lo + uint64(s.size), true
}

// Export returns the values of the keys [lo, hi), which the store's
// index must hold as one run, followed by each rule state's values for
// them: (1 + rule.States()) × (hi − lo) × width values.
func (s *Store) Export(lo, hi uint64) ([]float32, error) {
	j, ok := s.rangeSlots(lo, hi)
	if !ok || s.width == 0 || hi < lo {
		return nil, fmt.Errorf("keys [%d, %d) are not held here", lo, hi)
	}
	a, b := j*s.width, (j+int(hi-lo))*s.width
	out := make([]float32, 0, (1+len(s.state))*(b-a))
	out = append(out, s.vals[a:b]...)
	for _, st := range s.state {
		out = append(out, st[a:b]...)
	}
	return out, nil
}

// Import sets the values and rule states of the keys [lo, hi), which the
// store's index must hold as one run, from data laid out as Export's.
func (s *Store) Import(lo, hi uint64, data []float32) error {
	j, ok := s.rangeSlots(lo, hi)
	if !ok || s.width == 0 || hi < lo {
		return fmt.Errorf("keys [%d, %d) are not held here", lo, hi)
	}
	a, b := j*s.width, (j+int(hi-lo))*s.width
	n := b - a
	if len(data) != (1+len(s.state))*n {
		return fmt.Errorf("%d values for keys [%d, %d): want %d (values and %d states of width %d)", len(data), lo, hi, (1+len(s.state))*n, len(s.state), s.width)
	}
	copy(s.vals[a:b], data[:n])
	for i, st := range s.state {
		copy(st[a:b], data[(1+i)*n:(2+i)*n])
	}
	return nil
}

// carry copies from old the values and rule states of the keys both
// stores hold.
func (s *Store) carry(old *Store) {
	a0, a1, ok1 := old.keyRange()
	b0, b1, ok2 := s.keyRange()
	lo, hi := max(a0, b0), min(a1, b1)
	if !ok1 || !ok2 || lo >= hi {
		return
	}
	data, _ := old.Export(lo, hi)
	s.Import(lo, hi, data)
}

// owns reports whether the keys [lo, hi) are one run of the store's
// slots.
func (s *Store) owns(lo, hi uint64) bool {
	_, ok := s.rangeSlots(lo, hi)
	return ok && hi >= lo
}

// retable switches the server to the Ranges table of r (KV.Keys: the
// version, NumKeys and the starts of every server), keeping the values
// and states of the keys it still owns. It fails, changing nothing, when
// pushes of an incomplete round are held (BSP): moves happen between
// rounds.
func (c *Core) retable(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID}
	c.since = 0 // keys change outside the marks: the next capture is whole
	fail := func(err error) []Reply {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: new routing table: %w", c.cfg.Rank, err)
		return append(c.out, reply)
	}
	if len(r.KV.Keys) != 2+c.cfg.Table.Servers() {
		return fail(fmt.Errorf("%d numbers, want the version, the number of keys and %d starts", len(r.KV.Keys), c.cfg.Table.Servers()))
	}
	version := r.KV.Keys[0]
	if version <= c.version {
		return fail(fmt.Errorf("version %d, the server has %d", version, c.version))
	}
	t, err := route.FromRanges(r.KV.Keys[2:], r.KV.Keys[1])
	if err != nil {
		return fail(err)
	}
	if c.store.width == 0 || len(c.store.extra) > 0 || len(c.store.fams) > 0 || !c.store.ranged {
		return fail(fmt.Errorf("the store's keys cannot move: only a uniform width and one range of keys can"))
	}
	if err := c.holding(); err != nil {
		return fail(err)
	}
	store := NewStore(t.Index(c.cfg.Rank), c.cfg.Width, c.cfg.Rule)
	if !store.ranged {
		return fail(fmt.Errorf("server %d's keys are not one range in the new table", c.cfg.Rank))
	}
	store.carry(c.store)
	c.old, c.store, c.table, c.version = c.store, store, t, version
	c.stats.Moves++
	c.stats.KeyShare = t.Share(c.cfg.Rank)
	return append(c.out, reply)
}

// take answers a worker's Take of keys [lo, hi) the server held before
// its last Retable: their values and rule states (Store.Export).
func (c *Core) take(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID, Pull: true}
	if len(r.KV.Keys) != 2 || c.old == nil {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: take of keys %v: nothing was moved away", c.cfg.Rank, r.KV.Keys)
		return append(c.out, reply)
	}
	data, err := c.old.Export(r.KV.Keys[0], r.KV.Keys[1])
	if err != nil {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: take: %w", c.cfg.Rank, err)
		return append(c.out, reply)
	}
	c.stats.KeysMoved += r.KV.Keys[1] - r.KV.Keys[0]
	reply.Vals = data
	return append(c.out, reply)
}

// put installs keys [lo, hi) that the server gained at its last Retable
// with the values and states a Take gave.
func (c *Core) put(r Request) []Reply {
	reply := Reply{Worker: r.Worker, ID: r.ID}
	c.since = 0 // keys change outside the marks: the next capture is whole
	err := fmt.Errorf("keys %v", r.KV.Keys)
	if len(r.KV.Keys) == 2 {
		err = c.store.Import(r.KV.Keys[0], r.KV.Keys[1], r.KV.Vals)
	}
	if err != nil {
		c.stats.Errors++
		reply.Err = fmt.Errorf("server %d: put: %w", c.cfg.Rank, err)
	}
	return append(c.out, reply)
}

// misrouted returns the error for a request of keys [lo, hi) that the
// current table gives to other servers, nil when the server owns them or
// has never been retabled (before that, keys outside the table's index
// get extra slots as always).
func (c *Core) misrouted(lo, hi uint64) error {
	if c.version == 0 || hi <= lo || c.store.owns(lo, hi) {
		return nil
	}
	if n := c.table.NumKeys(); n > 0 && lo >= n {
		return nil // beyond the placed keys: the last server's, as always
	}
	return fmt.Errorf("server %d does not own keys [%d, %d) in routing table version %d (server %d owns key %d)", c.cfg.Rank, lo, hi, c.version, c.table.Owner(lo), lo)
}
