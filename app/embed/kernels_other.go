//go:build !amd64 || purego

package embed

// simd is false: no assembly kernels on this platform.
const simd = false

func scoresSIMD(vals []float32, d int, idx []int32, u, v, s []float32) {
	scoresGo(vals, d, idx, u, v, s)
}

func updatesSIMD(vals, grad []float32, d int, idx []int32, c, u, v, gu, gv []float32) {
	updatesGo(vals, grad, d, idx, c, u, v, gu, gv)
}

func logisticsSIMD(s, c []float32, k float32) (lin, prod float64) { return logisticsGo(s, c, k) }
