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
// applies the sum. A round whose only push is r's (one worker, or the
// others' refused) is applied from r's values as the accumulator would
// hold them (Store.PushAlone), unless its sum is captured.
func (c *Core) sumRound(round int64, r Request, valid bool) {
	if valid && !c.capture && c.alone(round, r.Worker) {
		var err error
		if r.Range {
			err = c.store.pushRange(r.KV.Keys[0], r.KV.Vals, false, asSum)
		} else {
			// pushBSP checked r against the store, and no push of
			// the round came before it.
			err = c.store.PushAlone(r.KV)
		}
		if err != nil {
			c.ids[r.Worker][0].err = err
		}
		return
	}
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
	if c.capture {
		c.sum = c.store.appendSum(c.sum)
		c.summed = round
	}
	c.store.Flush()
}

// alone reports whether no worker but w holds a push of round.
func (c *Core) alone(round int64, w int) bool {
	for v, q := range c.held {
		if v != w && len(q) > 0 && q[0].round == round {
			return false
		}
	}
	return true
}

// Replication after aggregation (Li et al., OSDI'14 §4.3: "the server
// replicates the aggregated update instead of each push"). A core whose
// rounds are captured (a primary with backups, under BSP with a uniform
// width) copies each round's sum, the gradients its rule is about to be
// applied to, before it applies them: keys in slot order and their
// summed values (TakeSum). A backup's copy of the core applies the same
// sum with the same rule (ApplySum), and holds the same values and rule
// states bit for bit: the sum starts from zeros on both, and 0 + x is x
// in float32 for every sum a round can form (a sum is never −0: it
// starts at +0). One update a round crosses to each backup, a push's
// worth of values, instead of the W pushes.

// capturing reports whether the core captures its rounds' sums: under
// BSP, with a uniform width (at width 0 a key's values may be placed
// in the order of first pushes, which a sum in slot order would not
// reproduce).
func (c *Core) capturing() bool { return c.sync && c.cfg.Width > 0 }

// CaptureSums makes the core copy each round's sum for TakeSum, and
// reports whether it can (capturing).
func (c *Core) CaptureSums() bool {
	c.capture = c.capturing()
	return c.capture
}

// TakeSum returns the sum of the round the last Handle completed, when
// it completed one and the core captures sums: keys and values, valid
// until the next Handle. ok is false otherwise.
func (c *Core) TakeSum() (round int64, sum kv.Batch, ok bool) {
	if c.summed < 0 {
		return 0, kv.Batch{}, false
	}
	round, c.summed = c.summed, -1
	return round, c.sum, true
}

// ApplySum applies sum, the primary's sum of round (TakeSum), to a
// backup's copy: it adds it to the round's accumulator, applies it with
// the rule and counts the round for every worker, as the primary's
// sumRound did. It fails, changing nothing, when the copy does not sum
// rounds, when round is not the copy's next, or when sum is malformed.
func (c *Core) ApplySum(round int64, sum kv.Batch) error {
	if err := c.CheckSum(round, sum); err != nil {
		return err
	}
	if err := c.store.Accumulate(sum); err != nil {
		return fmt.Errorf("server %d: the sum of round %d: %w", c.cfg.Rank, round, err)
	}
	c.store.Flush()
	for w := range c.cfg.Workers {
		c.clock.Push(w, round) // the copy holds no acknowledgements
	}
	c.stats.Pushes += uint64(c.cfg.Workers)
	return nil
}

// CheckSum reports the error ApplySum would return for sum, changing
// nothing: a backup acknowledges a sum only once it knows it applies.
func (c *Core) CheckSum(round int64, sum kv.Batch) error {
	if !c.capturing() {
		return fmt.Errorf("server %d: a round's sum for a copy that does not sum rounds", c.cfg.Rank)
	}
	if m := c.clock.Min(); round != m || c.clock.Pending() > 0 {
		return fmt.Errorf("server %d: the sum of round %d, the copy is at round %d with %d pushes held", c.cfg.Rank, round, m, c.clock.Pending())
	}
	if err := c.store.check(sum); err != nil {
		return fmt.Errorf("server %d: the sum of round %d: %w", c.cfg.Rank, round, err)
	}
	return nil
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
