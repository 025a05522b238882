// Package replica is the protocol of replicated key ranges (Li et al.,
// "Scaling Distributed Machine Learning with the Parameter Server",
// OSDI'14, §4.3): each server's ranges, with their update rules' states,
// are kept on the r servers after it in rank order, its backups (Chain);
// an update the server applies is sent to every backup, each applies it
// in the same order, and the server acknowledges the pushes the update
// carried only once every live backup has acknowledged it (Apply), or,
// for a BSP round's sum, the update before it (ApplyAhead: the worker
// keeps the pushes of the rounds the backups do not have yet). So a
// push acknowledged to a worker is on r+1 servers, or still with its
// worker, and when the server dies the first live backup holds every
// update it acknowledged or gets the pushes again: it serves the ranges
// at once and nothing acknowledged is lost.
//
// Like the consistency clock (package clock), the protocol is a pure,
// single-threaded state machine with no network, clock or goroutine of
// its own:
//
//   - Primary is a server's side, as the owner of its ranges: Apply
//     numbers each update it applied and holds back its
//     acknowledgements until the backups have it, ApplyAhead until they
//     have the update before it; Acked (a backup's acknowledgement, cumulative:
//     updates travel in order on one link) and Down (a backup failed)
//     release them, in the order the updates were applied. Join adds
//     a new backup, made after a failover from a copy of the primary's
//     whole state: the updates after the copy wait for it too.
//   - Replica is a backup's side, one per server it backs up: Update
//     says whether an update is new (apply it) or one it already has
//     (acknowledge it again), and refuses one out of order; Has says
//     whether a worker's push of a round is already in the copy, so that
//     after a failover the new owner drops the pushes the workers send
//     again for rounds the old owner had replicated before dying, and
//     applies the others.
//   - Holders is a launcher's side: which server process serves each
//     rank's ranges after the failovers so far, and so whether the death
//     of a server process fails over, needs a replacement, or ends the
//     job, as the scheduler decides.
//
// A backup takes over a failed primary's ranges only once it has read
// everything the primary sent it (its link from the primary ended): an
// update still on the wire is applied first, so that the pushes the
// workers send again are judged against the whole copy. The simulation
// in the tests (TestFailoverBSP) kills the primary at every step of
// seeded runs, losing a random part of what it had sent, and checks that
// no push is acknowledged before the backup has it, that no worker
// computes a round twice and that the backup ends bit for bit with the
// values of the run without failure; TestFailoverAsync, under
// asynchronous training, that every push is applied exactly once.
//
// The update replicated is what the server applies: under BSP the sum
// of a round's pushes (replication after aggregation, as in the paper:
// one update per round instead of W), or each request as the server
// applied it. colo's servers (package ps/server, replicate.go) replicate
// the round's sum under BSP with a uniform width: the backup's copy of
// the server's state machine applies the sum with the same rule, and
// holds the same values and update rule states bit for bit. The round's
// acknowledgements go once the backups have the round before
// (ApplyAhead), so that the sum crosses while the next round is
// computed; each worker keeps its pushes of the rounds the backups may
// not have and sends them again to the backup that takes over, which
// sums the round from them as the primary did. Under bounded delay and
// asynchronous training, where a push is applied as it arrives, and at
// width 0, the servers replicate each request (Apply): the backup feeds
// it to a copy of the server's own state machine, and a push is
// acknowledged once every live backup has it. An update records, for
// each worker whose push it carries (a round's sum carries every
// worker's), the round of that push; a worker's rounds only grow, and
// its pushes reach the primary in order, so a push is in the copy
// exactly when the copy has an update of that worker at that round or
// later.
//
// Costs: Apply, ApplyAhead, Update and Has are O(pushes per update);
// Join is O(r + k) for the k acknowledgements it releases;
// Acked and Down release k acknowledgements in O(k + r); Replicated is
// O(r).
package replica

import (
	"fmt"
	"slices"
)

// Chain returns the backups of server s among servers servers: the r
// servers after s in rank order, wrapping around, that live reports
// alive (nil: all), at most servers − 1. The first is the one that takes
// over s's ranges when s dies.
func Chain(s, servers, r int, live func(int) bool) []int {
	var out []int
	for i := 1; i < servers && len(out) < r; i++ {
		b := (s + i) % servers
		if live == nil || live(b) {
			out = append(out, b)
		}
	}
	return out
}

