package server

import (
	"fmt"

	"colo/kv"
)

// Aggregation in BSP. Float32 addition is not associative, so a sum
// formed in the order pushes arrive would make the model depend on the
// network. The core therefore holds each valid push of a round (a copy:
// the request's arrays go back to the transport's pool after Handle) and,
// when the round's last push arrives, adds the round's pushes to the
// store's accumulator in worker rank order, whatever the order they came
// in, and flushes. The push that completes the round is summed straight
// from the request. Each worker's buffers are reused from round to round,
// so the steady state does not allocate; they cost the server at most one
// push per worker of memory beyond the store.
//
// The clock takes one push per worker and round, so a worker has one held
// push in the normal course; a worker that pushes its next round before
// the round completes (which the worker never does) gets a second, kept
// for that round.

// held is a copy of a valid push awaiting the end of its round.
type held struct {
	round int64
	rng   bool     // a range push: kv.Keys is {begin, end}
	kv    kv.Batch // views of the buffers below
	keys  []uint64
	vals  []float32
	lens  []int32
}

// pushBSP handles a well-formed push request under BSP: it checks the
// push against the store at once, counts the round and holds the push, or
// sums the round when the push completes it.
func (c *Core) pushBSP(r Request, begin, end uint64) []Reply {
	var err error
	if r.Range {
		c.stats.KeysPushed += end - begin
		if n := uint64(len(r.KV.Vals)); c.cfg.Width > 0 && n != (end-begin)*uint64(c.cfg.Width) {
			err = fmt.Errorf("range [%d, %d) pushed with %d values of width %d", begin, end, n, c.cfg.Width)
		} else {
			err = c.store.checkRange(begin, r.KV.Vals)
		}
	} else {
		c.stats.KeysPushed += uint64(len(r.KV.Keys))
		err = c.store.check(r.KV)
	}
	if err != nil {
		// The clock still counts the round, so that others do not wait
		// for a push that will never come; the worker gets the error.
		c.out = append(c.out, Reply{Worker: r.Worker, ID: r.ID, Err: fmt.Errorf("server %d: %w", c.cfg.Rank, err)})
		c.stats.Errors++
	}
	before := c.clock.Min()
	acks, cerr := c.clock.Push(r.Worker, r.Round)
	if cerr != nil {
		if err != nil {
			return c.out
		}
		c.stats.Errors++
		return append(c.out, Reply{Worker: r.Worker, ID: r.ID, Err: fmt.Errorf("server %d: %w", c.cfg.Rank, cerr)})
	}
	c.ids[r.Worker] = append(c.ids[r.Worker], pending{id: r.ID, answered: err != nil})
	switch {
	case c.clock.Min() > before:
		c.sumRound(before, r, err == nil)
	case err == nil:
		c.hold(r)
	}
	return c.release(acks)
}

// hold copies r's push into its worker's buffers.
func (c *Core) hold(r Request) {
	q := c.held[r.Worker]
	if len(q) < cap(q) {
		q = q[:len(q)+1]
	} else {
		q = append(q, held{})
	}
	h := &q[len(q)-1]
	h.round, h.rng = r.Round, r.Range
	h.keys = append(h.keys[:0], r.KV.Keys...)
	h.vals = append(h.vals[:0], r.KV.Vals...)
	h.kv = kv.Batch{Keys: h.keys, Vals: h.vals}
	if r.KV.Lens != nil {
		h.lens = append(h.lens[:0], r.KV.Lens...)
		h.kv.Lens = h.lens
	}
	c.held[r.Worker] = q
}

// sumRound adds the pushes of round to the accumulator in worker rank
// order, r's push (valid tells whether it is) in its worker's place, and
// applies the sum.
func (c *Core) sumRound(round int64, r Request, valid bool) {
	for w, q := range c.held {
		if w == r.Worker {
			if valid {
				c.accumulate(w, r.Range, r.KV)
			}
			continue
		}
		if len(q) == 0 || q[0].round != round {
			continue // its push of the round was refused
		}
		h := q[0]
		c.accumulate(w, h.rng, h.kv)
		// Keep the buffers of h at the end for reuse.
		copy(q, q[1:])
		q[len(q)-1] = h
		c.held[w] = q[:len(q)-1]
	}
	c.store.Flush()
}

// accumulate adds worker w's push of the completed round to the
// accumulator, whole or not at all. Only a per-key length can fail here:
// a key first pushed in this round by a worker of lower rank with another
// length; w's acknowledgement becomes the error.
func (c *Core) accumulate(w int, rng bool, b kv.Batch) {
	var err error
	if rng {
		err = c.store.PushRange(b.Keys[0], b.Vals, true)
	} else if err = c.store.check(b); err == nil {
		err = c.store.Accumulate(b)
	}
	if err != nil {
		c.ids[w][0].err = err
	}
}
