package clib

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"colo/checkpoint"
	"colo/ps/clock"
	"colo/ps/update"
)

func adagrad(lr float64) update.Config {
	c := update.DefaultConfig()
	c.Name, c.LR = "adagrad", lr
	return c
}

// ckptTables declares the tables of the checkpoint tests: a sparse table
// with seeded initial values and a dense one.
func ckptTables(s *Session, rows int64) (*Table, *Table, error) {
	ctx := context.Background()
	emb, err := s.Declare(ctx, TableSpec{Name: "emb", Rows: rows, Dim: 3, Init: Init{Name: "normal", Std: 0.5, Seed: 3}})
	if err != nil {
		return nil, nil, err
	}
	dense, err := s.Declare(ctx, TableSpec{Name: "w", Dense: true, Size: 10})
	return emb, dense, err
}

// ckptSteps trains steps [from, to) on worker s: each step pulls rows of
// both tables, pushes gradients that are functions of the pulled values,
// the worker's rank and the step, and waits for the pushes; with save,
// it saves the checkpoint of step save once that step is done. It
// returns the tables' values after the last step.
func ckptSteps(s *Session, emb, dense *Table, from, to, save int, dir string) ([]float32, error) {
	rows := []int64{0, 7, 100, 513, 999}
	r := s.Rank()
	ev, dv := make([]float32, len(rows)*3), make([]float32, 10)
	for step := from; step < to; step++ {
		if step == save {
			if err := s.Save(context.Background(), dir, step, []byte("after step "+string(rune('0'+step)))); err != nil {
				return nil, err
			}
		}
		k1, err := emb.Pull(rows, ev)
		if err == nil {
			err = k1.Wait()
		}
		if err != nil {
			return nil, err
		}
		k2, err := dense.PullAll(dv)
		if err == nil {
			err = k2.Wait()
		}
		if err != nil {
			return nil, err
		}
		g := func(v []float32) []float32 {
			out := make([]float32, len(v))
			for i, x := range v {
				out[i] = float32(math.Sin(float64(x)+0.37*float64(r)+0.11*float64(step)+float64(i))) * 0.5
			}
			return out
		}
		for _, push := range []func() (*Ticket, error){
			func() (*Ticket, error) { return emb.Push(rows[r:r+3], g(ev[3*r:3*r+9])) },
			func() (*Ticket, error) { return dense.PushAll(g(dv)) },
		} {
			k, err := push()
			if err == nil {
				err = k.Wait()
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := s.Barrier(context.Background()); err != nil {
		return nil, err
	}
	all := make([]float32, len(rows)*3+10)
	k1, err := emb.Pull(rows, all[:len(rows)*3])
	if err == nil {
		err = k1.Wait()
	}
	if err != nil {
		return nil, err
	}
	k2, err := dense.PullAll(all[len(rows)*3:])
	if err == nil {
		err = k2.Wait()
	}
	return all, err
}

// ckptCluster runs f on every worker of a new cluster of 2 servers and 2
// workers (BSP, AdaGrad) and returns what each returned.
func ckptCluster(t *testing.T, f func(s *Session) ([]float32, error)) [][]float32 {
	t.Helper()
	addr := startServers(t, 2, 2, 0, adagrad(0.1), clock.BSP)
	got := make([][]float32, 2)
	errs := onWorkers(addr, 2, func(s *Session) (err error) {
		got[s.Rank()], err = f(s)
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", r, err)
		}
	}
	return got
}

// TestCheckpointResume: a cluster that loads the checkpoint of step 3
// and trains steps 3 to 6 ends with the tables, AdaGrad's sums
// included, of the cluster that trained steps 0 to 6 bit for bit, and
// every worker gets worker 0's state.
func TestCheckpointResume(t *testing.T) {
	dir := t.TempDir()
	want := ckptCluster(t, func(s *Session) ([]float32, error) {
		emb, dense, err := ckptTables(s, 1000)
		if err != nil {
			return nil, err
		}
		return ckptSteps(s, emb, dense, 0, 6, 3, dir)
	})
	m, _, err := checkpoint.Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Round != 3 || len(m.Files) != 3 {
		t.Fatalf("checkpoint of round %d with files %v, want round 3 with 2 snapshots and the state", m.Round, m.Files)
	}
	got := ckptCluster(t, func(s *Session) ([]float32, error) {
		emb, dense, err := ckptTables(s, 1000)
		if err != nil {
			return nil, err
		}
		step, state, err := s.Load(context.Background(), dir, -1)
		if err != nil {
			return nil, err
		}
		if step != 3 || string(state) != "after step 3" {
			t.Errorf("worker %d loaded step %d, state %q; want 3, %q", s.Rank(), step, state, "after step 3")
		}
		return ckptSteps(s, emb, dense, step, 6, -1, "")
	})
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	for r := range 2 {
		if !slices.EqualFunc(got[r], want[r], same) {
			t.Errorf("worker %d after resuming:\n%v\nwant\n%v", r, got[r], want[r])
		}
	}
	// Without the checkpoint's AdaGrad sums the steps would differ: the
	// test sees the rule's states.
	fresh := ckptCluster(t, func(s *Session) ([]float32, error) {
		emb, dense, err := ckptTables(s, 1000)
		if err != nil {
			return nil, err
		}
		return ckptSteps(s, emb, dense, 3, 6, -1, "")
	})
	if slices.EqualFunc(fresh[0], want[0], same) {
		t.Error("training steps 3 to 6 from scratch gave the resumed model: the test cannot tell a checkpoint from none")
	}
}

// TestCheckpointRefused: a checkpoint of other tables, a load after a
// push, a missing checkpoint and a bad step are errors that say so.
func TestCheckpointRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := local(t, adagrad(0.1))
	emb, dense, err := ckptTables(s, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ckptSteps(s, emb, dense, 0, 2, 1, dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(ctx, dir, -1); err == nil || !strings.Contains(err.Error(), "this worker pushed already") {
		t.Errorf("load after a push: %v", err)
	}
	if err := s.Save(ctx, dir, -1, nil); err == nil || !strings.Contains(err.Error(), "step -1") {
		t.Errorf("save of step -1: %v", err)
	}

	other := local(t, adagrad(0.1))
	if _, _, err := ckptTables(other, 999); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Load(ctx, dir, -1); err == nil || !strings.Contains(err.Error(), `its table 0 is "emb", 1000 rows × 3`) {
		t.Errorf("load into other tables: %v", err)
	}
	if _, _, err := other.Load(ctx, dir, 7); err == nil || !strings.Contains(err.Error(), "round-000000007") {
		t.Errorf("load of a step not saved: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "none")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Load(ctx, empty, -1); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("load from an empty directory: %v", err)
	}
}

// TestCheckpointUnwaitedPushes: two workers push ones into a summing
// table under asynchronous training without waiting for their tickets,
// then save; the checkpoint holds every push (Save waits for them all
// before the barrier), so a cluster that loads it pulls the exact counts.
func TestCheckpointUnwaitedPushes(t *testing.T) {
	dir := t.TempDir()
	sum := update.DefaultConfig()
	sum.Name, sum.LR = "sum", 0
	const pushes, rows = 200, 64
	run := func(f func(s *Session, tb *Table) error) {
		t.Helper()
		addr := startServers(t, 2, 2, 0, sum, clock.Async)
		errs := onWorkers(addr, 2, func(s *Session) error {
			tb, err := s.Declare(context.Background(), TableSpec{Name: "n", Rows: rows, Dim: 1})
			if err != nil {
				return err
			}
			return f(s, tb)
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("worker %d: %v", r, err)
			}
		}
	}
	all := make([]int64, rows)
	for i := range all {
		all[i] = int64(i)
	}
	run(func(s *Session, tb *Table) error {
		ones := make([]float32, rows)
		for i := range ones {
			ones[i] = 1
		}
		var tickets []*Ticket
		for range pushes {
			k, err := tb.Push(all, ones)
			if err != nil {
				return err
			}
			tickets = append(tickets, k)
		}
		if err := s.Save(context.Background(), dir, 1, nil); err != nil {
			return err
		}
		for _, k := range tickets {
			if err := k.Wait(); err != nil {
				return err
			}
		}
		return nil
	})
	run(func(s *Session, tb *Table) error {
		if _, _, err := s.Load(context.Background(), dir, -1); err != nil {
			return err
		}
		got := make([]float32, rows)
		k, err := tb.Pull(all, got)
		if err == nil {
			err = k.Wait()
		}
		if err != nil {
			return err
		}
		for i, v := range got {
			if v != 2*pushes {
				return fmt.Errorf("row %d: %v after loading, want %d", i, v, 2*pushes)
			}
		}
		return nil
	})
}
