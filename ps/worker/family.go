package worker

import (
	"context"
	"errors"
	"fmt"
)

// Family tells every server that the keys base + i·stride, i < n, are
// one table's rows spread over the key space, so that each finds the
// ones it owns by arithmetic rather than in a hash map (package server,
// family.go). It returns once every server answered; the answers of the
// values do not change. Every worker may declare the same family: a
// server keeps one.
func (w *Worker) Family(ctx context.Context, base, stride, n uint64) error {
	futs := make([]*Future, w.Servers())
	for s := range futs {
		futs[s] = w.submit(&Op{kind: opFamily, server: s, begin: base, end: stride, count: n})
	}
	errs := make([]error, len(futs))
	for s, f := range futs {
		select {
		case <-f.Done():
			errs[s] = f.Wait()
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("worker %d: key family from %d of %d keys %d apart: %w", w.Rank(), base, n, stride, err)
	}
	return nil
}
