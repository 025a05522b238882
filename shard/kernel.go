package shard

import (
	"math"
	"slices"

	"sync"

	"colo/dataset"
	"colo/shard/internal/vec"
)

// sigmaSample is the number of samples of a class whose pairwise
// distances give the median heuristic.
const sigmaSample = 256

// classSigma returns the median heuristic kernel width of a class: the
// median L2 distance between pairs of up to sigmaSample of its samples,
// taken at even strides so that no randomness is involved. When that
// median is 0 (mostly duplicates) it falls back to the mean distance, and
// to 1 when all samples coincide.
func classSigma(d *dataset.Dataset, members []int) float64 {
	m := min(len(members), sigmaSample)
	if m < 2 {
		return 1
	}
	pick := make([]int, m)
	for k := range pick {
		pick[k] = members[k*len(members)/m]
	}
	x := gather(d, pick)
	norms := sqNorms(x, m, d.Dim)
	sq := make([]float32, m*m)
	sqDistances(x, m, norms, x, m, norms, d.Dim, sq, m)
	dists := make([]float64, 0, m*(m-1)/2)
	sum := 0.0
	for a := range m {
		for b := a + 1; b < m; b++ {
			dist := math.Sqrt(float64(sq[a*m+b]))
			dists = append(dists, dist)
			sum += dist
		}
	}
	slices.Sort(dists)
	med := dists[len(dists)/2]
	if len(dists)%2 == 0 {
		med = (dists[len(dists)/2-1] + med) / 2
	}
	switch {
	case med > 0:
		return med
	case sum > 0:
		return sum / float64(len(dists))
	}
	return 1
}

// gather copies the given rows of d into a contiguous len(rows) × d.Dim
// matrix.
func gather(d *dataset.Dataset, rows []int) []float32 {
	x := make([]float32, 0, len(rows)*d.Dim)
	for _, i := range rows {
		x = append(x, d.Row(i)...)
	}
	return x
}

// sqNorms returns the squared L2 norm of each row of the m × dim matrix x.
func sqNorms(x []float32, m, dim int) []float32 {
	out := make([]float32, m)
	for i := range m {
		s := 0.0
		for _, v := range x[i*dim : (i+1)*dim] {
			s += float64(v) * float64(v)
		}
		out[i] = float32(s)
	}
	return out
}

// tile is the side of the blocks in which distance matrices are formed.
const tile = 512

// sqDistances writes the ma × mb squared distances between the rows of a
// and the rows of b (both with dim columns and the given squared norms)
// into out with row stride ldo, as ‖a‖² + ‖b‖² - 2·a·b, clamped at 0.
func sqDistances(a []float32, ma int, na []float32, b []float32, mb int, nb []float32, dim int, out []float32, ldo int) {
	vec.Dots(a, ma, b, mb, dim, out, ldo)
	for i := range ma {
		row := out[i*ldo : i*ldo+mb]
		for j := range row {
			row[j] = max(na[i]+nb[j]-2*row[j], 0)
		}
	}
}

// similarity returns the m × m Gaussian kernel matrix
// S[u][v] = exp(-‖x_u - x_v‖² / (2σ²)) of the rows of x, with S[u][u] = 1.
// It forms the upper triangle in tiles, split over threads goroutines by
// stripes of rows, and mirrors it, so S is exactly symmetric. Every entry
// is computed the same way whatever the number of threads.
func similarity(x []float32, m, dim int, sigma float64, threads int) []float32 {
	s := make([]float32, m*m)
	norms := sqNorms(x, m, dim)
	scale := -1 / (2 * sigma * sigma)
	stripes := (m + tile - 1) / tile
	next := make(chan int, stripes)
	for i := range stripes {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range max(1, min(threads, stripes)) {
		wg.Go(func() {
			buf := make([]float32, tile*tile)
			for stripe := range next {
				i0 := stripe * tile
				mi := min(tile, m-i0)
				for j0 := i0; j0 < m; j0 += tile {
					mj := min(tile, m-j0)
					sqDistances(x[i0*dim:(i0+mi)*dim], mi, norms[i0:i0+mi], x[j0*dim:(j0+mj)*dim], mj, norms[j0:j0+mj], dim, buf, mj)
					for i := range mi {
						u := i0 + i
						for j := max(0, u-j0); j < mj; j++ {
							v := j0 + j
							e := float32(math.Exp(float64(buf[i*mj+j]) * scale))
							if u == v {
								e = 1
							}
							s[u*m+v] = e
							s[v*m+u] = e
						}
					}
				}
			}
		})
	}
	wg.Wait()
	return s
}
