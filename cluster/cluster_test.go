package cluster

import (
	"colo/ps/node"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"colo/internal/colotest"
	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
	"colo/ps/worker"
	"colo/transport"
)

const (
	numKeys = 400
	rounds  = 15
)

// increments returns the keys and increments of worker w in round r:
// random, overlapping between workers, small positive integers so that
// float32 sums are exact in any order.
func increments(seed uint64, w, r int) ([]uint64, []float32) {
	rng := rand.New(rand.NewPCG(seed, uint64(w)<<32|uint64(r)))
	var keys []uint64
	for k := range uint64(numKeys) {
		if rng.IntN(8) == 0 {
			keys = append(keys, k)
		}
	}
	vals := make([]float32, len(keys))
	for i := range vals {
		vals[i] = float32(1 + rng.IntN(5))
	}
	return keys, vals
}

// sums returns, per key, the sum of every worker's increments of rounds
// [0, upto).
func sums(seed uint64, workers, upto int) []float32 {
	s := make([]float32, numKeys)
	for w := range workers {
		for r := range upto {
			keys, vals := increments(seed, w, r)
			for i, k := range keys {
				s[k] += vals[i]
			}
		}
	}
	return s
}

// conformance runs the suite on one cluster configuration: every worker
// pulls every key and pushes its increments each round; pulled values
// must lie between the sums the consistency model guarantees (exactly the
// previous rounds' sum under BSP), no worker may start a round more than
// τ rounds ahead of the slowest, and the final values must be the exact
// sums.
func conformance(t *testing.T, cfg Config, seed uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logs logBuffer
	cfg.Logf = logs.logf
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	}()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nw := c.NumWorkers()
	delay := cfg.Clock.Delay()
	pushed := make([]atomic.Int64, nw) // rounds each worker has sent
	total := sums(seed, nw, rounds)
	all := make([]uint64, numKeys)
	for k := range all {
		all[k] = uint64(k)
	}
	var maxLead atomic.Int64
	err = c.Run(ctx, func(ctx context.Context, w *worker.Worker) error {
		me := w.Rank()
		dst := make([]float32, numKeys)
		for r := range rounds {
			slowest := pushed[0].Load()
			for i := range pushed {
				slowest = min(slowest, pushed[i].Load())
			}
			lead := int64(r) - slowest
			if lead > maxLead.Load() {
				maxLead.Store(lead)
			}
			if delay >= 0 && lead > int64(delay) {
				return fmt.Errorf("worker %d started round %d with the slowest at %d: %d > τ = %d", me, r, slowest, lead, delay)
			}
			if err := w.Pull(all, dst).Wait(); err != nil {
				return err
			}
			if delay >= 0 {
				lo := sums(seed, nw, max(0, r-delay))
				for k := range dst {
					if dst[k] < lo[k] || dst[k] > total[k] {
						return fmt.Errorf("worker %d round %d: key %d = %v outside [%v, %v]", me, r, k, dst[k], lo[k], total[k])
					}
				}
				if delay == 0 && !slices.Equal(dst, lo) {
					return fmt.Errorf("worker %d round %d: BSP pull differs from the sum of rounds < %d", me, r, r)
				}
			}
			keys, vals := increments(seed, me, r)
			pushed[me].Add(1)
			f := w.Push(keys, vals)
			if cfg.Clock.Mode != clock.Async || r%3 == 2 {
				if err := f.Wait(); err != nil {
					return err
				}
			}
		}
		// Everyone's pushes are in once all pass the barrier.
		for w.Round() < rounds {
			time.Sleep(time.Millisecond)
		}
		if err := w.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Pull(all, dst).Wait(); err != nil {
			return err
		}
		for k := range dst {
			if dst[k] != total[k] {
				return fmt.Errorf("worker %d: final key %d = %v, want %v", me, k, dst[k], total[k])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range c.Stats() {
		if st.Server != nil && delay >= 0 && st.Server.MaxLead > int64(delay) {
			t.Fatalf("a server saw a worker %d rounds ahead, τ = %d", st.Server.MaxLead, delay)
		}
		if st.Worker != nil && st.Worker.Rounds != rounds {
			t.Fatalf("worker ended at round %d", st.Worker.Rounds)
		}
		if cfg.Machines > 0 && (st.Inner.MsgsSent == 0 || st.Inter.MsgsSent == 0) {
			t.Fatalf("machine %d: inner %+v inter %+v", st.Machine, st.Inner, st.Inter)
		}
	}
	t.Logf("max lead %d", maxLead.Load())
}

// TestConformance is the suite on both transports, in every consistency
// model, with machines and with separate servers and workers, and with a
// placement table that is not ranges.
func TestConformance(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	param := make([]int32, numKeys)
	for i := range param {
		param[i] = int32(rng.IntN(3))
	}
	placed, _ := route.FromPlacement(param, 3)
	for _, tr := range []string{"mem", "tcp"} {
		for _, ck := range []clock.Config{{Mode: clock.BSP}, {Mode: clock.Bounded, Tau: 2}, {Mode: clock.Async}} {
			for _, topo := range []string{"machines", "separate"} {
				t.Run(fmt.Sprintf("%s/%v/%s", tr, ck, topo), func(t *testing.T) {
					t.Parallel()
					cfg := DefaultConfig()
					cfg.Network, cfg.Clock, cfg.NumKeys = networkOf(tr), ck, numKeys
					cfg.Timeout = loadedTimeout // twelve clusters at once
					if topo == "machines" {
						cfg.Machines = 3
					} else {
						cfg.Machines, cfg.Servers, cfg.Workers, cfg.Table = 0, 3, 4, placed
					}
					conformance(t, cfg, 11)
				})
			}
		}
	}
}

// TestNodeFailure kills a worker and then a server mid-job: the job must
// end with an error naming the dead node, on every surviving node; a
// closed node is noticed by its link, a silent one within the timeout
// counted on the scheduler's own clock, its ticks.
func TestNodeFailure(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		for _, victim := range []string{"worker", "server", "silent-server"} {
			if victim == "silent-server" && tr != "mem" {
				continue
			}
			t.Run(tr+"/"+victim, func(t *testing.T) {
				t.Parallel()
				cfg := DefaultConfig()
				cfg.Machines, cfg.Servers, cfg.Workers = 0, 2, 2
				cfg.Network, cfg.NumKeys = networkOf(tr), numKeys
				// A timeout that a loaded machine's late timers cannot reach
				// while the job starts (at 300 ms the scheduler declared
				// healthy nodes dead at a load of 30 on two cores, at 2 s
				// the nodes the scheduler under -race at load 45).
				cfg.Heartbeat, cfg.Timeout = 50*time.Millisecond, 5*time.Second
				// The scheduler's ticks from the kill on. Its timeout is a
				// count of ticks, and the ticks its loop is too late to
				// take are skipped: on a loaded machine 100 ticks of 50 ms
				// took 15.65 s, so the bound is on the ticks, not on the
				// wall clock (the exact one is TestSilentFailureOnFakeTime's).
				var killed atomic.Bool
				var ticks atomic.Int64
				cfg.OnTick = func() {
					if killed.Load() {
						ticks.Add(1)
					}
				}
				c, _ := startTest(t, cfg, 30*time.Second)
				dead := c.ServerNode(1)
				name := "server 1"
				if victim == "worker" {
					dead, name = c.WorkerNode(1), "worker 1"
				}
				// A silent node is cut off the network without closing
				// anything: only the heartbeats can tell.
				kill := func() { dead.Close() }
				if victim == "silent-server" {
					kill = func() {
						srv, _ := dead.IDs()
						c.Network().Cut(srv, proto.SchedulerID)
						for _, n := range c.Nodes() {
							for _, id := range []transport.NodeID{n.Assignment().Server, n.Assignment().Worker} {
								if id != 0 && id != srv {
									c.Network().Cut(srv, id)
								}
							}
						}
					}
				}
				var once sync.Once
				killedAt := make(chan time.Time, 1)
				errs := make(chan error, 2)
				for r := range 2 {
					go func() {
						w := c.Worker(r)
						keys := []uint64{1, 300}
						for round := 0; ; round++ {
							if r == 0 && round == 5 {
								once.Do(func() { killedAt <- time.Now(); killed.Store(true); kill() })
							}
							if err := w.Push(keys, []float32{1, 1}).Wait(); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				err := c.Scheduler().Wait()
				took := time.Since(<-killedAt)
				if err == nil || !strings.Contains(err.Error(), name) {
					t.Fatalf("scheduler: %v, want an error naming %s", err, name)
				}
				var ne *proto.NodeError
				if !errors.As(err, &ne) {
					t.Fatalf("scheduler error %T", err)
				}
				// How it was noticed: a closed node by its link, before
				// the timeout; a silent one by its silence, once the
				// scheduler counted the timeout's ticks from the last
				// message it read from it. Counted from the cut, that is
				// a tick or two off either way (98 to 103 ticks of 100 in
				// 536 runs under load: the node's last heartbeat before
				// the cut, or a message still on its way at the cut, read
				// late); twice the timeout is only passed by a scheduler
				// that did not count the silence.
				timeout := int64(cfg.Timeout / cfg.Heartbeat)
				after := ticks.Load()
				if victim == "silent-server" {
					if !strings.Contains(ne.Err.Error(), "no heartbeat") || after > 2*timeout {
						t.Fatalf("silent node noticed after %d ticks of the scheduler (timeout %d ticks): %v", after, timeout, err)
					}
				} else if after >= timeout {
					t.Fatalf("closed node noticed after %d ticks of the scheduler (timeout %d ticks): %v", after, timeout, err)
				}
				for _, n := range c.Nodes() {
					if n == dead {
						continue
					}
					// The survivors end on the scheduler's Abort; the
					// minute only turns a hang into a failure.
					select {
					case <-n.Done():
					case <-time.After(time.Minute):
						t.Fatal("a surviving node did not end")
					}
					if err := n.Wait(); err == nil || !strings.Contains(err.Error(), name) {
						t.Fatalf("surviving node: %v, want an error naming %s", err, name)
					}
				}
				// The surviving worker's pending call fails naming it.
				if victim != "worker" {
					for range 2 {
						if err := <-errs; !strings.Contains(err.Error(), name) {
							t.Fatalf("worker call: %v", err)
						}
					}
				} else if err := <-errs; !strings.Contains(err.Error(), name) && !errors.Is(err, worker.ErrStopped) {
					t.Fatalf("worker call: %v", err)
				}
				t.Logf("noticed in %v, %d ticks of the scheduler", took, after)
			})
		}
	}
}

// TestWrongToken: a node with the wrong token is refused, and the
// scheduler logs the refusal.
func TestWrongToken(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Network = networkOf(tr)
			var logs logBuffer
			cfg.Logf = logs.logf
			c, ctx := startTest(t, cfg, colotest.HangTimeout(t))
			err := joinWithToken(ctx, t, c, "not-the-token")
			if err == nil || !strings.Contains(err.Error(), "wrong cluster token") {
				t.Fatalf("intruder: %v", err)
			}
			// The scheduler's side says so too.
			logs.await(t, "the refusal of the wrong token", func(log string) bool { return strings.Contains(log, "wrong cluster token") })
		})
	}
}

// logBuffer collects the log lines of a cluster, with their time.
type logBuffer struct {
	mu    sync.Mutex
	start time.Time
	lines []string
	grew  chan struct{} // closed at the next line, nil if nobody waits
}

func (l *logBuffer) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start.IsZero() {
		l.start = time.Now()
	}
	l.lines = append(l.lines, fmt.Sprintf("%8.3fs ", time.Since(l.start).Seconds())+fmt.Sprintf(format, args...))
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
}

// await returns once ok holds for the log so far, checked again at each
// new line; it fails t, naming what it waited for and showing the log,
// when ok does not hold within colotest.HangTimeout of the call (a
// hang: the bound covers the whole wait, not each line's).
func (l *logBuffer) await(t *testing.T, what string, ok func(log string) bool) {
	t.Helper()
	hang := time.NewTimer(colotest.HangTimeout(t))
	defer hang.Stop()
	for {
		l.mu.Lock()
		log := strings.Join(l.lines, "\n")
		if ok(log) {
			l.mu.Unlock()
			return
		}
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		select {
		case <-grew:
		case <-hang.C:
			t.Fatalf("%s not logged:\n%s", what, log)
		}
	}
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// startTest starts a cluster of cfg for t with a context that ends after
// timeout; both end with the test.
// loadedTimeout is the failure timeout of the tests that check no
// failure detection, in place of DefaultConfig's second: under -race on
// two loaded cores (load 34-47) a node of such a test heard no heartbeat
// for 1.05 s, or a send to the scheduler timed out, and the job failed.
const loadedTimeout = 10 * time.Second

func startTest(t *testing.T, cfg Config, timeout time.Duration) (*Cluster, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// networkOf returns the nodes' network a test names: "tcp" for TCP on
// loopback, anything else for the cluster's own in-memory network.
func networkOf(name string) node.Network {
	if name == "tcp" {
		return node.TCP{}
	}
	return nil
}

// TestSchedulerLeaves closes the scheduler in the middle of a job: every
// node notices its link close, not the scheduler's silence, and ends
// with an error naming the scheduler's link lost. What tells the two
// apart is the error, not the time it took: the failure timeout is the
// loaded machine's (loadedTimeout), so a node slow to notice the link is
// not declared lost by a silence instead.
func TestSchedulerLeaves(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Network = networkOf(tr)
			cfg.Heartbeat, cfg.Timeout = 20*time.Millisecond, loadedTimeout
			c, _ := startTest(t, cfg, colotest.HangTimeout(t))
			closed := time.Now()
			c.Scheduler().Close()
			for _, n := range c.Nodes() {
				select {
				case <-n.Done():
				case <-time.After(colotest.HangTimeout(t)):
					t.Fatalf("a node still runs %v after the scheduler left (timeout %v)", time.Since(closed), cfg.Timeout)
				}
				var ne *proto.NodeError
				if err := n.Wait(); !errors.As(err, &ne) || ne.ID != proto.SchedulerID || !strings.Contains(err.Error(), "scheduler") || !strings.Contains(err.Error(), "link lost: ") {
					t.Fatalf("node ended with %v, want the scheduler's link lost", err)
				}
			}
			t.Logf("every node ended %v after the scheduler left: %v", time.Since(closed).Round(time.Millisecond), c.Nodes()[0].Wait())
		})
	}
}
