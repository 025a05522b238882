package replica

import (
	"slices"
	"strings"
	"testing"
)

func TestChain(t *testing.T) {
	for _, c := range []struct {
		s, servers, r int
		dead          []int
		want          []int
	}{
		{0, 4, 1, nil, []int{1}},
		{3, 4, 2, nil, []int{0, 1}},
		{1, 4, 1, []int{2}, []int{3}},
		{1, 4, 5, nil, []int{2, 3, 0}}, // at most servers − 1
		{0, 1, 1, nil, nil},
		{0, 3, 2, []int{1, 2}, nil},
		{2, 5, 0, nil, nil},
	} {
		got := Chain(c.s, c.servers, c.r, func(s int) bool { return !slices.Contains(c.dead, s) })
		if !slices.Equal(got, c.want) {
			t.Errorf("Chain(%d, %d, %d) with %v dead = %v, want %v", c.s, c.servers, c.r, c.dead, got, c.want)
		}
	}
}

// TestPrimaryByHand walks a primary with two backups through updates,
// out-of-order acknowledgements and a backup's failure.
func TestPrimaryByHand(t *testing.T) {
	p := NewPrimary[string]([]int{2, 1})
	if got := p.Backups(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("backups %v", got)
	}
	step := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: released %q, want %q", what, got, want)
		}
	}
	seq, rel := p.Apply([]string{"w0 r0", "w1 r0"})
	if seq != 1 {
		t.Fatalf("first update numbered %d", seq)
	}
	step("apply 1", rel)
	seq, rel = p.Apply([]string{"w0 r1"})
	step("apply 2", rel)
	got, err := p.Acked(1, 2) // backup 1 has both
	step("backup 1 acks 2", got)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = p.Acked(2, 1) // backup 2 has the first: it is released
	step("backup 2 acks 1", got, "w0 r0", "w1 r0")
	got, _ = p.Acked(2, 1) // stale
	step("backup 2 acks 1 again", got)
	if p.Pending() != 1 {
		t.Fatalf("%d pending, want 1", p.Pending())
	}
	step("backup 2 fails", p.Down(2), "w0 r1")
	step("backup 2 fails again", p.Down(2))
	_, rel = p.Apply([]string{"w1 r1"})
	step("apply 3", rel)
	step("backup 1 fails", p.Down(1), "w1 r1")
	_, rel = p.Apply([]string{"w0 r2"})
	step("apply 4 without backups", rel, "w0 r2")
	for _, c := range []struct {
		b    int
		seq  uint64
		want string
	}{
		{1, 4, "server 1, which is not a live backup"},
		{7, 1, "server 7, which is not a live backup"},
	} {
		if _, err := p.Acked(c.b, c.seq); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Acked(%d, %d): %v, want %q", c.b, c.seq, err, c.want)
		}
	}
	q := NewPrimary[string]([]int{1})
	q.Apply(nil)
	if _, err := q.Acked(1, 2); err == nil || !strings.Contains(err.Error(), "acknowledged update 2, the last applied is 1") {
		t.Errorf("acknowledgement of an update never applied: %v", err)
	}
}

// TestReplicaByHand checks a backup's record: updates in order, again,
// after a gap, and the pushes it holds.
func TestReplicaByHand(t *testing.T) {
	r := NewReplica(2)
	for i, c := range []struct {
		seq    uint64
		pushes []Push
		apply  bool
		err    string
	}{
		{1, []Push{{0, 0}, {1, 0}}, true, ""},
		{1, []Push{{0, 0}, {1, 0}}, false, ""}, // sent again
		{3, []Push{{0, 1}}, false, "update 3 after update 1"},
		{2, []Push{{0, 0}}, false, "worker 0's push of round 0, after its round 0"},
		{2, []Push{{2, 1}}, false, "push of worker 2, want 0 to 1"},
		{2, []Push{{0, 1}}, true, ""},
		{3, nil, true, ""}, // an update of no push (a rule's step)
	} {
		apply, err := r.Update(c.seq, c.pushes)
		if apply != c.apply || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("step %d: Update(%d, %v) = %v, %v; want %v, %q", i, c.seq, c.pushes, apply, err, c.apply, c.err)
		}
	}
	if r.Applied() != 3 {
		t.Errorf("applied %d, want 3", r.Applied())
	}
	for _, c := range []struct {
		w     int
		round int64
		want  bool
	}{{0, 0, true}, {0, 1, true}, {0, 2, false}, {1, 0, true}, {1, 1, false}, {2, 0, false}, {-1, 0, false}} {
		if got := r.Has(c.w, c.round); got != c.want {
			t.Errorf("Has(%d, %d) = %v, want %v", c.w, c.round, got, c.want)
		}
	}
}

