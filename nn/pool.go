package nn

import (
	"runtime"
	"sync/atomic"
	"time"
)

// pool runs the parts of one layer's pass on up to threads goroutines
// (intra-op parallelism), each with its own matrix-product buffers. A
// part writes outputs no other part writes, and every output is summed
// in the same order whichever goroutine computes it, so results do not
// depend on the number of threads or on scheduling: they are bit for bit
// those of one thread.
//
// With more than one thread the pool keeps threads−1 helper goroutines
// (a crew) for as long as its Workspace lives: a pass is published to
// them rather than spawning goroutines, a helper that finished a pass
// spins a little (spinFor) for the next one (a training step's passes follow each
// other within microseconds) and then parks until woken. A pass whose
// work is small (below serialFlops) runs on the caller alone: waking a
// helper would cost more than it saves.
type pool struct {
	threads int
	gemm    []*gemmBuf  // one per thread
	tmp     [][]float32 // one per thread: a conv's col gradient
	crew    *crew       // threads−1 helpers; nil with one thread
	serial  int         // passes of less work run on the caller: serialFlops (tests lower it)
}

// job is a pass cut into parts; part runs part i on thread t.
type job interface{ part(i, t int) }

func newPool(threads int) *pool {
	p := &pool{serial: serialFlops}
	p.setThreads(threads)
	return p
}

func (p *pool) setThreads(threads int) {
	p.threads = max(1, threads)
	for len(p.gemm) < p.threads {
		p.gemm = append(p.gemm, newGemmBuf())
		p.tmp = append(p.tmp, nil)
	}
	if p.crew != nil && p.crew.helpers != p.threads-1 {
		p.crew.stop()
		p.crew = nil
	}
	if p.crew == nil && p.threads > 1 {
		p.crew = newCrew(p.threads - 1)
	}
}

// close stops the pool's helpers.
func (p *pool) close() {
	if p.crew != nil {
		p.crew.stop()
		p.crew = nil
	}
}

// floats returns thread t's scratch floats, at least size of them.
func (p *pool) floats(t, size int) []float32 {
	if len(p.tmp[t]) < size {
		p.tmp[t] = make([]float32, size)
	}
	return p.tmp[t][:size]
}

// serialFlops is the work (floating-point operations, as the layers
// estimate it) below which a pass runs on the caller alone: about 20 µs
// of one core, several times what handing parts to a helper costs.
const serialFlops = 1 << 20

// run runs parts 0..parts−1 of j, whose work is about flops operations,
// on up to threads goroutines, the caller's among them. Parts are taken
// in order by whichever goroutine is free, so a helper the operating
// system has not scheduled yet (on a busy machine) leaves its share to
// the others instead of holding the pass up; which goroutine ran a part
// changes nothing in the results.
func (p *pool) run(parts, flops int, j job) {
	if min(p.threads, parts) <= 1 || flops < p.serial {
		for i := range parts {
			j.part(i, 0)
		}
		return
	}
	p.crew.run(parts, j)
}

// crew is a pool's helper goroutines. One round (a pass) at a time is
// published in round; gen counts the rounds, so a helper knows a new one
// from the one it did.
type crew struct {
	helpers int
	gen     atomic.Uint64
	round   atomic.Pointer[round]
	quit    atomic.Bool
	parked  []atomic.Bool
	wake    []chan struct{}
	done    chan struct{}
}

// round is one run of a job on the crew. A helper that comes to it late
// finds no part left and touches nothing else.
type round struct {
	j          job
	parts      int64
	next, fini atomic.Int64
	done       chan struct{}
}

// spinFor is how long a helper looks for a new round before it parks,
// and how long the caller looks for the end of a round before it blocks:
// more than the gaps between a step's passes and between steps (the
// optimiser's update), little CPU taken from others on a busy machine.
// Between looks a goroutine pauses the processor (cpuPause, a few tens
// of nanoseconds) where it can, and yields to the scheduler every
// yieldEvery looks, or at every look when there are more threads than
// GOMAXPROCS (a spinning helper would hold the processor the caller
// needs).
const (
	spinFor    = 100 * time.Microsecond
	yieldEvery = 64
)

