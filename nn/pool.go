package nn

import "sync/atomic"

// pool runs the parts of one layer's pass on up to threads goroutines
// (intra-op parallelism), each with its own matrix-product buffers. A
// part writes outputs no other part writes, and every output is summed
// in the same order whichever goroutine computes it, so results do not
// depend on the number of threads or on scheduling: they are bit for bit
// those of one thread.
type pool struct {
	threads int
	gemm    []*gemmBuf  // one per thread
	tmp     [][]float32 // one per thread: a conv's col gradient
}

// job is a pass cut into parts; part runs part i on thread t.
type job interface{ part(i, t int) }

func newPool(threads int) *pool {
	p := &pool{}
	p.setThreads(threads)
	return p
}

func (p *pool) setThreads(threads int) {
	p.threads = max(1, threads)
	for len(p.gemm) < p.threads {
		p.gemm = append(p.gemm, newGemmBuf())
		p.tmp = append(p.tmp, nil)
	}
}

// floats returns thread t's scratch floats, at least size of them.
func (p *pool) floats(t, size int) []float32 {
	if len(p.tmp[t]) < size {
		p.tmp[t] = make([]float32, size)
	}
	return p.tmp[t][:size]
}

// run runs parts 0..parts−1 of j on up to threads goroutines, the
// caller's among them. Parts are taken in order by whichever goroutine is
// free, so a helper the operating system has not scheduled yet (on a
// busy machine) leaves its share to the others instead of holding the
// pass up; which goroutine ran a part changes nothing in the results.
func (p *pool) run(parts int, j job) {
	t := min(p.threads, parts)
	if t <= 1 {
		for i := range parts {
			j.part(i, 0)
		}
		return
	}
	r := &round{j: j, parts: int64(parts), done: make(chan struct{})}
	for w := 1; w < t; w++ {
		go r.work(w)
	}
	r.work(0)
	<-r.done
}

// round is one run of a job on a pool. A helper that starts after the
// round is over finds no part left and touches nothing else.
type round struct {
	j          job
	parts      int64
	next, fini atomic.Int64
	done       chan struct{}
}

func (r *round) work(t int) {
	for {
		i := r.next.Add(1) - 1
		if i >= r.parts {
			return
		}
		r.j.part(int(i), t)
		if r.fini.Add(1) == r.parts {
			close(r.done)
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
