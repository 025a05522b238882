package clock

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: BSP}, ""},
		{Config{Mode: Async}, ""},
		{Config{Mode: Bounded, Tau: 2}, ""},
		{Config{Mode: Bounded}, "Tau 0"},
		{Config{Mode: BSP, Tau: 1}, "Tau 1"},
		{Config{Mode: 9}, "Mode 9"},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(0, DefaultConfig()); err == nil {
		t.Error("New(0 workers) succeeded")
	}
	for _, s := range []string{"bsp", "async", "bounded"} {
		if m, err := ParseMode(s); err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("ssp"); err == nil {
		t.Error("ParseMode(ssp) succeeded")
	}
}

// TestBSPByHand walks two workers through two rounds.
func TestBSPByHand(t *testing.T) {
	c, _ := New(2, DefaultConfig())
	acks, err := c.Push(0, 0)
	if err != nil || len(acks) != 0 {
		t.Fatalf("first push of round 0: %v %v, want nothing released", acks, err)
	}
	acks, _ = c.Push(1, 0)
	if len(acks) != 2 || acks[0] != (Ack{0, 0}) || acks[1] != (Ack{1, 0}) {
		t.Fatalf("round 0 complete: released %v", acks)
	}
	if !c.Complete(0) || c.Complete(1) || c.Min() != 1 {
		t.Fatalf("Complete/Min wrong: min %d", c.Min())
	}
	if _, err := c.Push(0, 0); err == nil {
		t.Fatal("a second push of round 0 was accepted")
	}
	if _, err := c.Push(0, 5); err == nil {
		t.Fatal("a push of round 5 after round 0 was accepted")
	}
	if _, err := c.Push(2, 0); err == nil {
		t.Fatal("a push from worker 2 of 2 was accepted")
	}
}

// TestCompletes checks Completes against Push on random runs: a push
// completes its round exactly when the round is complete after it and
// was not before; a push out of order, or from no worker, completes
// nothing.
func TestCompletes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []Config{DefaultConfig(), {Mode: Bounded, Tau: 2}} {
		for run := range 50 {
			workers := 1 + rng.IntN(4)
			c, err := New(workers, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range 200 {
				w := rng.IntN(workers)
				r := c.Done(w)
				if c.Completes(w, r+1) || c.Completes(w, r-1) || c.Completes(-1, r) || c.Completes(workers, r) {
					t.Fatalf("%v run %d: a push out of order, or from no worker, completes round %d", cfg, run, r)
				}
				want := c.Completes(w, r)
				if _, err := c.Push(w, r); err != nil {
					t.Fatal(err)
				}
				if got := c.Complete(r); got != want {
					t.Fatalf("%v run %d: worker %d's push of round %d: Completes %v, round complete after it %v", cfg, run, w, r, want, got)
				}
			}
		}
	}
}

func TestAsyncAcksAtOnce(t *testing.T) {
	c, _ := New(3, Config{Mode: Async})
	for r := range int64(10) {
		acks, err := c.Push(0, r)
		if err != nil || len(acks) != 1 || acks[0] != (Ack{0, r}) {
			t.Fatalf("round %d: %v %v", r, acks, err)
		}
	}
	if c.Min() != 0 || c.Done(0) != 10 {
		t.Fatalf("min %d done %d", c.Min(), c.Done(0))
	}
}

// TestBoundedDelayNeverExceeded simulates workers of random speeds that
// follow the protocol (round r+1 only after the push of round r is
// acknowledged) under every model, and checks at every start of a round
// that the worker is at most τ rounds ahead of the slowest, that pushes
// are acknowledged exactly once and that nobody deadlocks.
func TestBoundedDelayNeverExceeded(t *testing.T) {
	const rounds = 60
	for _, cfg := range []Config{{Mode: BSP}, {Mode: Bounded, Tau: 1}, {Mode: Bounded, Tau: 3}, {Mode: Async}} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 1))
			w := 1 + rng.IntN(6)
			c, err := New(w, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pushed := make([]int64, w)  // rounds pushed
			started := make([]int64, w) // round the worker is in
			waiting := make([]bool, w)  // push sent, not acknowledged
			acked := make(map[Ack]bool)
			maxLead := int64(0)
			for steps := 0; ; steps++ {
				var ready []int
				for i := range w {
					if !waiting[i] && pushed[i] < rounds {
						ready = append(ready, i)
					}
				}
				if len(ready) == 0 {
					break
				}
				if steps > rounds*w*4 {
					t.Fatalf("%v seed %d: no progress", cfg, seed)
				}
				i := ready[rng.IntN(len(ready))]
				// Worker i is in round started[i]: check the bound.
				lead := started[i] - slowest(pushed)
				maxLead = max(maxLead, lead)
				if d := cfg.Delay(); d >= 0 && lead > int64(d) {
					t.Fatalf("%v seed %d: worker %d in round %d, slowest pushed %d rounds: lead %d > %d",
						cfg, seed, i, started[i], slowest(pushed), lead, d)
				}
				if !c.MayStart(started[i]) {
					t.Fatalf("%v seed %d: MayStart(%d) false for a started worker", cfg, seed, started[i])
				}
				waiting[i] = true
				acks, err := c.Push(i, pushed[i])
				if err != nil {
					t.Fatal(err)
				}
				pushed[i]++
				for _, a := range acks {
					if acked[a] {
						t.Fatalf("%v: %v acknowledged twice", cfg, a)
					}
					acked[a] = true
					waiting[a.Worker] = false
					started[a.Worker] = a.Round + 1
				}
			}
			if len(acked) != rounds*w || c.Pending() != 0 {
				t.Fatalf("%v seed %d: %d of %d pushes acknowledged, %d pending", cfg, seed, len(acked), rounds*w, c.Pending())
			}
			if cfg.Mode == Bounded && w > 1 && seed == 0 && maxLead == 0 {
				t.Logf("%v: workers never ran ahead", cfg)
			}
		}
	}
}

func slowest(p []int64) int64 {
	m := p[0]
	for _, v := range p {
		m = min(m, v)
	}
	return m
}

// TestParseName reads every model back from its name, in text form too,
// and refuses what is not one.
func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Config
		ok   bool
	}{
		{"bsp", Config{Mode: BSP}, true},
		{"async", Config{Mode: Async}, true},
		{"ssp:3", Config{Mode: Bounded, Tau: 3}, true},
		{"ssp:0", Config{}, false},
		{"ssp:-1", Config{}, false},
		{"ssp:03", Config{}, false},
		{"ssp", Config{}, false},
		{"bounded", Config{}, false},
		{"", Config{}, false},
	} {
		got, err := Parse(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("Parse(%q) = %+v, %v", tc.in, got, err)
			continue
		}
		if !tc.ok {
			continue
		}
		if got.Name() != tc.in {
			t.Errorf("Parse(%q).Name() = %q", tc.in, got.Name())
		}
		b, err := got.MarshalText()
		var back Config
		if err != nil || back.UnmarshalText(b) != nil || back != got {
			t.Errorf("%q: text round trip gives %+v (%v)", tc.in, back, err)
		}
	}
	if _, err := (Config{Mode: Bounded}).MarshalText(); err == nil {
		t.Error("MarshalText of bounded with τ = 0 succeeded")
	}
}
