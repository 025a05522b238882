package balancing

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"colo/internal/plot"
)

// palette colours the schemes in order.
var palette = []string{"#7f7f7f", "#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// frame is a chart's plotting area and axes.
type frame struct {
	b                     strings.Builder
	width, height         float64
	ml, mr, mt, mb        float64
	xlo, xhi, ylo, yhi    float64
	logX                  bool
	title, xlabel, ylabel string
}

func (f *frame) pw() float64 { return f.width - f.ml - f.mr }
func (f *frame) ph() float64 { return f.height - f.mt - f.mb }

func (f *frame) x(v float64) float64 {
	if f.logX {
		return f.ml + f.pw()*(math.Log10(v)-math.Log10(f.xlo))/(math.Log10(f.xhi)-math.Log10(f.xlo))
	}
	return f.ml + f.pw()*(v-f.xlo)/(f.xhi-f.xlo)
}

func (f *frame) y(v float64) float64 { return f.mt + f.ph()*(f.yhi-v)/(f.yhi-f.ylo) }

// open draws the background, the title, the y grid and the axis labels.
func (f *frame) open() {
	plot.Open(&f.b, f.width, f.height, 12)
	fmt.Fprintf(&f.b, `<text x="%.1f" y="18" text-anchor="middle" font-weight="bold">%s</text>`+"\n", f.width/2, html.EscapeString(f.title))
	fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", f.ml, f.mt, f.pw(), f.ph())
	step := plot.NiceStep((f.yhi - f.ylo) / 5)
	for v := math.Ceil(f.ylo/step) * step; v <= f.yhi+1e-12; v += step {
		fmt.Fprintf(&f.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", f.ml, f.ml+f.pw(), f.y(v), f.y(v))
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", f.ml-6, f.y(v)+4, plot.Label(v))
	}
	fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", f.ml+f.pw()/2, f.height-10, html.EscapeString(f.xlabel))
	fmt.Fprintf(&f.b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`+"\n", f.mt+f.ph()/2, f.mt+f.ph()/2, html.EscapeString(f.ylabel))
}

// legend draws the names in their colours at the top right.
func (f *frame) legend(names []string) {
	for i, n := range names {
		ly := f.mt + 14 + 16*float64(i)
		c := palette[i%len(palette)]
		fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="12" height="10" fill="%s"/>`+"\n", f.ml+f.pw()+10, ly-9, c)
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", f.ml+f.pw()+26, ly, html.EscapeString(n))
	}
}

func (f *frame) close(w io.Writer) error {
	f.b.WriteString("</svg>\n")
	_, err := io.WriteString(w, f.b.String())
	return err
}

// schemesOf returns the schemes of the table, in order.
func schemesOf(res *Result) (sizes, schemes []string) {
	for _, r := range res.Table {
		if len(sizes) == 0 || sizes[len(sizes)-1] != r.Size {
			sizes = append(sizes, r.Size)
		}
		if !contains(schemes, r.Scheme) {
			schemes = append(schemes, r.Scheme)
		}
	}
	return sizes, schemes
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// speedSVG draws Fig. 4: images per minute per scheme, grouped by size.
func speedSVG(w io.Writer, res *Result) error {
	sizes, schemes := schemesOf(res)
	f := &frame{width: 640, height: 380, ml: 70, mr: 100, mt: 40, mb: 50, title: "training speed per scheme (Eq. 16)",
		xlabel: "model (a hundredth of the seed's)", ylabel: "images per minute"}
	for _, r := range res.Table {
		if finite(r.ImagesPerMinute) {
			f.yhi = max(f.yhi, r.ImagesPerMinute)
		}
	}
	if f.yhi <= 0 {
		f.yhi = 1
	}
	f.yhi *= 1.15
	f.xlo, f.xhi = 0, float64(len(sizes))
	f.open()
	group := f.pw() / float64(max(1, len(sizes)))
	bar := group * 0.8 / float64(max(1, len(schemes)))
	for gi, size := range sizes {
		x0 := f.ml + group*float64(gi) + group*0.1
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x0+group*0.4, f.mt+f.ph()+16, html.EscapeString(size))
		for _, r := range res.Table {
			if r.Size != size {
				continue
			}
			si := indexOf(schemes, r.Scheme)
			x := x0 + bar*float64(si)
			fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, f.y(r.ImagesPerMinute), bar*0.9, f.y(0)-f.y(r.ImagesPerMinute), palette[si%len(palette)])
		}
	}
	f.legend(schemes)
	return f.close(w)
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return 0
}

