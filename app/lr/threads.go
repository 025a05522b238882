package lr

import (
	"sync"

	"colo/app/sparse"
)

// MaxThreads is the most goroutines a worker's step runs on.
const MaxThreads = 256

// minThreadEntries is the fewest entries of a batch per goroutine worth
// a goroutine of its own: below it a step runs on fewer.
const minThreadEntries = 1 << 14

// Threads runs Model.LossGrad on several goroutines with the same result
// to the bit, for a batch it steps on many times (full-batch rounds).
//
// The scores, the softmax and each sample's error run on contiguous runs
// of the samples, one a goroutine; the loss and the correct count are
// then summed in the samples' order, as LossGrad sums them. The gradient
// runs on contiguous runs of the batch's keys, one a goroutine, each
// going over the samples in order and adding only the entries of its
// keys: every key's gradient gets the same terms in the same order as in
// LossGrad's single pass. A Threads keeps, for every batch it stepped on
// with more than one goroutine, each goroutine's entries (a copy of the
// batch's positions and values, split by key) and the samples' errors
// (samples × width floats): with --threads a worker holds its share of
// the data about twice.
type Threads struct {
	n     int
	plans map[*sparse.Batch]*threadPlan
	// minEntries is minThreadEntries (tests set fewer).
	minEntries int
}

// NewThreads returns a Threads of n goroutines (n ≤ 1: one, LossGrad
// itself; at most MaxThreads).
func NewThreads(n int) *Threads {
	return &Threads{n: min(max(n, 1), MaxThreads), plans: map[*sparse.Batch]*threadPlan{}, minEntries: minThreadEntries}
}

// threadPlan is how a batch is cut among goroutines.
type threadPlan struct {
	rows []int // sample runs: goroutine t has rows[t] ≤ i < rows[t+1]
	// entries of goroutine t's keys, by sample: off[t][i]…off[t][i+1]
	// index pos[t] and val[t].
	off [][]int64
	pos [][]int32
	val [][]float32
	// Per sample: its error (width floats), loss and whether its class
	// scored highest.
	d       []float32
	loss    []float64
	correct []bool
}

// LossGrad is m.LossGrad(b, w, grad, scale), on the goroutines of t.
func (t *Threads) LossGrad(m Model, b *sparse.Batch, w, grad []float32, scale float32) (float64, int) {
	n := min(t.n, len(b.Pos)/t.minEntries)
	if n <= 1 {
		return m.LossGrad(b, w, grad, scale)
	}
	p := t.plans[b]
	if p == nil || len(p.rows) != n+1 {
		p = newThreadPlan(b, n, m.Width())
		t.plans[b] = p
	}
	W := m.Width()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { p.errors(m, b, w, scale, W, p.rows[g], p.rows[g+1]) })
	}
	wg.Wait()
	var loss float64
	correct := 0
	for i, l := range p.loss {
		loss += l
		if p.correct[i] {
			correct++
		}
	}
	for g := range n {
		wg.Go(func() { p.scatter(grad, W, g) })
	}
	wg.Wait()
	return loss, correct
}

// newThreadPlan cuts b among n goroutines: the samples into runs of
// about equal entries, the keys too, each key's entries kept in the
// samples' order.
func newThreadPlan(b *sparse.Batch, n, width int) *threadPlan {
	rows := b.Len()
	total := int64(len(b.Pos))
	p := &threadPlan{rows: make([]int, n+1), off: make([][]int64, n), pos: make([][]int32, n), val: make([][]float32, n),
		d: make([]float32, rows*width), loss: make([]float64, rows), correct: make([]bool, rows)}
	for g, i := 1, 0; g < n; g++ {
		for i < rows && b.Off[i]*int64(n) < total*int64(g) {
			i++
		}
		p.rows[g] = i
	}
	p.rows[n] = rows
	// The keys: runs of about equal entries.
	count := make([]int64, len(b.Keys)+1)
	for _, x := range b.Pos {
		count[x+1]++
	}
	for k := range b.Keys {
		count[k+1] += count[k]
	}
	owner := make([]int32, len(b.Keys))
	for k := range b.Keys {
		owner[k] = int32(min(int64(n-1), count[k]*int64(n)/max(total, 1)))
	}
	for g := range n {
		p.off[g] = make([]int64, rows+1)
	}
	for g := range n {
		size := 0
		for k := range b.Keys {
			if owner[k] == int32(g) {
				size += int(count[k+1] - count[k])
			}
		}
		p.pos[g], p.val[g] = make([]int32, 0, size), make([]float32, 0, size)
	}
	for i := range rows {
		for e := b.Off[i]; e < b.Off[i+1]; e++ {
			g := owner[b.Pos[e]]
			p.pos[g] = append(p.pos[g], b.Pos[e])
			p.val[g] = append(p.val[g], b.Val[e])
		}
		for g := range n {
			p.off[g][i+1] = int64(len(p.pos[g]))
		}
	}
	return p
}

// errors computes the error, loss and correctness of samples lo…hi−1,
// as LossGrad does.
func (p *threadPlan) errors(m Model, b *sparse.Batch, w []float32, scale float32, W, lo, hi int) {
	if W == 1 {
		for i := lo; i < hi; i++ {
			pos, val := b.Pos[b.Off[i]:b.Off[i+1]], b.Val[b.Off[i]:b.Off[i+1]]
			var z float64
			for j, x := range pos {
				z += float64(val[j]) * float64(w[x])
			}
			y := float64(b.Class[i])
			p.loss[i] = logLoss1(z, y)
			p.correct[i] = (z > 0) == (y == 1)
			p.d[i] = float32((sigmoid(z) - y)) * scale
		}
		return
	}
	z := make([]float64, W)
	z32 := make([]float32, W)
	for i := lo; i < hi; i++ {
		pos, val := b.Pos[b.Off[i]:b.Off[i+1]], b.Val[b.Off[i]:b.Off[i+1]]
		scores(z32, w, pos, val)
		for c, v := range z32 {
			z[c] = float64(v)
		}
		y := int(b.Class[i])
		l, best := softmax(z, y)
		p.loss[i], p.correct[i] = l, best == y
		d := p.d[i*W : i*W+W]
		for c := range W {
			d[c] = float32(z[c]) * scale
		}
		d[y] -= scale
	}
}

// scatter adds to grad the terms of goroutine g's keys, sample by sample.
func (p *threadPlan) scatter(grad []float32, W, g int) {
	off, pos, val := p.off[g], p.pos[g], p.val[g]
	for i := range len(off) - 1 {
		lo, hi := off[i], off[i+1]
		if lo == hi {
			continue
		}
		if W == 1 {
			d := p.d[i]
			for j, x := range pos[lo:hi] {
				grad[x] += d * val[lo+int64(j)]
			}
			continue
		}
		scatter(grad, p.d[i*W:i*W+W], pos[lo:hi], val[lo:hi])
	}
}
