//go:build amd64 && !purego

package server

// addBlock is the number of values addSSE adds per iteration.
const addBlock = 16

// addBlocks is sumInto for len(g) a multiple of addBlock, len(w) ≥ len(g).
func addBlocks(w, g []float32) { addSSE(&w[0], &g[0], len(g)) }

//go:noescape
func addSSE(w, grad *float32, n int)

// prefetch2 asks the processor to bring the cache lines of a and b
// into its caches (PREFETCHT0), without waiting for them.
//
//go:noescape
func prefetch2(a, b *float32)