// sritSVG draws Fig. 5: the round time of each decision window of the
// first run of every scheme on the last size.
func sritSVG(w io.Writer, res *Result) error {
	sizes, schemes := schemesOf(res)
	f := &frame{width: 640, height: 380, ml: 70, mr: 100, mt: 40, mb: 50, title: "single-round iteration time (SRIT)",
		xlabel: "round", ylabel: "seconds"}
	var runs []RunResult
	if len(sizes) > 0 {
		last := sizes[len(sizes)-1]
		f.title += ", " + last
		for _, s := range schemes {
			for _, r := range res.Runs {
				if r.Size == last && r.Scheme == s && r.Run == 1 {
					runs = append(runs, r)
					break
				}
			}
		}
	}
	for _, r := range runs {
		f.xhi = max(f.xhi, float64(len(r.SRIT)))
		for _, t := range r.SRIT {
			if finite(t) {
				f.yhi = max(f.yhi, t)
			}
		}
	}
	f.xlo, f.xhi, f.yhi = 1, max(f.xhi, 2), max(f.yhi*1.1, 1e-3)
	f.open()
	step := plot.NiceStep((f.xhi - f.xlo) / 8)
	for v := math.Ceil(f.xlo/step) * step; v <= f.xhi+1e-9; v += step {
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", f.x(v), f.mt+f.ph()+16, plot.Label(v))
	}
	for _, r := range runs {
		var pts []string
		for i, t := range r.SRIT {
			if finite(t) && t > 0 { // the first round is not timed
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.x(float64(i+1)), f.y(t)))
			}
		}
		c := palette[indexOf(schemes, r.Scheme)%len(palette)]
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
	}
	f.legend(schemes)
	return f.close(w)
}

// granularitySVG draws Fig. 6: Aware's ASRIT against the slice
// granularity on a log scale, with Eq. 4's value marked.
func granularitySVG(w io.Writer, res *Result) error {
	f := &frame{width: 640, height: 380, ml: 70, mr: 100, mt: 40, mb: 50, title: "aware: round time against slice granularity",
		xlabel: "slice (keys, log scale)", ylabel: "ASRIT (s)", logX: true}
	f.xlo, f.xhi = math.Inf(1), 0
	for _, r := range res.Granularity {
		f.xlo, f.xhi = min(f.xlo, float64(r.Slice)), max(f.xhi, float64(r.Slice))
		f.yhi = max(f.yhi, r.ASRIT)
	}
	if res.Eq4 > 0 {
		f.xlo, f.xhi = min(f.xlo, res.Eq4), max(f.xhi, res.Eq4)
	}
	if !(f.xlo > 0) || f.xhi <= f.xlo {
		f.xlo, f.xhi = 1, 10
	}
	f.xlo, f.xhi, f.yhi = f.xlo/1.5, f.xhi*1.5, max(f.yhi*1.15, 1e-3)
	f.open()
	for e := math.Ceil(math.Log10(f.xlo)); e <= math.Log10(f.xhi); e++ {
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" text-anchor="middle">1e%.0f</text>`+"\n", f.x(math.Pow(10, e)), f.mt+f.ph()+16, e)
	}
	var pts []string
	for _, r := range res.Granularity {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.x(float64(r.Slice)), f.y(r.ASRIT)))
		fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", f.x(float64(r.Slice)), f.y(r.ASRIT), palette[2])
	}
	fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", palette[2], strings.Join(pts, " "))
	if res.Eq4 > 0 {
		x := f.x(res.Eq4)
		fmt.Fprintf(&f.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="4 3"/>`+"\n", x, x, f.mt, f.mt+f.ph())
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f">Eq. 4: %.0f</text>`+"\n", x+4, f.mt+14, res.Eq4)
	}
	return f.close(w)
}
