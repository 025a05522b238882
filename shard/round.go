package shard

import (
	"fmt"
	"math"
	"slices"
)

// roundEps absorbs rounding error in targets that are whole numbers.
const roundEps = 1e-9

// apportion splits total into integers proportional to weights by largest
// remainder (ties to the lower index): each share is the floor or the
// ceiling of total·w_j/Σw, and the shares sum to total.
func apportion(total int, weights []float64) []int {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	out := make([]int, len(weights))
	frac := make([]float64, len(weights))
	given := 0
	for j, w := range weights {
		t := float64(total) * w / sum
		f := math.Floor(t + roundEps)
		out[j] = int(f)
		frac[j] = t - f
		given += out[j]
	}
	order := make([]int, len(weights))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case frac[a] > frac[b]:
			return -1
		case frac[a] < frac[b]:
			return 1
		}
		return 0
	})
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// roundMatrix rounds the real matrix t to integers c with c[i][j] the floor
// or the ceiling of t[i][j], row sums rows[i] and column sums cols[j]. The
// rows of t must sum to rows and its columns to within one of cols. The
// extra units above the floors form a bipartite b-matching between rows
// and columns over the fractional cells, found greedily (largest fraction
// first) and completed by augmenting paths.
func roundMatrix(t [][]float64, rows, cols []int) ([][]int, error) {
	nr, nc := len(rows), len(cols)
	c := make([][]int, nr)
	frac := make([][]float64, nr)
	need := make([]int, nr) // extra units row i still has to place
	left := slices.Clone(cols)
	for i := range nr {
		c[i] = make([]int, nc)
		frac[i] = make([]float64, nc)
		need[i] = rows[i]
		for j := range nc {
			f := math.Floor(t[i][j] + roundEps)
			c[i][j] = int(f)
			frac[i][j] = t[i][j] - f
			need[i] -= c[i][j]
			left[j] -= c[i][j]
		}
	}
	for i, k := range need {
		if k < 0 || k > nc {
			return nil, fmt.Errorf("rounding: row %d needs %d extra units", i, k)
		}
	}
	for j, k := range left {
		if k < 0 {
			return nil, fmt.Errorf("rounding: column %d is over its target by %d", j, -k)
		}
	}
	up := make([][]bool, nr) // c[i][j] was rounded up
	order := make([]int, nc)
	for i := range nr {
		up[i] = make([]bool, nc)
		for j := range order {
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case frac[i][a] > frac[i][b]:
				return -1
			case frac[i][a] < frac[i][b]:
				return 1
			}
			return 0
		})
		for _, j := range order {
			if need[i] == 0 || frac[i][j] <= roundEps {
				break
			}
			if left[j] > 0 {
				up[i][j] = true
				need[i]--
				left[j]--
			}
		}
	}
	// Augmenting paths: row i → column j over a cell not yet rounded up,
	// column j → row i' over a cell rounded up, ending at a column with
	// room left.
	for i := range nr {
		for need[i] > 0 {
			if !augment(i, frac, up, left) {
				return nil, fmt.Errorf("rounding: no feasible rounding for row %d", i)
			}
			need[i]--
		}
	}
	for i := range nr {
		for j := range nc {
			if up[i][j] {
				c[i][j]++
			}
		}
	}
	return c, nil
}

// augment finds by breadth-first search a path that gives row start one
// more rounded-up cell and applies it.
func augment(start int, frac [][]float64, up [][]bool, left []int) bool {
	nr, nc := len(frac), len(left)
	prevRow := make([]int, nc) // column j was reached from this row
	for j := range prevRow {
		prevRow[j] = -1
	}
	prevCol := make([]int, nr) // row i was reached from this column
	for i := range prevCol {
		prevCol[i] = -1
	}
	seenRow := make([]bool, nr)
	seenRow[start] = true
	queue := []int{start}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for j := range nc {
			if prevRow[j] >= 0 || up[i][j] || frac[i][j] <= roundEps {
				continue
			}
			prevRow[j] = i
			if left[j] > 0 {
				left[j]--
				// Walk back: flip the cells along the path.
				for col := j; ; {
					row := prevRow[col]
					up[row][col] = true
					if row == start {
						return true
					}
					back := prevCol[row]
					up[row][back] = false
					col = back
				}
			}
			for i2 := range nr {
				if !seenRow[i2] && up[i2][j] {
					seenRow[i2] = true
					prevCol[i2] = j
					queue = append(queue, i2)
				}
			}
		}
	}
	return false
}
