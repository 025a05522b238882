package gossip

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Weights is an N×N mixing matrix W: after an exchange worker i holds
// Σ_j W[i][j]·x_j (Alg. 2, line 5). W[i][j] ≠ 0 for i ≠ j means that i
// receives j's model.
type Weights [][]float64

// Tolerance bounds how far a row or column sum of a doubly stochastic
// matrix may be from 1.
const Tolerance = 1e-6

// MetropolisHastings returns the Metropolis–Hastings weights of t:
// W_ij = 1/(1+max(d_i, d_j)) for neighbours, W_ii = 1 − Σ_{j≠i} W_ij and
// 0 elsewhere. W is symmetric and doubly stochastic with non-negative
// entries, and W_ii ≥ 1/(1+d_i) > 0; on a connected graph its second
// largest eigenvalue modulus is below 1, so repeated averaging converges
// to the mean. Cost O(N + edges).
func MetropolisHastings(t *Topology) Weights {
	w := make(Weights, t.N)
	for i := range w {
		w[i] = make([]float64, t.N)
	}
	for i, a := range t.Adj {
		s := 0.0
		for _, j := range a {
			v := 1 / float64(1+max(t.Degree(i), t.Degree(j)))
			w[i][j] = v
			s += v
		}
		w[i][i] = 1 - s
	}
	return w
}

// Check verifies that w is square, finite, non-negative and doubly
// stochastic (every row and column sums to 1 within Tolerance) and that
// its graph (i ~ j when W_ij or W_ji is non-zero) is connected. Errors
// name the row (1-based, the line of a weight file's matrix) or column.
func (w Weights) Check() error {
	n := len(w)
	if n == 0 {
		return fmt.Errorf("weight matrix is empty: want N rows of N values")
	}
	col := make([]float64, n)
	for i, row := range w {
		if len(row) != n {
			return fmt.Errorf("row %d has %d values: want %d (the matrix is N×N)", i+1, len(row), n)
		}
		s := 0.0
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("row %d, column %d: %v: want a finite weight ≥ 0", i+1, j+1, v)
			}
			s += v
			col[j] += v
		}
		if math.Abs(s-1) > Tolerance {
			return fmt.Errorf("row %d sums to %.9g: want 1 (doubly stochastic)", i+1, s)
		}
	}
	for j, s := range col {
		if math.Abs(s-1) > Tolerance {
			return fmt.Errorf("column %d sums to %.9g: want 1 (doubly stochastic)", j+1, s)
		}
	}
	if !w.Topology("").Connected() {
		return fmt.Errorf("the graph of the non-zero weights is not connected: the models of its components never mix")
	}
	return nil
}

// Topology returns the graph of w's non-zero off-diagonal entries (i ~ j
// when W_ij or W_ji is non-zero), named name.
func (w Weights) Topology(name string) *Topology {
	n := len(w)
	t := &Topology{Name: name, N: n, Adj: make([][]int, n)}
	for i := range n {
		for j := range n {
			if i != j && (w[i][j] != 0 || w[j][i] != 0) {
				t.Adj[i] = append(t.Adj[i], j)
			}
		}
	}
	return t
}

// maxWeightFile bounds the size of a weight file (a 1000×1000 matrix of
// long decimals fits).
const maxWeightFile = 32 << 20

// ReadWeights reads a weight matrix from r, named name in errors: one row
// per line, N numbers separated by spaces, tabs or commas; blank lines and
// lines starting with # are skipped. The matrix must pass Check. Errors
// name the file and line: "w.txt:3: row 2 has 3 values: want 4".
func ReadWeights(r io.Reader, name string) (Weights, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxWeightFile))
	sc.Buffer(make([]byte, 0, 64<<10), maxWeightFile)
	var w Weights
	var lines []int
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.FieldsFunc(text, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' })
		row := make([]float64, len(fields))
		for j, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: value %d %q: want a number", name, line, j+1, f)
			}
			row[j] = v
		}
		if len(w) > 0 && len(row) != len(w[0]) {
			return nil, fmt.Errorf("%s:%d: row %d has %d values, row 1 has %d: want N values on each of N lines", name, line, len(w)+1, len(row), len(w[0]))
		}
		if len(row) > 0 && len(w) >= len(row) {
			return nil, fmt.Errorf("%s:%d: row %d of a matrix with %d columns: want N values on each of N lines", name, line, len(w)+1, len(row))
		}
		w = append(w, row)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(w) == 0 {
		return nil, fmt.Errorf("%s: no rows: want N lines of N weights", name)
	}
	if len(w) != len(w[0]) {
		return nil, fmt.Errorf("%s: %d rows of %d values: want a square matrix", name, len(w), len(w[0]))
	}
	if err := w.Check(); err != nil {
		// Point at the line of the row the error names.
		var row int
		if _, scanErr := fmt.Sscanf(err.Error(), "row %d", &row); scanErr == nil && row >= 1 && row <= len(lines) {
			return nil, fmt.Errorf("%s:%d: %w", name, lines[row-1], err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return w, nil
}

// ReadWeightsFile reads the weight matrix of a file (ReadWeights).
func ReadWeightsFile(path string) (Weights, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	return ReadWeights(f, path)
}
