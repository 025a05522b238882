package clib

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"colo/ps/node"
	"colo/ps/proto"
	"colo/ps/sched"
	"colo/transport/tcp"
)

// TestDirectMachinesBSP runs two machines (a server beside each worker,
// over TCP) under BSP with a rule whose updates round. Each round a
// machine pushes rows of both servers and, before that push is
// answered, pulls its own server's rows: that pull waits for the round
// (it goes as a message, behind the gate). Then it pulls them again,
// now with nothing in flight (served on its own goroutine by its own
// server), and the other machine's rows (through messages). Every
// reading of a row in a round is the same, bit for bit, on both
// machines, whichever path read it; the direct pulls are counted by the
// worker, and by the server as pulls.
func TestDirectMachinesBSP(t *testing.T) {
	const rounds = 6
	addr, jobFile := startMachines(t, 2, "bsp")
	own := [][]int64{{1, 5, 1000}, {1<<19 + 3, 1<<20 - 1}}
	all := append(slices.Clone(own[0]), own[1]...)
	type reading struct{ early, direct, other []uint32 }
	got := make([][rounds]reading, 2)
	stats := make([]node.Stats, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m := range 2 {
		wg.Go(func() {
			s, err := openMachine(addr, jobFile, m)
			if err != nil {
				errs[m] = err
				return
			}
			defer func() {
				// After the job's end: the other machine's last pull
				// of this server's rows is counted.
				if err := s.CloseWait(20 * time.Second); errs[m] == nil {
					errs[m] = err
				}
				stats[m] = s.n.Stats()
			}()
			tb, err := s.Declare(context.Background(), TableSpec{Name: "emb", Rows: 1 << 20, Dim: 3})
			if err != nil {
				errs[m] = err
				return
			}
			pull := func(rows []int64) ([]uint32, error) {
				dst := make([]float32, 3*len(rows))
				k, err := tb.Pull(rows, dst)
				if err == nil {
					err = k.Wait()
				}
				return f32bits(dst), err
			}
			for r := range rounds {
				vals := make([]float32, 3*len(all))
				for i := range vals {
					vals[i] = float32(0.1*float64(r+1)+0.37*float64(m)) * float32(i+1)
				}
				push, err := tb.Push(all, vals)
				if err != nil {
					errs[m] = err
					return
				}
				early := make([]float32, 3*len(own[m]))
				k, err := tb.Pull(own[m], early)
				if err == nil {
					err = k.Wait()
				}
				if err == nil {
					err = push.Wait()
				}
				if err != nil {
					errs[m] = err
					return
				}
				rd := &got[m][r]
				rd.early = f32bits(early)
				if rd.direct, err = pull(own[m]); err == nil {
					rd.other, err = pull(own[1-m])
				}
				if err != nil {
					errs[m] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for m := range 2 {
		if errs[m] != nil {
			t.Fatalf("machine %d: %v", m, errs[m])
		}
	}
	for m := range 2 {
		for r := range rounds {
			rd := got[m][r]
			if !slices.Equal(rd.early, rd.direct) {
				t.Errorf("round %d, machine %d: its rows read %v behind the round's push, %v after", r, m, rd.early, rd.direct)
			}
			if o := got[1-m][r].other; !slices.Equal(rd.direct, o) {
				t.Errorf("round %d: machine %d read its rows as %v on its own goroutine, machine %d as %v through messages", r, m, rd.direct, 1-m, o)
			}
			if r > 0 && slices.Equal(rd.direct, got[m][r-1].direct) || slices.Contains(rd.direct, 0) {
				t.Errorf("round %d, machine %d: rows read %v, the round's push not applied", r, m, rd.direct)
			}
		}
		st := stats[m]
		if st.Worker == nil || st.Server == nil {
			t.Fatalf("machine %d: no worker or server counters: %+v", m, st)
		}
		if st.Worker.Direct < rounds || st.Worker.Direct > 2*rounds {
			t.Errorf("machine %d: %d pulls served directly, want %d to %d", m, st.Worker.Direct, rounds, 2*rounds)
		}
		// Its own two pulls and the other machine's one, each round.
		if st.Server.Pulls != 3*rounds || st.Server.KeysPulled != uint64(rounds*(2*len(own[m])+len(own[m]))) {
			t.Errorf("machine %d's server counted %d pulls of %d keys, want %d of %d", m, st.Server.Pulls, st.Server.KeysPulled, 3*rounds, rounds*3*len(own[m]))
		}
	}
}

// TestDirectAsyncSums has several goroutines of one machine push ones
// to random rows and pull them, some right after their push, some after
// waiting for it, under asynchronous training: every pull sees the
// goroutine's own pushes before it (a pull served on the caller's
// goroutine never overtakes them), and the final values are the exact
// counts.
func TestDirectAsyncSums(t *testing.T) {
	cfg := DefaultConfig()
	sum := sgd(1)
	sum.Name, sum.LR = "sum", 0
	cfg.Local = &Local{Consistency: "async", Rule: sum}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.CloseWait(10 * time.Second)
	const rows, dim, goroutines, iters = 48, 2, 4, 150
	tb, err := s.Declare(context.Background(), TableSpec{Name: "counts", Rows: rows, Dim: dim})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([][rows]int, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 77))
			for range iters {
				var sel []int64
				for r := range int64(rows) {
					if rng.IntN(4) == 0 {
						sel = append(sel, r)
					}
				}
				if len(sel) == 0 {
					sel = []int64{rng.Int64N(rows)}
				}
				for _, r := range sel {
					counts[g][r]++
				}
				push, err := tb.Push(sel, slices.Repeat([]float32{1}, dim*len(sel)))
				if err != nil {
					errs[g] = err
					return
				}
				if rng.IntN(2) == 0 {
					if errs[g] = push.Wait(); errs[g] != nil {
						return
					}
				}
				dst := make([]float32, dim*len(sel))
				k, err := tb.Pull(sel, dst)
				if err == nil {
					err = k.Wait()
				}
				if err == nil {
					err = push.Wait()
				}
				if err != nil {
					errs[g] = err
					return
				}
				for i, r := range sel {
					for j := range dim {
						v := dst[i*dim+j]
						if v < float32(counts[g][r]) || v > goroutines*iters || v != float32(math.Trunc(float64(v))) {
							errs[g] = fmt.Errorf("goroutine %d: row %d read %v after its own %d pushes to it", g, r, v, counts[g][r])
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
	}
	every := make([]int64, rows)
	for r := range every {
		every[r] = int64(r)
	}
	dst := make([]float32, rows*dim)
	k, err := tb.Pull(every, dst)
	wait(t, k, err)
	for r := range rows {
		want := 0
		for g := range goroutines {
			want += counts[g][r]
		}
		for j := range dim {
			if dst[r*dim+j] != float32(want) {
				t.Fatalf("row %d = %v, want the exact count %d", r, dst[r*dim+j], want)
			}
		}
	}
	if st := s.w.Stats(); st.Direct == 0 || st.Direct > st.Pulls {
		t.Errorf("%d of %d pulls served directly, want at least the last", st.Direct, st.Pulls)
	}
}

// startMachines starts a scheduler over TCP for n machines (a server
// beside each worker) of a job of consistency with SGD at rate 0.5; it
// returns the scheduler's address and the job's file.
func startMachines(t *testing.T, n int, consistency string) (string, string) {
	t.Helper()
	const token = "clib-test"
	sc := sched.DefaultConfig()
	sc.NumServers, sc.NumWorkers, sc.Token = n, n, token
	job := DefaultJob()
	job.Consistency, job.Rule, job.Machines = consistency, sgd(0.5), n
	if err := job.Scheduler(&sc); err != nil {
		t.Fatal(err)
	}
	ep, err := node.TCP{Token: token}.Listen(proto.SchedulerID, tcp.NewIdentity())
	if err != nil {
		t.Fatal(err)
	}
	s, err := sched.Start(sc, ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	jobFile := filepath.Join(t.TempDir(), "job.json")
	b, _ := json.Marshal(map[string]any{"kind": JobKind, "job": job})
	if err := os.WriteFile(jobFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return ep.Addr(), jobFile
}

// openMachine opens machine rank r of startMachines' job.
func openMachine(addr, jobFile string, r int) (*Session, error) {
	cfg := DefaultConfig()
	env := map[string]string{"COLO_SCHEDULER": addr, "COLO_TOKEN": "clib-test", "COLO_RANK": fmt.Sprint(r), "COLO_ROLE": "machine",
		"COLO_JOB_FILE": jobFile, "COLO_NUM_SERVERS": "2", "COLO_NUM_WORKERS": "2", "COLO_JOIN_TIMEOUT": "30s"}
	if err := cfg.FromEnv(func(k string) string { return env[k] }); err != nil {
		return nil, err
	}
	return Open(context.Background(), cfg)
}

func f32bits(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}
