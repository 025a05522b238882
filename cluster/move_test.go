package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"colo/ps/clock"
	"colo/ps/route"
	"colo/ps/update"
	"colo/ps/worker"
)

// randomTable returns a Ranges table of n keys cut at random among
// servers (some may own nothing).
func randomTable(t *testing.T, rng *rand.Rand, servers int, n uint64) *route.Table {
	t.Helper()
	starts := make([]uint64, servers)
	for i := 1; i < servers; i++ {
		starts[i] = rng.Uint64N(n + 1)
	}
	slices.Sort(starts)
	tb, err := route.FromRanges(starts, n)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// trainMoving runs rounds of range pulls and pushes of dense gradients
// (a deterministic function of the pulled values, the worker and the
// round) on a cluster, moving the keys to a new random table every
// `every` rounds when every > 0, and returns the final model.
func trainMoving(t *testing.T, cfg Config, rule update.Config, n uint64, rounds, every int, seed uint64) []float32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := update.New(rule)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Rule, cfg.NumKeys = r, n
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	servers := c.Worker(0).Servers()
	tables := []*route.Table{}
	rng := rand.New(rand.NewPCG(seed, 7))
	for range rounds {
		tables = append(tables, randomTable(t, rng, servers, n))
	}
	var moved [64]uint64
	model := make([]float32, n)
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		vals, grad := make([]float32, n), make([]float32, n)
		for round := range rounds {
			if err := w.PullRange(0, n, vals).Wait(); err != nil {
				return err
			}
			for i := range grad {
				grad[i] = float32(w.Rank()+1)*0.01*vals[i] + float32((int(i)*7+round*3+w.Rank())%11) - 5
			}
			if err := w.PushRange(0, grad).Wait(); err != nil {
				return err
			}
			if every > 0 && (round+1)%every == 0 {
				m, err := w.Retable(ctx, tables[round], uint64(round+1))
				if err != nil {
					return err
				}
				moved[w.Rank()] += m
			}
		}
		if err := w.Barrier(ctx); err != nil || w.Rank() != 0 {
			return err
		}
		return w.PullRange(0, n, model).Wait()
	})
	if err != nil {
		t.Fatal(err)
	}
	if every > 0 {
		var total uint64
		for _, m := range moved {
			total += m
		}
		if total == 0 {
			t.Errorf("%d moves moved no key", rounds/every)
		}
	}
	return model
}

// TestMovesKeepBSPTraining: keys moving between servers every few rounds,
// with their values and the update rule's states, leave the training of
// concurrent workers unchanged bit for bit under BSP, on machines and on
// servers apart, with momentum and Adam on the servers.
func TestMovesKeepBSPTraining(t *testing.T) {
	const n, rounds = 1000, 12
	for _, shape := range []struct{ machines, servers, workers int }{{3, 0, 0}, {0, 4, 2}} {
		for _, rule := range []string{"momentum", "adam"} {
			t.Run(fmt.Sprintf("m%d-s%d-w%d/%s", shape.machines, shape.servers, shape.workers, rule), func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Machines, cfg.Servers, cfg.Workers = shape.machines, shape.servers, shape.workers
				rc := update.DefaultConfig()
				rc.Name, rc.LR = rule, 0.01
				want := trainMoving(t, cfg, rc, n, rounds, 0, 1)
				for _, every := range []int{1, 3} {
					got := trainMoving(t, cfg, rc, n, rounds, every, uint64(every))
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("moving every %d rounds: key %d is %v, without moves %v", every, i, got[i], want[i])
						}
					}
				}
			})
		}
	}
}

// TestMovesKeepExactSums: under bounded delay and asynchronous training,
// integer pushes moved with their keys sum exactly.
func TestMovesKeepExactSums(t *testing.T) {
	const n, rounds = 300, 10
	for _, ck := range []clock.Config{{Mode: clock.Bounded, Tau: 2}, {Mode: clock.Async}} {
		t.Run(ck.Mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cfg := DefaultConfig()
			cfg.Machines, cfg.Clock, cfg.NumKeys = 3, ck, n
			c, err := Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(3, 3))
			var tables []*route.Table
			for range rounds {
				tables = append(tables, randomTable(t, rng, 3, n))
			}
			got := make([]float32, n)
			err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
				grad := make([]float32, n)
				for round := range rounds {
					for i := range grad {
						grad[i] = float32(1 + (i+round+w.Rank())%4)
					}
					if err := w.PushRange(0, grad).Wait(); err != nil {
						return err
					}
					if round%2 == 1 {
						if _, err := w.Retable(ctx, tables[round], uint64(round)); err != nil {
							return err
						}
					}
				}
				if err := w.Barrier(ctx); err != nil || w.Rank() != 1 {
					return err
				}
				return w.PullRange(0, n, got).Wait()
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				var want float32
				for w := range 3 {
					for round := range rounds {
						want += float32(1 + (i+round+w)%4)
					}
				}
				if got[i] != want {
					t.Fatalf("key %d: %v, want %v", i, got[i], want)
				}
			}
		})
	}
}

// TestAsyncLocalPushReuse: an asynchronous push to the server of the
// worker's own machine is answered only once applied, so the worker may
// refill its array at once: the sums are exact (and the race detector
// quiet).
func TestAsyncLocalPushReuse(t *testing.T) {
	const n, rounds = 5000, 40
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Machines, cfg.Clock, cfg.NumKeys = 1, clock.Config{Mode: clock.Async}, n
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make([]float32, n)
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		grad := make([]float32, n)
		for round := range rounds {
			for i := range grad {
				grad[i] = float32(round % 3)
			}
			if err := w.PushRange(0, grad).Wait(); err != nil {
				return err
			}
		}
		return w.PullRange(0, n, got).Wait()
	})
	if err != nil {
		t.Fatal(err)
	}
	var want float32
	for round := range rounds {
		want += float32(round % 3)
	}
	for i, v := range got {
		if v != want {
			t.Fatalf("key %d: %v, want %v", i, v, want)
		}
	}
}
