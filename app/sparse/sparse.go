// Package sparse holds what the sparse applications (app/lr, app/mf)
// share: a training graph's samples as rows of keys (the parameters' dense
// ids, the keys of the servers) and transformed values, their class
// labels, and the batches a machine cuts its samples into, each with the
// sorted keys it pulls and pushes.
//
//	labels, _ := sparse.NewLabels(g, 1000)
//	rows, _ := sparse.TrainRows(g, labels, sparse.FeaturesLog1pL2)
//	batches := sparse.Batches(rows, mine, 10, seed, g.NumParams())
package sparse

import (
	"fmt"
	"math"
	"slices"

	"colo/graph"
	"colo/placement"
)

// Features names a transformation of the feature values x_uv of each
// sample, applied before training (and to the test set the same way).
type Features string

const (
	// FeaturesRaw keeps the values as in the file.
	FeaturesRaw Features = "raw"
	// FeaturesL2 scales each sample to unit Euclidean norm.
	FeaturesL2 Features = "l2"
	// FeaturesLog1pL2 replaces each value x by log(1+x) (sign kept), then
	// scales each sample to unit norm: the usual treatment of term counts.
	FeaturesLog1pL2 Features = "log1p-l2"
	// FeaturesAuto is FeaturesRaw for binary data (every value 1) and
	// FeaturesLog1pL2 otherwise (counts, weights).
	FeaturesAuto Features = "auto"
)

// Validate checks f.
func (f Features) Validate() error {
	switch f {
	case FeaturesRaw, FeaturesL2, FeaturesLog1pL2, FeaturesAuto:
		return nil
	}
	return fmt.Errorf("features %q: want auto, raw, l2 or log1p-l2", string(f))
}

// For returns the transformation f means for the training graph g.
func (f Features) For(g *graph.Graph) Features {
	if f != FeaturesAuto {
		return f
	}
	if g.HasValues() {
		return FeaturesLog1pL2
	}
	return FeaturesRaw
}

// Rows is a set of samples in CSR form with the parameters as dense ids
// of the training graph (the keys of the parameter server), transformed
// values and class indices.
type Rows struct {
	Off   []int64   // len n+1
	Col   []uint32  // key of each entry, increasing within a row
	Val   []float32 // value of each entry
	Class []int32   // class index of each row, in [0, classes)
}

// Len returns the number of rows.
func (r *Rows) Len() int { return len(r.Off) - 1 }

// Row returns the keys and values of row i.
func (r *Rows) Row(i int) ([]uint32, []float32) {
	a, b := r.Off[i], r.Off[i+1]
	return r.Col[a:b], r.Val[a:b]
}

// Labels maps the label values of a file to class indices: the sorted
// distinct labels of the training set. Two classes make a binary problem
// whose positive class is the larger label.
type Labels struct {
	Values []float64
}

// NewLabels collects the distinct labels of g. It fails on fewer than two
// classes or on more than maxClasses.
func NewLabels(g *graph.Graph, maxClasses int) (Labels, error) {
	ls := g.Labels()
	if ls == nil {
		return Labels{}, fmt.Errorf("%s has no labels", g.Meta().Source)
	}
	seen := map[float64]bool{}
	var vals []float64
	for _, l := range ls {
		if !seen[l] {
			if len(vals) == maxClasses {
				return Labels{}, fmt.Errorf("%s has more than %d distinct labels: not a classification problem", g.Meta().Source, maxClasses)
			}
			seen[l] = true
			vals = append(vals, l)
		}
	}
	if len(vals) < 2 {
		return Labels{}, fmt.Errorf("%s has a single label %v: nothing to classify", g.Meta().Source, vals)
	}
	slices.Sort(vals)
	return Labels{Values: vals}, nil
}

// Classes returns the number of classes.
func (l Labels) Classes() int { return len(l.Values) }

// Index returns the class index of label v, and whether it is known.
func (l Labels) Index(v float64) (int, bool) { return slices.BinarySearch(l.Values, v) }

// TrainRows returns the samples of g as rows, with keys equal to g's
// dense parameter ids.
func TrainRows(g *graph.Graph, labels Labels, f Features) (*Rows, error) {
	n := g.NumSamples()
	r := &Rows{
		Off:   slices.Clone(g.SampleOffsets()),
		Col:   g.SampleAdjacency(),
		Val:   make([]float32, g.NumEdges()),
		Class: make([]int32, n),
	}
	for u := range n {
		c, ok := labels.Index(g.Label(u))
		if !ok {
			return nil, fmt.Errorf("%s: sample %d: label %v is not a class", g.Meta().Source, u, g.Label(u))
		}
		r.Class[u] = int32(c)
		vals := r.Val[r.Off[u]:r.Off[u+1]]
		if src := g.Values(u); src != nil {
			copy(vals, src)
		} else {
			for i := range vals {
				vals[i] = 1
			}
		}
		transform(vals, f)
	}
	return r, nil
}

