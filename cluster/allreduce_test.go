package cluster

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"colo/ps/worker"
)

// reduceVals returns the values worker rank r all-reduces in pass p:
// fractions whose float64 sum depends on the order of the additions.
func reduceVals(r, p int) []float64 {
	return []float64{float64(r + 1), 0.1 * float64(r+p), 1 / float64(3+r+p), math.Ldexp(1, 53) * float64(r%2)}
}

// TestAllReduce has every worker all-reduce rank-dependent values several
// times, on both transports, with machines and with separate servers and
// workers: each gets the sum added in rank order, bit for bit. On
// machines, group "all" counts each machine once.
func TestAllReduce(t *testing.T) {
	const passes = 5
	for _, tr := range []string{"mem", "tcp"} {
		for _, topo := range []string{"machines", "separate"} {
			t.Run(tr+"/"+topo, func(t *testing.T) {
				t.Parallel()
				cfg := DefaultConfig()
				cfg.Network, cfg.Timeout = networkOf(tr), loadedTimeout
				if topo == "machines" {
					cfg.Machines = 3
				} else {
					cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 4
				}
				c, ctx := startTest(t, cfg, 30*time.Second)
				nw := c.NumWorkers()
				if topo == "machines" {
					// Every node once: the sum is 1+2+3 although a
					// machine is two members of the group.
					errs := make(chan error, len(c.Nodes()))
					for i, n := range c.Nodes() {
						go func() {
							got, err := n.AllReduce(ctx, "all", []float64{float64(n.Machine() + 1), -1})
							if err == nil && (len(got) != 2 || got[0] != 6 || got[1] != -3) {
								err = fmt.Errorf("node %d: all-reduce of group all = %v, want [6 -3]", i, got)
							}
							errs <- err
						}()
					}
					for range c.Nodes() {
						if err := <-errs; err != nil {
							t.Fatal(err)
						}
					}
				}
				err := c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
					for p := range passes {
						want := reduceVals(0, p)
						for r := 1; r < nw; r++ {
							for i, v := range reduceVals(r, p) {
								want[i] += v
							}
						}
						got, err := w.AllReduce(ctx, reduceVals(w.Rank(), p))
						if err != nil {
							return err
						}
						if len(got) != len(want) {
							return fmt.Errorf("worker %d pass %d: %d values, want %d", w.Rank(), p, len(got), len(want))
						}
						for i := range want {
							if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
								return fmt.Errorf("worker %d pass %d: value %d = %v, want %v", w.Rank(), p, i, got[i], want[i])
							}
						}
						if err := w.Barrier(ctx); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestAllReduceSpecial sums NaN and infinities exactly as float64
// addition does: +Inf + finite = +Inf, +Inf + −Inf = NaN, NaN + x = NaN.
func TestAllReduceSpecial(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Network, cfg.Timeout = networkOf(tr), loadedTimeout
			c, ctx := startTest(t, cfg, 30*time.Second)
			in := [][]float64{
				{math.Inf(1), math.Inf(1), math.NaN(), math.Inf(-1), math.Copysign(0, -1)},
				{1, math.Inf(-1), 2, -math.MaxFloat64, math.Copysign(0, -1)},
			}
			err := c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
				got, err := w.AllReduce(ctx, in[w.Rank()])
				if err != nil {
					return err
				}
				if len(got) != 5 || !math.IsInf(got[0], 1) || !math.IsNaN(got[1]) || !math.IsNaN(got[2]) ||
					!math.IsInf(got[3], -1) || got[4] != 0 || !math.Signbit(got[4]) {
					return fmt.Errorf("worker %d: %v", w.Rank(), got)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAllReduceMismatch fails the job when a worker passes another number
// of values: every worker's call fails naming it, none hangs.
func TestAllReduceMismatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Machines = 3
	c, ctx := startTest(t, cfg, 30*time.Second)
	errs := make(chan error, 3)
	for r := range 3 {
		go func() {
			vals := []float64{1, 2}
			if r == 2 {
				vals = vals[:1]
			}
			_, err := c.Worker(r).AllReduce(ctx, vals)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "worker 2 sent 1 values, worker 0 sent 2") {
			t.Fatalf("all-reduce: %v", err)
		}
	}
	if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "worker 2") {
		t.Fatalf("job: %v", err)
	}
}
