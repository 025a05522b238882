package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"colo/ps/route"
)

// MoveChunk bounds the keys of one Take or Put, so that a move of a
// large range travels in frames of a sensible size.
const MoveChunk = 1 << 16

// Move is one range of keys that changes server.
type Move struct {
	Begin, End uint64
	From, To   int
}

// Moves returns the ranges of keys that change server from table old to
// table next, two Ranges tables of the same servers and keys, in key
// order.
func Moves(old, next *route.Table) ([]Move, error) {
	if old.Kind() != route.Ranges || next.Kind() != route.Ranges || old.Servers() != next.Servers() || old.NumKeys() != next.NumKeys() || old.NumKeys() == 0 {
		return nil, fmt.Errorf("worker: keys move between two Ranges tables of the same servers and a bounded key space; have %v and %v", old, next)
	}
	cuts := append(slices.Clone(old.Starts()), next.Starts()...)
	cuts = append(cuts, old.NumKeys())
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var moves []Move
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		if lo >= old.NumKeys() {
			break
		}
		a, b := old.Owner(lo), next.Owner(lo)
		if a == b {
			continue
		}
		if n := len(moves); n > 0 && moves[n-1].End == lo && moves[n-1].From == a && moves[n-1].To == b {
			moves[n-1].End = hi
			continue
		}
		moves = append(moves, Move{Begin: lo, End: hi, From: a, To: b})
	}
	return moves, nil
}

// Table returns the routing table the worker routes by.
func (w *Worker) Table() *route.Table {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.table
}

// Retable moves the keys between servers so that table next, version
// version (greater than every earlier one, the first table being version
// 0), routes them, with their values and update rule states: every
// worker calls it with the same table and version, between rounds (its
// pushes acknowledged), and all return once the move is done. The
// steps, each closed by a barrier of the workers:
//
//  1. every push of every worker is applied (the barrier);
//  2. each server gets the new table from worker rank s mod W and keeps
//     what it still owns (server.Core, move.go);
//  3. each range that changes server is taken from its old server and
//     put on its new one by worker To mod W, in chunks of MoveChunk keys;
//  4. every worker routes by the new table.
//
// No push is in flight, so no update is lost or applied twice, and under
// BSP the training goes on bit for bit as without the move. It returns
// the keys this worker moved. An error leaves the cluster between tables:
// the job should end (any worker's error does).
func (w *Worker) Retable(ctx context.Context, next *route.Table, version uint64) (moved uint64, err error) {
	old := w.Table()
	moves, err := Moves(old, next)
	if err != nil {
		return 0, err
	}
	if version == 0 {
		return 0, errors.New("worker: version 0 is the job's first table")
	}
	sum, err := w.AllReduce(ctx, []float64{1})
	if err != nil {
		return 0, fmt.Errorf("worker: moving keys: %w", err)
	}
	workers, rank := int(sum[0]), w.Rank()
	var futs []*Future
	wait := func() error {
		errs := make([]error, len(futs))
		for i, f := range futs {
			errs[i] = f.Wait()
		}
		futs = futs[:0]
		return errors.Join(errs...)
	}
	for s := range next.Servers() {
		if s%workers == rank {
			futs = append(futs, w.submit(&Op{kind: opTable, server: s, table: next, version: version}))
		}
	}
	if err := wait(); err != nil {
		return 0, fmt.Errorf("worker %d: new routing table: %w", rank, err)
	}
	if err := w.Barrier(ctx); err != nil {
		return 0, err
	}
	var buf []float32
	for _, m := range moves {
		if m.To%workers != rank {
			continue
		}
		for lo := m.Begin; lo < m.End; lo += MoveChunk {
			hi := min(m.End, lo+MoveChunk)
			if err := w.submit(&Op{kind: opTake, server: m.From, begin: lo, end: hi, take: &buf}).Wait(); err != nil {
				return moved, fmt.Errorf("worker %d: taking keys [%d, %d) from server %d: %w", rank, lo, hi, m.From, err)
			}
			if err := w.submit(&Op{kind: opPut, server: m.To, begin: lo, end: hi, vals: buf}).Wait(); err != nil {
				return moved, fmt.Errorf("worker %d: putting keys [%d, %d) on server %d: %w", rank, lo, hi, m.To, err)
			}
			moved += hi - lo
		}
	}
	if err := w.Barrier(ctx); err != nil {
		return moved, err
	}
	if err := w.submit(&Op{kind: opSetTable, table: next}).Wait(); err != nil {
		return moved, err
	}
	w.mu.Lock()
	w.table = next
	w.mu.Unlock()
	return moved, nil
}
