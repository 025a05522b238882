package ratelog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLimiterByHand walks two periods of a burst of 2 in periods of 10.
func TestLimiterByHand(t *testing.T) {
	l := Limiter{Burst: 2, Period: 10}
	type step struct {
		now        int64
		due        bool // call Due instead of Allow
		ok         bool
		suppressed int // or Due's result
	}
	for i, s := range []step{
		{now: 0, ok: true}, {now: 1, ok: true}, {now: 2}, {now: 5},
		{now: 9, due: true},                // the period has not ended
		{now: 10, ok: true, suppressed: 2}, // a new period says what the last held back
		{now: 11, ok: true}, {now: 12},     // a burst again, then one held back
		{now: 19, due: true}, {now: 20, due: true, suppressed: 1}, // no line came: Due reports it
		{now: 21, due: true}, // reported once
		{now: 25, ok: true},  // the next line starts a period at 25
		{now: 30, ok: true}, {now: 34}, {now: 35, ok: true, suppressed: 1},
	} {
		if s.due {
			if got := l.Due(s.now); got != s.suppressed {
				t.Fatalf("step %d: Due(%d) = %d, want %d", i, s.now, got, s.suppressed)
			}
			continue
		}
		ok, sup := l.Allow(s.now)
		if ok != s.ok || sup != s.suppressed {
			t.Fatalf("step %d: Allow(%d) = %v, %d; want %v, %d", i, s.now, ok, sup, s.ok, s.suppressed)
		}
	}
}

// TestLimiterProperties: on random runs no period lets more than Burst
// lines through, and every line is either let through or counted once.
func TestLimiterProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 200; run++ {
		l := Limiter{Burst: 1 + r.IntN(4), Period: 1 + r.Int64N(20)}
		var now int64
		var calls, passed, reported int
		var windowStart int64 = -1 << 62
		inWindow := 0
		for i := 0; i < 300; i++ {
			now += r.Int64N(4)
			if r.IntN(5) == 0 {
				reported += l.Due(now)
				continue
			}
			calls++
			ok, sup := l.Allow(now)
			reported += sup
			if !ok {
				continue
			}
			passed++
			if now-windowStart >= l.Period {
				windowStart, inWindow = now, 0
			}
			if inWindow++; inWindow > l.Burst {
				t.Fatalf("run %d: %d lines in the period from %d (burst %d)", run, inWindow, windowStart, l.Burst)
			}
		}
		if passed+reported+l.dropped != calls {
			t.Fatalf("run %d: %d calls, %d passed, %d reported, %d pending", run, calls, passed, reported, l.dropped)
		}
	}
}

// TestLogger: a flood of lines becomes a burst and a count, reported at
// the end of the period when no further line comes.
func TestLogger(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	reported := make(chan int, 1)
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		if n, ok := strings.CutPrefix(line, "suppressed "); ok {
			k, _ := strconv.Atoi(strings.Fields(n)[0])
			reported <- k
		}
	}
	const burst = 3
	lf, _ := Logger(logf, burst, 50*time.Millisecond, "refused connections")
	// Call until some lines are held back (a loaded machine may spread the
	// first calls over several periods).
	calls := 0
	for {
		lf("refused a connection from %q", "10.0.0.9:1")
		calls++
		mu.Lock()
		held := calls - len(lines)
		mu.Unlock()
		if held > 0 {
			break
		}
	}
	sup := 0
	select {
	case sup = <-reported:
	case <-time.After(30 * time.Second):
		t.Fatal("the suppressed lines were never reported")
	}
	mu.Lock()
	defer mu.Unlock()
	passed := len(lines) - 1
	if passed+sup != calls {
		t.Errorf("%d calls: %d lines and %d reported suppressed:\n%s", calls, passed, sup, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "more refused connections in 50ms") {
		t.Errorf("report %q", last)
	}
}

// TestLoggerFlush: flush reports at once the lines held back, and only
// once.
func TestLoggerFlush(t *testing.T) {
	var lines []string
	lf, flush := Logger(func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }, 2, time.Hour, "scheduler: refusals")
	for i := range 10 {
		lf("line %d", i)
	}
	flush()
	flush()
	want := []string{"line 0", "line 1", "scheduler: suppressed 8 more refusals in 1h0m0s"}
	if !slices.Equal(lines, want) {
		t.Errorf("%q, want %q", lines, want)
	}
}