// InRing sorts bs, server ranks among servers servers, in the order of
// the ring after server s: (b − s) mod servers ascending, as Chain
// lists them. A rank's copies are kept in this order by the scheduler
// and by Holders, whatever order they were made in, so that the first
// live one, which takes the ranges over, is a function of the set (a
// scheduler that takes the job over rebuilds the set from the nodes'
// reports). It returns bs.
func InRing(s, servers int, bs []int) []int {
	slices.SortFunc(bs, func(a, b int) int { return ((a-s)%servers+servers)%servers - ((b-s)%servers+servers)%servers })
	return bs
}

// Push is a worker's push that an update carries: its rank and the
// push's round.
type Push struct {
	Worker int
	Round  int64
}

// entry is an update applied but not acknowledged by every live backup.
// Its acknowledgements go once every live backup has update need: the
// update itself, or the one before it (ApplyAhead).
type entry[A any] struct {
	seq, need uint64
	acks      []A
	// held marks the acknowledgements of Hold, of no update of their
	// own.
	held bool
}

// Primary is the replication state of a server as the owner of its
// ranges. A is whatever the caller sends a worker to acknowledge a push
// (the server's reply); the primary holds the acknowledgements back and
// hands them out when they may be sent.
type Primary[A any] struct {
	// acked is the highest sequence number each live backup
	// acknowledged, by rank.
	acked map[int]uint64
	// next is the sequence number of the next update (from 1).
	next  uint64
	queue []entry[A]
}

// NewPrimary returns the state of a primary whose live backups are
// backups (Chain).
func NewPrimary[A any](backups []int) *Primary[A] {
	p := &Primary[A]{acked: make(map[int]uint64, len(backups)), next: 1}
	for _, b := range backups {
		p.acked[b] = 0
	}
	return p
}

