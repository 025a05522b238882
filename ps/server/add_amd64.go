//go:build amd64 && !purego

package server

// addBlock is the number of values addSSE adds per iteration.
const addBlock = 16

// addBlocks is sumInto for len(g) a multiple of addBlock, len(w) ≥ len(g).
func addBlocks(w, g []float32) { addSSE(&w[0], &g[0], len(g)) }

//go:noescape
func addSSE(w, grad *float32, n int)