// TestRows returns the samples of a test graph as rows keyed by the
// training graph's dense parameter ids. Features the training set never
// saw are dropped (their weights are zero); a label the training set
// never saw is an error.
func TestRows(test, train *graph.Graph, labels Labels, f Features) (*Rows, error) {
	n := test.NumSamples()
	keyOf := make([]int64, test.NumParams())
	for v := range keyOf {
		k, ok := train.ParamIndex(test.ParamID(v))
		keyOf[v] = -1
		if ok {
			keyOf[v] = int64(k)
		}
	}
	r := &Rows{Off: make([]int64, 1, n+1), Class: make([]int32, n)}
	for u := range n {
		c, ok := labels.Index(test.Label(u))
		if !ok {
			return nil, fmt.Errorf("%s: sample %d: label %v does not occur in the training set %s", test.Meta().Source, u, test.Label(u), train.Meta().Source)
		}
		r.Class[u] = int32(c)
		src := test.Values(u)
		start := len(r.Val)
		for i, v := range test.Params(u) {
			x := float32(1)
			if src != nil {
				x = src[i]
			}
			if keyOf[v] >= 0 {
				r.Col = append(r.Col, uint32(keyOf[v]))
				r.Val = append(r.Val, x)
			}
		}
		// Keys stay increasing: the training ids keep the order of the
		// file's ids.
		transform(r.Val[start:], f)
		r.Off = append(r.Off, int64(len(r.Val)))
	}
	return r, nil
}

// transform applies f to one sample's values in place.
func transform(vals []float32, f Features) {
	if f == FeaturesLog1pL2 {
		for i, x := range vals {
			vals[i] = float32(math.Copysign(math.Log1p(math.Abs(float64(x))), float64(x)))
		}
	}
	if f == FeaturesL2 || f == FeaturesLog1pL2 {
		var s float64
		for _, x := range vals {
			s += float64(x) * float64(x)
		}
		switch inv := 1 / math.Sqrt(s); {
		case s == 0:
		case inv > math.MaxFloat32:
			// A sample of tiny (denormal) values: its inverse norm
			// overflows float32 (1e-45 gives 7e44), which made the row,
			// and the loss, infinite. Divide in float64.
			norm := math.Sqrt(s)
			for i, x := range vals {
				vals[i] = float32(float64(x) / norm)
			}
		default:
			inv := float32(inv)
			for i := range vals {
				vals[i] *= inv
			}
		}
	}
}

// Batch is one round's share of a worker's rows: the sorted keys they
// touch and the rows with their columns rewritten as positions in Keys,
// so that a pulled value array is indexed directly.
type Batch struct {
	Keys  []uint64
	Off   []int64
	Pos   []int32
	Val   []float32
	Class []int32
	// Rows are the sample ids (in the training graph) of the batch's rows.
	Rows []int32
}

// Len returns the number of rows of b.
func (b *Batch) Len() int { return len(b.Off) - 1 }

// Batches splits rows (sample ids of r) into nb batches of nearly equal
// size, in a random order drawn from seed, and indexes each. With nb = 1
// the single batch holds the rows in order (full-batch rounds).
func Batches(r *Rows, rows []int32, nb int, seed uint64, numKeys int) []*Batch {
	order := slices.Clone(rows)
	if nb > 1 {
		rng := placement.NewRand(seed)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	pos := make([]int32, numKeys)
	for i := range pos {
		pos[i] = -1
	}
	out := make([]*Batch, nb)
	for bi := range nb {
		lo, hi := bi*len(order)/nb, (bi+1)*len(order)/nb
		part := slices.Clone(order[lo:hi])
		slices.Sort(part)
		b := &Batch{Off: make([]int64, 1, len(part)+1), Rows: part, Class: make([]int32, len(part))}
		for i, u := range part {
			cols, _ := r.Row(int(u))
			for _, c := range cols {
				if pos[c] < 0 {
					pos[c] = 0
					b.Keys = append(b.Keys, uint64(c))
				}
			}
			b.Class[i] = r.Class[u]
		}
		slices.Sort(b.Keys)
		for i, k := range b.Keys {
			pos[k] = int32(i)
		}
		for _, u := range part {
			cols, vals := r.Row(int(u))
			for j, c := range cols {
				b.Pos = append(b.Pos, pos[c])
				b.Val = append(b.Val, vals[j])
			}
			b.Off = append(b.Off, int64(len(b.Pos)))
		}
		for _, k := range b.Keys {
			pos[k] = -1
		}
		out[bi] = b
	}
	return out
}