// Backups returns the live backups in rank order.
func (p *Primary[A]) Backups() []int {
	out := make([]int, 0, len(p.acked))
	for b := range p.acked {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// Pending returns the number of updates applied whose acknowledgements
// wait for a live backup (those of Hold not counted).
func (p *Primary[A]) Pending() int {
	n := 0
	for _, e := range p.queue {
		if !e.held {
			n++
		}
	}
	return n
}

// Next returns the sequence number the next Apply gives: a server may
// send an update to its backups before it applies it.
func (p *Primary[A]) Next() uint64 { return p.next }

// Apply records an update the server applied, whose acknowledgements to
// the workers are acks. It returns the update's sequence number, which
// the caller sends with the update to every live backup (Backups), and
// the acknowledgements that may be sent now: those of every earlier
// update that may, and this one's when the server has no live backup.
func (p *Primary[A]) Apply(acks []A) (seq uint64, release []A) {
	return p.apply(acks, 0)
}

// ApplyAhead is Apply for an update whose acknowledgements may go once
// every live backup has the update before it, not this one: under BSP a
// round's sum (replication after aggregation), whose pushes each worker
// keeps until it learns that the backups have the round (Replicated),
// and sends again to the backup that takes over. The round's replication
// then runs while the next round is computed, off its critical path,
// and a worker is at most one round ahead of the backups: it keeps at
// most two rounds' pushes.
func (p *Primary[A]) ApplyAhead(acks []A) (seq uint64, release []A) {
	return p.apply(acks, 1)
}

// Hold records acknowledgements that may go once every live backup has
// the last update applied (none applied: at once), after those of the
// updates before: under BSP the refusals of a round's pushes, which the
// workers do not keep (ApplyAhead), so that a push refused by a primary
// that dies before its backups have the round is sent again to the one
// that takes over, which refuses it again and counts it in the round.
func (p *Primary[A]) Hold(acks []A) []A {
	if len(acks) > 0 {
		p.queue = append(p.queue, entry[A]{seq: p.next - 1, need: p.next - 1, acks: acks, held: true})
	}
	return p.release(nil)
}

func (p *Primary[A]) apply(acks []A, lag uint64) (seq uint64, release []A) {
	seq = p.next
	p.next++
	p.queue = append(p.queue, entry[A]{seq: seq, need: seq - lag, acks: acks})
	return seq, p.release(nil)
}

// Replicated returns the sequence number of the last update every live
// backup has: the last applied when no backup is left.
func (p *Primary[A]) Replicated() uint64 {
	upto := p.next - 1
	for _, s := range p.acked {
		upto = min(upto, s)
	}
	return upto
}

// Acked records that backup b has every update up to seq (applied, or
// received and to be applied before anything after it) and returns
// the acknowledgements this releases, in the order of their updates. It
// fails for a backup that is not live and for a number never issued; an
// acknowledgement below one b gave before is stale and changes nothing.
func (p *Primary[A]) Acked(b int, seq uint64) ([]A, error) {
	prev, ok := p.acked[b]
	switch {
	case !ok:
		return nil, fmt.Errorf("replica: acknowledgement of update %d from server %d, which is not a live backup", seq, b)
	case seq >= p.next:
		return nil, fmt.Errorf("replica: server %d acknowledged update %d, the last applied is %d", b, seq, p.next-1)
	case seq <= prev:
		return nil, nil
	}
	p.acked[b] = seq
	return p.release(nil), nil
}

// Join adds b, a new backup, which is to get a copy of every update up
// to have (the primary's state, sent to it whole) and every update after
// it in order: the acknowledgements of the updates after have wait for
// b too, those up to have only for the other backups. It returns the
// acknowledgements this releases (none: the acknowledgements up to have
// wait for no more than before). A backup already live is left as it
// is, and have beyond the last update applied fails.
func (p *Primary[A]) Join(b int, have uint64) ([]A, error) {
	if _, ok := p.acked[b]; ok {
		return nil, fmt.Errorf("replica: server %d joins as a backup, and is one", b)
	}
	if have >= p.next {
		return nil, fmt.Errorf("replica: server %d joins with update %d, the last applied is %d", b, have, p.next-1)
	}
	p.acked[b] = have
	return p.release(nil), nil
}

// Down removes backup b, which failed, and returns the acknowledgements
// that no longer wait for it: the updates are then on the servers left.
func (p *Primary[A]) Down(b int) []A {
	if _, ok := p.acked[b]; !ok {
		return nil
	}
	delete(p.acked, b)
	return p.release(nil)
}

// release appends to dst the acknowledgements of the updates at the head
// of the queue that every live backup acknowledged, and removes them.
func (p *Primary[A]) release(dst []A) []A {
	upto := p.Replicated()
	n := 0
	for n < len(p.queue) && p.queue[n].need <= upto {
		dst = append(dst, p.queue[n].acks...)
		n++
	}
	p.queue = p.queue[n:]
	return dst
}

// Replica is a backup's record of the updates of one primary it has
// applied to its copy of the primary's ranges.
type Replica struct {
	applied uint64
	rounds  []int64
}

// NewReplica returns the record of an empty copy, for a job of workers
// workers.
func NewReplica(workers int) *Replica {
	r := &Replica{rounds: make([]int64, workers)}
	for i := range r.rounds {
		r.rounds[i] = -1
	}
	return r
}

// NewReplicaAt returns the record of a copy made whole from the
// primary's state after its update applied (Primary.Join), in which
// worker w's pushes up to round rounds[w] are (−1: none).
func NewReplicaAt(applied uint64, rounds []int64) *Replica {
	return &Replica{applied: applied, rounds: slices.Clone(rounds)}
}

// Applied returns the sequence number of the last update applied: the
// acknowledgement the backup sends the primary.
func (r *Replica) Applied() uint64 { return r.applied }

// Update decides on the primary's update seq, which carries pushes: apply
// reports whether it is the next update, which the backup applies to its
// copy and records; an update already applied (sent again) is not
// applied again, and is acknowledged again. An update after a gap, or
// with a push of a worker out of range or of a round not after that
// worker's last, is refused and changes nothing.
func (r *Replica) Update(seq uint64, pushes []Push) (apply bool, err error) {
	switch {
	case seq <= r.applied:
		return false, nil
	case seq != r.applied+1:
		return false, fmt.Errorf("replica: update %d after update %d: the updates in between are missing", seq, r.applied)
	}
	for _, p := range pushes {
		if p.Worker < 0 || p.Worker >= len(r.rounds) {
			return false, fmt.Errorf("replica: update %d carries a push of worker %d, want 0 to %d", seq, p.Worker, len(r.rounds)-1)
		}
		if p.Round <= r.rounds[p.Worker] {
			return false, fmt.Errorf("replica: update %d carries worker %d's push of round %d, after its round %d", seq, p.Worker, p.Round, r.rounds[p.Worker])
		}
	}
	for _, p := range pushes {
		r.rounds[p.Worker] = p.Round
	}
	r.applied = seq
	return true, nil
}

// Has reports whether worker w's push of round is in the copy: after the
// primary's failure the new owner acknowledges such a push when the
// worker sends it again, without applying it.
func (r *Replica) Has(w int, round int64) bool {
	return w >= 0 && w < len(r.rounds) && round <= r.rounds[w]
}

// Reset forgets the pushes of the copy, keeping the updates' numbering:
// the job was rolled back to a checkpoint (a new membership epoch), the
// primary and its backups start again from an empty store, and the
// workers' rounds count from 0 again.
func (r *Replica) Reset() {
	for i := range r.rounds {
		r.rounds[i] = -1
	}
}