// waiter spins for a while, then says to block.
type waiter struct {
	start time.Time
	looks int
	yield bool // yield at every look
}

func newWaiter() waiter {
	return waiter{start: time.Now(), yield: cpuPause == nil}
}

// spin waits a little and reports whether to look again (false: block).
func (w *waiter) spin(threads int) bool {
	w.looks++
	if w.looks == 1 && threads > runtime.GOMAXPROCS(0) {
		w.yield = true
	}
	if w.looks%yieldEvery == 0 || w.yield {
		if time.Since(w.start) > spinFor {
			return false
		}
		runtime.Gosched()
		return true
	}
	cpuPause()
	return true
}

func newCrew(helpers int) *crew {
	c := &crew{helpers: helpers, parked: make([]atomic.Bool, helpers),
		wake: make([]chan struct{}, helpers), done: make(chan struct{}, 1)}
	for h := range helpers {
		c.wake[h] = make(chan struct{}, 1)
		go c.help(h)
	}
	return c
}

// run runs the parts of j on the caller and the helpers and returns when
// all are done.
func (c *crew) run(parts int, j job) {
	r := &round{j: j, parts: int64(parts), done: c.done}
	c.round.Store(r)
	c.gen.Add(1)
	for h := range c.helpers {
		if c.parked[h].Load() {
			select {
			case c.wake[h] <- struct{}{}:
			default:
			}
		}
	}
	r.work(0)
	// The caller's parts are done; the helpers' finish soon after, so it
	// looks for a while before it blocks.
	w := newWaiter()
	for r.fini.Load() != r.parts && w.spin(c.helpers+1) {
	}
	<-c.done
	c.round.Store(nil)
}

// help is helper h's loop: it runs the parts of each new round it sees,
// spinning for a while between rounds and then parking until run wakes
// it.
func (c *crew) help(h int) {
	seen := c.gen.Load()
	for {
		w := newWaiter()
		for c.gen.Load() == seen && !c.quit.Load() {
			if w.spin(c.helpers + 1) {
				continue
			}
			// Park, unless a round came after the last look (run stores
			// gen before it reads parked, so one of the two sees the
			// other).
			c.parked[h].Store(true)
			if c.gen.Load() == seen && !c.quit.Load() {
				<-c.wake[h]
			}
			c.parked[h].Store(false)
			w = newWaiter()
		}
		if c.quit.Load() {
			return
		}
		seen = c.gen.Load()
		if r := c.round.Load(); r != nil {
			r.work(1 + h)
		}
	}
}

// stop ends the helpers (those parked are woken to end).
func (c *crew) stop() {
	c.quit.Store(true)
	for h := range c.helpers {
		select {
		case c.wake[h] <- struct{}{}:
		default:
		}
	}
}

func (r *round) work(t int) {
	for {
		i := r.next.Add(1) - 1
		if i >= r.parts {
			return
		}
		r.j.part(int(i), t)
		if r.fini.Add(1) == r.parts {
			r.done <- struct{}{}
		}
	}
}

// split cuts [0, n) into at most threads ranges whose starts are
// multiples of q and returns the length of each range but the last.
func split(n, threads, q int) int {
	return max(q, roundUp((n+threads-1)/max(1, threads), q))
}

// pass holds the arguments of one layer's forward or backward pass while
// its parts run.
type pass struct {
	l                  parted
	fwd                bool
	p, x, y, dy, dx, g []float32
	scale              float32
	n                  int
	s                  *scratch
	parts              int // of the first kind, in a backward pass of two kinds
	py                 []float32
	ps                 *scratch // with py, a fused pooling layer's output and scratch (conv.forwardPool)
}

// parted is a layer whose passes run in parts.
type parted interface {
	forwardPart(j *pass, i, t int)
	backwardPart(j *pass, i, t int)
}

func (j *pass) part(i, t int) {
	if j.fwd {
		j.l.forwardPart(j, i, t)
	} else {
		j.l.backwardPart(j, i, t)
	}
}
