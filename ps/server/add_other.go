//go:build !amd64 || purego

package server

// addBlock is the granularity of addBlocks.
const addBlock = 1

// addBlocks is sumInto without a vector kernel.
func addBlocks(w, g []float32) { addGo(w, g) }

// prefetch2 does nothing without an instruction for it.
func prefetch2(a, b *float32) {}
