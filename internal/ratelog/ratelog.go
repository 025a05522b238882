// Package ratelog lets a burst of log lines of one kind through per
// period and counts the others, so that a flood (a stranger dialing a
// node's port in a loop, a misconfigured node registering again and
// again) costs a few lines and a count instead of a line per attempt.
//
// Limiter is the pure rule, a state machine over a clock the caller
// counts (nanoseconds, or a scheduler's ticks): Allow says whether a line
// goes out now and how many were suppressed before it; Due says whether
// a count is left to report once a period has ended without another
// line. Logger drives a Limiter with the wall clock and reports a count
// left at the end of its period by itself. Each call is O(1).
//
// Example:
//
//	logf, flush := ratelog.Logger(logf, 5, 30*time.Second, "refused connections")
//	defer flush()
//	… logf("refused a connection from %s: %v", addr, err) // 5 lines, then
//	// "… suppressed 812 more refused connections in 30s"
package ratelog

import (
	"strings"
	"sync"
	"time"
)

// Limiter lets Burst lines through per Period and counts the rest. Its
// zero value lets nothing through; a Limiter is not safe for concurrent
// use (Logger locks one).
type Limiter struct {
	// Burst is how many lines go out per period.
	Burst int
	// Period is the length of a period in the caller's unit of time.
	Period int64

	start   int64 // when the current period began
	n       int   // lines let through in it
	dropped int   // lines suppressed and not yet reported
	started bool
}

// Allow reports whether a line at time now goes out; when it does,
// suppressed is how many lines were held back before it (and are now
// reported, to be said with it). A line after the end of a period starts
// a new one.
func (l *Limiter) Allow(now int64) (ok bool, suppressed int) {
	if !l.started || now-l.start >= l.Period {
		l.started, l.start, l.n = true, now, 0
	}
	if l.n >= l.Burst {
		l.dropped++
		return false, 0
	}
	l.n++
	suppressed, l.dropped = l.dropped, 0
	return true, suppressed
}

// Due returns, once the period of the suppressed lines has ended by now,
// how many were suppressed, and forgets them: the caller says so in a
// line of its own. It returns 0 otherwise.
func (l *Limiter) Due(now int64) int {
	if l.dropped == 0 || now-l.start < l.Period {
		return 0
	}
	d := l.dropped
	l.dropped = 0
	return d
}

// Logger returns a logf that passes at most burst lines per period to
// logf and reports those it suppressed, as "suppressed N more WHAT in
// PERIOD" (WHAT may start with the prefix of the other lines:
// "scheduler: " gives "scheduler: suppressed N more …" when what is
// "scheduler: refused connections"), with the next line let through or, when none comes, at the end
// of the period; and flush, which reports at once those not yet reported
// (call it when the run ends, so that none goes unsaid). Both are safe for
// concurrent use.
func Logger(logf func(format string, args ...any), burst int, period time.Duration, what string) (limited func(format string, args ...any), flush func()) {
	var (
		mu    sync.Mutex
		l     = Limiter{Burst: burst, Period: int64(period)}
		t0    = time.Now()
		armed bool
	)
	now := func() int64 { return int64(time.Since(t0)) }
	prefix := ""
	if i := strings.LastIndex(what, ": "); i >= 0 {
		prefix, what = what[:i+2], what[i+2:]
	}
	say := func(n int) { logf("%ssuppressed %d more %s in %v", prefix, n, what, period) }
	var due func()
	due = func() {
		mu.Lock()
		defer mu.Unlock()
		armed = false
		if n := l.Due(now()); n > 0 {
			say(n)
		} else if l.dropped > 0 { // woken early: wait for the rest of the period
			armed = true
			time.AfterFunc(time.Duration(l.start+l.Period-now()), due)
		}
	}
	flush = func() {
		mu.Lock()
		defer mu.Unlock()
		if l.dropped > 0 {
			say(l.dropped)
			l.dropped = 0
		}
	}
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		ok, suppressed := l.Allow(now())
		if suppressed > 0 {
			say(suppressed)
		}
		if ok {
			logf(format, args...)
			return
		}
		if !armed {
			armed = true
			time.AfterFunc(time.Duration(l.start+l.Period-now()), due)
		}
	}, flush
}
