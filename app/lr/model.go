package lr

import (
	"colo/app/sparse"
	"math"
	"slices"
)

// Model is logistic regression on sparse features: binary (one weight per
// feature, the sigmoid of the score is the probability of the larger
// label) or multinomial (softmax; one key per feature holding one weight
// per class). The loss is the log loss summed over the samples; L1 and L2
// penalties belong to the servers' update rule.
type Model struct {
	// Classes is the number of classes, at least 2.
	Classes int
}

// Width returns the number of values per key: 1 for two classes, one
// per class otherwise.
func (m Model) Width() int {
	if m.Classes == 2 {
		return 1
	}
	return m.Classes
}

// minProb bounds the probabilities whose log is taken, so that a
// confidently wrong prediction costs a large finite loss.
const minProb = 1e-15

// LossGrad returns the log loss summed over the rows of b at weights w
// (w[p·W:(p+1)·W] are the weights of b.Keys[p]) and the number of rows
// predicted right, and adds scale times the gradient of the summed loss
// to grad (laid out like w).
func (m Model) LossGrad(b *sparse.Batch, w, grad []float32, scale float32) (loss float64, correct int) {
	W := m.Width()
	if W == 1 {
		for i := range b.Len() {
			lo, hi := b.Off[i], b.Off[i+1]
			pos, val := b.Pos[lo:hi], b.Val[lo:hi]
			var z float64
			for j, p := range pos {
				z += float64(val[j]) * float64(w[p])
			}
			y := float64(b.Class[i])
			loss += logLoss1(z, y)
			if (z > 0) == (y == 1) {
				correct++
			}
			d := float32((sigmoid(z) - y)) * scale
			for j, p := range pos {
				grad[p] += d * val[j]
			}
		}
		return loss, correct
	}
	z := make([]float64, W)
	z32 := make([]float32, W)
	d := make([]float32, W)
	for i := range b.Len() {
		lo, hi := b.Off[i], b.Off[i+1]
		pos, val := b.Pos[lo:hi], b.Val[lo:hi]
		// Scores in float32 (a sample has few entries), then float64 for
		// the softmax.
		scores(z32, w, pos, val)
		for c, v := range z32 {
			z[c] = float64(v)
		}
		y := int(b.Class[i])
		l, best := softmax(z, y)
		loss += l
		if best == y {
			correct++
		}
		for c := range W {
			d[c] = float32(z[c]) * scale
		}
		d[y] -= scale
		scatter(grad, d, pos, val)
	}
	return loss, correct
}

// sigmoid returns 1/(1+e^−z).
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// logLoss1 returns −log P(y | z) for a binary label y ∈ {0, 1} and score
// z, computed stably: log(1+e^−z) for y = 1, log(1+e^z) for y = 0.
func logLoss1(z, y float64) float64 {
	if y == 0 {
		z = -z
	}
	// log(1+e^−z)
	if z > 0 {
		return math.Log1p(math.Exp(-z))
	}
	return -z + math.Log1p(math.Exp(z))
}

// softmax turns scores z into probabilities in place and returns −log of
// the probability of class y and the class of highest score (the lowest
// index on ties).
func softmax(z []float64, y int) (loss float64, best int) {
	mx := z[0]
	for c, v := range z {
		if v > mx {
			mx, best = v, c
		}
	}
	var s float64
	for c, v := range z {
		e := math.Exp(v - mx)
		z[c] = e
		s += e
	}
	for c := range z {
		z[c] /= s
	}
	return -math.Log(max(z[y], minProb)), best
}

// Metrics are the test-set measures of a classifier.
type Metrics struct {
	Samples  int     `json:"samples"`
	Accuracy float64 `json:"accuracy"`
	LogLoss  float64 `json:"log_loss"`
	// AUC is the area under the ROC curve; for more than two classes the
	// mean over classes of one class against the rest.
	AUC float64 `json:"auc"`
}

