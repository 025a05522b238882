package worker

import (
	"errors"
	"fmt"
	"testing"

	"colo/ps/clock"
	"colo/ps/proto"
	"colo/ps/route"
)

// TestPause: a pause fails the push in flight and the pull behind its
// gate with the cause, and every call until the resume; after it the
// rounds start at 0 again and requests carry the new epoch.
func TestPause(t *testing.T) {
	tb, _ := route.Uniform(2, 10)
	c, err := NewCore(Config{Rank: 0, Table: tb, Width: 1, Clock: clock.Config{Mode: clock.BSP}})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(op *Op) (*Future, []Out) {
		op.fut = newFuture()
		return op.fut, c.Submit(op)
	}
	push, outs := submit(&Op{kind: opPush, keys: []uint64{1, 7}, vals: []float32{1, 2}})
	if len(outs) != 2 {
		t.Fatalf("push sent as %d messages", len(outs))
	}
	pull, _ := submit(&Op{kind: opPull, keys: []uint64{1}, dst: make([]float32, 1)})
	cause := fmt.Errorf("%w: server 1 failed", proto.ErrPaused)
	if p, _ := submit(&Op{kind: opPause, epoch: 3, cause: cause}); p.Wait() != nil {
		t.Fatal("pause failed")
	}
	for name, f := range map[string]*Future{"push": push, "pull": pull} {
		if err := f.Wait(); !errors.Is(err, proto.ErrPaused) {
			t.Fatalf("%s in flight: %v, want the pause", name, err)
		}
	}
	if later, outs := submit(&Op{kind: opPull, keys: []uint64{1}, dst: make([]float32, 1)}); !errors.Is(later.Wait(), proto.ErrPaused) || len(outs) != 0 {
		t.Fatalf("a call while paused: %v, %d messages", later.Wait(), len(outs))
	}
	if c.InFlight() != 0 || c.Round() != 0 {
		t.Fatalf("%d in flight, round %d after the pause", c.InFlight(), c.Round())
	}
	submit(&Op{kind: opResume})
	_, outs = submit(&Op{kind: opPush, keys: []uint64{1}, vals: []float32{1}})
	if len(outs) != 2 {
		t.Fatalf("push after the resume sent as %d messages", len(outs))
	}
	for _, o := range outs {
		round, epoch, err := proto.ParseMetaEpoch(o.M)
		if err != nil || round != 0 || epoch != 3 || o.M.ID != 3<<40+1 {
			t.Fatalf("push after the resume: round %d epoch %d id %d (%v), want round 0 of epoch 3 with a new id", round, epoch, o.M.ID, err)
		}
	}
}