// TestPrimaryAheadByHand walks a primary that replicates rounds' sums:
// a round's acknowledgements go once the backups have the round before
// (ApplyAhead), an update applied with Apply (a move of keys) still
// waits for itself, and Replicated follows the slowest live backup.
func TestPrimaryAheadByHand(t *testing.T) {
	p := NewPrimary[string]([]int{1, 2})
	step := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: released %q, want %q", what, got, want)
		}
	}
	seq, rel := p.ApplyAhead([]string{"r0 w0", "r0 w1"})
	step("sum of round 0", rel, "r0 w0", "r0 w1") // nothing before it
	if seq != 1 || p.Replicated() != 0 {
		t.Fatalf("update %d, %d replicated", seq, p.Replicated())
	}
	_, rel = p.ApplyAhead([]string{"r1 w0", "r1 w1"})
	step("sum of round 1, round 0 on no backup", rel)
	got, _ := p.Acked(1, 1)
	step("backup 1 has round 0", got)
	got, _ = p.Acked(2, 1)
	step("backup 2 has round 0", got, "r1 w0", "r1 w1")
	if p.Replicated() != 1 {
		t.Fatalf("%d replicated, want 1", p.Replicated())
	}
	_, rel = p.Apply([]string{"put"}) // update 3 waits for itself
	step("a put", rel)
	_, rel = p.ApplyAhead([]string{"r2 w0"}) // update 4 waits for 3
	step("sum of round 2", rel)
	got, _ = p.Acked(1, 3)
	step("backup 1 has the put", got)
	got = p.Down(2)
	step("backup 2 fails", got, "put", "r2 w0")
	if p.Replicated() != 3 || p.Pending() != 0 {
		t.Fatalf("%d replicated, %d pending; want 3 and 0", p.Replicated(), p.Pending())
	}
	p.Down(1)
	if p.Replicated() != 4 {
		t.Fatalf("no backup left: %d replicated, want every update (4)", p.Replicated())
	}
}

// TestJoinByHand walks a new backup joining a primary that had none: the
// updates up to the copy it gets wait for no one, the next ones for it;
// its record starts at the copy and refuses a gap after it.
func TestJoinByHand(t *testing.T) {
	p := NewPrimary[int](nil)
	if _, rel := p.Apply([]int{1}); len(rel) != 1 {
		t.Fatalf("no backup: released %v, want [1]", rel)
	}
	_, held := p.ApplyAhead([]int{2})
	if len(held) != 1 {
		t.Fatalf("no backup: released %v, want [2]", held)
	}
	if rel, err := p.Join(5, 2); err != nil || len(rel) != 0 {
		t.Fatalf("join: %v, %v", rel, err)
	}
	if _, err := p.Join(5, 2); err == nil {
		t.Error("a live backup joined again")
	}
	if _, err := p.Join(6, 3); err == nil {
		t.Error("a backup joined with an update never applied")
	}
	if _, rel := p.ApplyAhead([]int{3}); len(rel) != 1 || rel[0] != 3 {
		t.Fatalf("update 3 needs update 2, in the copy: released %v, want [3]", rel)
	}
	if _, rel := p.Apply([]int{4}); len(rel) != 0 {
		t.Fatalf("update 4 released %v before the new backup has it", rel)
	}
	if got := p.Replicated(); got != 2 {
		t.Fatalf("replicated %d, want 2 (the copy)", got)
	}
	if rel, err := p.Acked(5, 4); err != nil || len(rel) != 1 || rel[0] != 4 {
		t.Fatalf("acked 4: %v, %v", rel, err)
	}
	r := NewReplicaAt(2, []int64{7, -1})
	if !r.Has(0, 7) || r.Has(0, 8) || r.Has(1, 0) {
		t.Error("the copy's record does not say which pushes it holds")
	}
	if _, err := r.Update(4, nil); err == nil {
		t.Error("update 4 after the copy of update 2 accepted")
	}
	if ok, err := r.Update(3, []Push{{Worker: 1, Round: 0}}); !ok || err != nil || !r.Has(1, 0) {
		t.Errorf("update 3 after the copy: %v, %v", ok, err)
	}
}