// Evaluate scores the rows r with the model w (w[k·W:(k+1)·W] are the
// weights of key k).
func (m Model) Evaluate(r *sparse.Rows, w []float32) Metrics {
	W := m.Width()
	n := r.Len()
	res := Metrics{Samples: n}
	if n == 0 {
		return res
	}
	scores := make([]float64, n*W) // binary: the score; else probabilities
	z := make([]float64, W)
	var loss float64
	correct := 0
	for i := range n {
		cols, vals := r.Row(i)
		clear(z)
		for j, k := range cols {
			x := float64(vals[j])
			for c := range W {
				z[c] += x * float64(w[int(k)*W+c])
			}
		}
		y := int(r.Class[i])
		if W == 1 {
			loss += logLoss1(z[0], float64(y))
			if (z[0] > 0) == (y == 1) {
				correct++
			}
			scores[i] = z[0]
			continue
		}
		l, best := softmax(z, y)
		loss += l
		if best == y {
			correct++
		}
		copy(scores[i*W:], z)
	}
	res.Accuracy = float64(correct) / float64(n)
	res.LogLoss = loss / float64(n)
	if W == 1 {
		pos := make([]bool, n)
		for i := range n {
			pos[i] = r.Class[i] == 1
		}
		res.AUC = AUC(scores, pos)
		return res
	}
	var sum float64
	var classes int
	s := make([]float64, n)
	pos := make([]bool, n)
	for c := range W {
		for i := range n {
			s[i], pos[i] = scores[i*W+c], int(r.Class[i]) == c
		}
		if a := AUC(s, pos); !math.IsNaN(a) {
			sum += a
			classes++
		}
	}
	res.AUC = sum / float64(max(classes, 1))
	return res
}

// AUC returns the area under the ROC curve of scores for the positives
// pos: the probability that a random positive scores above a random
// negative, ties counting one half. It is NaN without positives or
// negatives.
func AUC(scores []float64, pos []bool) float64 {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case scores[a] < scores[b]:
			return -1
		case scores[a] > scores[b]:
			return 1
		}
		return 0
	})
	var rankSum float64
	var np, nn int
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		// Ranks i+1..j share their mean.
		mean := float64(i+1+j) / 2
		for _, t := range idx[i:j] {
			if pos[t] {
				rankSum += mean
				np++
			} else {
				nn++
			}
		}
		i = j
	}
	if np == 0 || nn == 0 {
		return math.NaN()
	}
	return (rankSum - float64(np)*float64(np+1)/2) / (float64(np) * float64(nn))
}

// scores sets z[c] = Σ_j val[j]·w[pos[j]·W + c] for the W = len(z)
// classes: with the AVX kernels where the processor has them (eight and
// four classes a pass), else scoresGo. Both add the products of each
// class in the order of the entries, with a separate multiply and add, so
// the results are the same bit for bit.
func scores(z, w []float32, pos []int32, val []float32) {
	if !simd || len(pos) == 0 || len(z) < 4 {
		scoresGo(z, w, pos, val)
		return
	}
	scoresSIMD(z, w, pos, val)
}

// scatter adds val[j]·d[c] to grad[pos[j]·W + c] for the W = len(d)
// classes, with the kernels as scores does, else scatterGo, with the same
// results bit for bit.
func scatter(grad, d []float32, pos []int32, val []float32) {
	if !simd || len(pos) == 0 || len(d) < 4 {
		scatterGo(grad, d, pos, val)
		return
	}
	scatterSIMD(grad, d, pos, val)
}

// scoresGo is scores in Go. Classes go four at a time, so that their
// sums stay in registers while the sample's entries stream by (its rows
// of w stay in the cache between the blocks).
func scoresGo(z, w []float32, pos []int32, val []float32) {
	W := len(z)
	c := 0
	for ; c+4 <= W; c += 4 {
		var z0, z1, z2, z3 float32
		for j, p := range pos {
			x := val[j]
			r := w[int(p)*W+c : int(p)*W+c+4 : int(p)*W+c+4]
			z0 += x * r[0]
			z1 += x * r[1]
			z2 += x * r[2]
			z3 += x * r[3]
		}
		z[c], z[c+1], z[c+2], z[c+3] = z0, z1, z2, z3
	}
	scoresTail(z, w, pos, val, c)
}

// scoresTail computes the classes from c on one at a time.
func scoresTail(z, w []float32, pos []int32, val []float32, c int) {
	W := len(z)
	for ; c < W; c++ {
		var zc float32
		for j, p := range pos {
			zc += val[j] * w[int(p)*W+c]
		}
		z[c] = zc
	}
}

// scatterGo is scatter in Go, four classes at a time as scoresGo.
func scatterGo(grad, d []float32, pos []int32, val []float32) {
	W := len(d)
	c := 0
	for ; c+4 <= W; c += 4 {
		d0, d1, d2, d3 := d[c], d[c+1], d[c+2], d[c+3]
		for j, p := range pos {
			x := val[j]
			r := grad[int(p)*W+c : int(p)*W+c+4 : int(p)*W+c+4]
			r[0] += d0 * x
			r[1] += d1 * x
			r[2] += d2 * x
			r[3] += d3 * x
		}
	}
	scatterTail(grad, d, pos, val, c)
}

// scatterTail adds the classes from c on one at a time.
func scatterTail(grad, d []float32, pos []int32, val []float32, c int) {
	W := len(d)
	for ; c < W; c++ {
		dc := d[c]
		for j, p := range pos {
			grad[int(p)*W+c] += dc * val[j]
		}
	}
}
