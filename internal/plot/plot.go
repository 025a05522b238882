// Package plot holds what colo's SVG charts share: the document's opening
// and the rounding of grid steps.
package plot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Open starts an SVG document of the given size and font size on a white
// background.
func Open(b *strings.Builder, width, height, fontSize float64) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="%.0f">`+"\n", width, height, fontSize)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
}

// NiceStep rounds a grid step x up to 1, 2 or 5 times a power of ten; 1
// when x is not positive.
func NiceStep(x float64) float64 {
	if !(x > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// Label writes a tick value for an axis: rounded to nine decimals, so a
// step of 0.05 labels 0.15, not 0.15000000000000002.
func Label(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e9)/1e9, 'f', -1, 64)
}
