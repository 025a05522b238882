package graph

import (
	"fmt"

	"colo/internal/textio"
)

// Words describes the graph's size for people: "1,234 samples, 56
// parameters, 7,890 edges".
func (g *Graph) Words() string {
	return fmt.Sprintf("%s samples, %s parameters, %s edges",
		textio.Commas(int64(g.NumSamples())), textio.Commas(int64(g.NumParams())), textio.Commas(g.NumEdges()))
}
