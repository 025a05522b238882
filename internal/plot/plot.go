// Package plot is where colo's charts are made: a Figure of one or more
// panels side by side under one title, each panel with lines (solid or
// dashed, with or without points), grouped bars, box plots and labelled
// reference lines, on linear, logarithmic or categorical axes, and one
// legend at the right. It is drawn with gonum.org/v1/plot and written as
// SVG or PNG; Save writes both, side by side.
//
// Tick labels are rounded (Label), so a step of 0.05 labels 0.15, never
// 0.15000000000000002; a logarithmic axis labels the powers of ten it
// spans, or 1, 2 and 5 times them when that makes too few labels.
//
// Example, a loss curve:
//
//	f := plot.Figure{Title: "news20: logreg on 4 machines", Panels: []plot.Panel{{
//		X: plot.Axis{Label: "seconds"}, Y: plot.Axis{Label: "training loss", Log: true},
//		Series: []plot.Series{{Name: "random", X: secs, Y: loss}},
//	}}}
//	err := f.Save("loss.svg") // loss.svg and loss.png
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"colo/internal/atomicfile"
)

// Figure is a chart: panels side by side under a title, with one legend.
type Figure struct {
	Title  string
	Panels []Panel
	// Width and Height are the size in pixels (of the PNG; the SVG has
	// the same size in CSS pixels); 0 means 640 by 400.
	Width, Height int
}

// Panel is one plotting area.
type Panel struct {
	Title  string
	X, Y   Axis
	Series []Series
	Bars   []Bars
	Boxes  []Box
	Rules  []Rule
}

// Axis is a panel's axis.
type Axis struct {
	Label string
	// Log makes the scale logarithmic; values that are not positive are
	// left out.
	Log bool
	// Ticks, when set, are the only labelled ticks.
	Ticks []float64
	// Categories makes the axis nominal: value i is Categories[i].
	Categories []string
	// Unit is appended to the tick labels ("%").
	Unit string
	// Min and Max fix the range when Max > Min; otherwise it spans the
	// data, and 0 with Zero.
	Min, Max float64
	Zero     bool
}

// Series is one named line. Points that are not finite (or not positive
// on a logarithmic axis) are left out.
type Series struct {
	Name string
	X, Y []float64
	// Color indexes the palette; series of one colour belong together
	// (a run's training and validation losses).
	Color  int
	Dashed bool
	// Points marks every point; NoLine draws only the points.
	Points, NoLine bool
}

// Bars is one group member of a grouped bar chart over the categories
// of the X axis: Values[i] is the bar in category i.
type Bars struct {
	Name   string
	Values []float64
	Color  int
}

// Box is a box plot at X position At: whiskers from Q[0] to Q[4], the box
// from Q[1] to Q[3], a line at the median Q[2], and Points as dots beside
// it.
type Box struct {
	At     float64
	Q      [5]float64
	Points []float64
}

// Rule is a dashed reference line across a panel, vertical at X = At or
// horizontal at Y = At, with a label.
type Rule struct {
	Vertical bool
	At       float64
	Label    string
}

// palette are the colours of Series.Color and Bars.Color, in order.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x94, 0x67, 0xbd, 0xff},
	{0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
}

// colour returns colour i of the palette (cycling).
func colour(i int) color.RGBA { return palette[((i%len(palette))+len(palette))%len(palette)] }

// dpi is the resolution of the PNG: a pixel is a CSS pixel.
const dpi = 96

func px(n int) vg.Length { return vg.Length(n) * vg.Inch / dpi }

var dash = []vg.Length{vg.Points(5), vg.Points(3)}

// sans sets the font of a text style to Liberation Sans.
func sans(s *text.Style) { s.Font.Variant = "Sans" }

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
// step of 0.05 labels 0.15, not 0.15000000000000002, and 0 has no sign.
func Label(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e9)/1e9+0, 'f', -1, 64)
}

// linearTicks labels the multiples of a step between min and max: the
// NiceStep of a sixth of the range, so three to seven labels.
func linearTicks(unit string) gplot.Ticker {
	return gplot.TickerFunc(func(min, max float64) []gplot.Tick {
		step := NiceStep((max - min) / 6)
		var ts []gplot.Tick
		for i := math.Ceil(min/step - 1e-9); i*step <= max+step*1e-9; i++ {
			v := i * step
			ts = append(ts, gplot.Tick{Value: v, Label: Label(v) + unit})
			if h := v + step/2; h <= max {
				ts = append(ts, gplot.Tick{Value: h})
			}
		}
		return ts
	})
}

// logTicks ticks the multiples of the powers of ten between min and max
// and labels the powers alone when that makes three labels or more,
// otherwise 1, 2 and 5 times them, or 1, 2, 3, 5 and 7 times, or every
// multiple; a range with fewer than two multiples gets linear ticks.
func logTicks(unit string) gplot.Ticker {
	return gplot.TickerFunc(func(min, max float64) []gplot.Tick {
		lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
		var ts []gplot.Tick
		for e := lo; e <= hi; e++ {
			for m := 1; m < 10; m++ {
				if v := float64(m) * math.Pow(10, e); v >= min*(1-1e-9) && v <= max*(1+1e-9) {
					ts = append(ts, gplot.Tick{Value: v, Label: strconv.Itoa(m)})
				}
			}
		}
		if len(ts) < 2 {
			return linearTicks(unit).Ticks(min, max) // a range within one step
		}
		for _, set := range []string{"1", "125", "12357", "123456789"} {
			n := 0
			for _, t := range ts {
				if strings.Contains(set, t.Label) {
					n++
				}
			}
			if n < 3 && len(set) < 9 {
				continue
			}
			for i, t := range ts {
				ts[i].Label = ""
				if strings.Contains(set, t.Label) {
					ts[i].Label = Label(t.Value) + unit
				}
			}
			break
		}
		return ts
	})
}

// fixedTicks labels the given values.
func fixedTicks(vs []float64, unit string) gplot.Ticker {
	ts := make([]gplot.Tick, len(vs))
	for i, v := range vs {
		ts[i] = gplot.Tick{Value: v, Label: Label(v) + unit}
	}
	return gplot.ConstantTicks(ts)
}

// keep reports whether a point is drawn on the axes.
func keep(x, y float64, lx, ly bool) bool {
	ok := func(v float64, log bool) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0) }
	return ok(x, lx) && ok(y, ly)
}

// axis sets up a gonum axis from a and the range of the data.
func axis(ga *gplot.Axis, a Axis) {
	ga.Label.Text = a.Label
	sans(&ga.Label.TextStyle)
	sans(&ga.Tick.Label)
	if a.Zero && !a.Log {
		ga.Min, ga.Max = min(ga.Min, 0), max(ga.Max, 0)
	}
	if a.Log && ga.Min > 0 && ga.Max >= ga.Min {
		ga.Min, ga.Max = ga.Min/1.1, ga.Max*1.1 // the end points off the frame
	}
	if a.Max > a.Min {
		ga.Min, ga.Max = a.Min, a.Max
	}
	if math.IsInf(ga.Min, 0) || math.IsInf(ga.Max, 0) || math.IsNaN(ga.Min) || math.IsNaN(ga.Max) {
		ga.Min, ga.Max = 0, 1
	}
	if a.Log && !(ga.Min > 0) { // nothing positive to show, or a rule at 0
		ga.Min, ga.Max = max(ga.Max, 1)/10, max(ga.Max, 1)
	}
	if n := len(a.Categories); n > 0 {
		ga.Min, ga.Max = -0.5, float64(n)-0.5
		ts := make([]gplot.Tick, n)
		for i, c := range a.Categories {
			ts[i] = gplot.Tick{Value: float64(i), Label: c}
		}
		ga.Tick.Marker = gplot.ConstantTicks(ts)
		return
	}
	if ga.Max <= ga.Min {
		if a.Log {
			ga.Min, ga.Max = ga.Min/2, ga.Max*2
		} else {
			ga.Min, ga.Max = ga.Min-0.5, ga.Max+0.5
		}
	}
	switch {
	case len(a.Ticks) > 0:
		ga.Tick.Marker = fixedTicks(a.Ticks, a.Unit)
	case a.Log:
		ga.Tick.Marker = logTicks(a.Unit)
	default:
		ga.Tick.Marker = linearTicks(a.Unit)
	}
	if a.Log {
		ga.Scale = gplot.LogScale{}
	}
}

// build makes the gonum plot of a panel and adds its entries to legend
// (each name once).
func (p *Panel) build(legend *gplot.Legend, named map[string]bool) (*gplot.Plot, error) {
	g := gplot.New()
	g.Title.Text = p.Title
	sans(&g.Title.TextStyle)
	g.Add(plotter.NewGrid())
	entry := func(name string, t ...gplot.Thumbnailer) {
		if name != "" && !named[name] {
			named[name] = true
			legend.Add(name, t...)
		}
	}
	for _, s := range p.Series {
		var xys plotter.XYs
		for i := range min(len(s.X), len(s.Y)) {
			if keep(s.X[i], s.Y[i], p.X.Log, p.Y.Log) {
				xys = append(xys, plotter.XY{X: s.X[i], Y: s.Y[i]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		c := colour(s.Color)
		var thumbs []gplot.Thumbnailer
		if !s.NoLine {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("plot: series %q: %w", s.Name, err)
			}
			l.Color, l.Width = c, vg.Points(1.5)
			if s.Dashed {
				l.Dashes = dash
			}
			g.Add(l)
			thumbs = append(thumbs, l)
		}
		if s.Points || s.NoLine {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("plot: series %q: %w", s.Name, err)
			}
			sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(2.5)
			g.Add(sc)
			thumbs = append(thumbs, sc)
		}
		entry(s.Name, thumbs...)
	}
	for j, b := range p.Bars {
		bp := &bars{b: b, j: j, m: len(p.Bars)}
		g.Add(bp)
		entry(b.Name, bp)
	}
	for _, b := range p.Boxes {
		vs := plotter.Values{b.Q[0], b.Q[4]}
		bp, err := plotter.NewBoxPlot(vg.Points(28), b.At, vs)
		if err != nil {
			return nil, err
		}
		bp.Min, bp.AdjLow, bp.Quartile1, bp.Median, bp.Quartile3, bp.AdjHigh, bp.Max = b.Q[0], b.Q[0], b.Q[1], b.Q[2], b.Q[3], b.Q[4], b.Q[4]
		bp.Outside = nil
		bp.FillColor = color.RGBA{0x9e, 0xca, 0xe1, 0xff}
		bp.MedianStyle.Width = vg.Points(2)
		g.Add(bp)
		if len(b.Points) > 0 {
			xys := make(plotter.XYs, len(b.Points))
			for i, v := range b.Points {
				xys[i] = plotter.XY{X: b.At + 0.3, Y: v}
			}
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, err
			}
			sc.Color, sc.Shape, sc.Radius = colour(1), draw.CircleGlyph{}, vg.Points(2)
			g.Add(sc)
		}
	}
	for i, r := range p.Rules {
		g.Add(&rule{r, i})
	}
	axis(&g.X, p.X)
	axis(&g.Y, p.Y)
	return g, nil
}

// bars draws group member j of m of a grouped bar chart in data
// coordinates: category i spans [i−0.4, i+0.4].
type bars struct {
	b    Bars
	j, m int
}

func (b *bars) span(i int) (lo, hi float64) {
	w := 0.8 / float64(b.m)
	lo = float64(i) - 0.4 + w*float64(b.j)
	return lo, lo + 0.9*w
}

func (b *bars) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	base := max(p.Y.Min, 0) // the axis's bottom on a log scale
	for i, v := range b.b.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < p.Y.Min {
			continue
		}
		lo, hi := b.span(i)
		pts := c.ClipPolygonXY([]vg.Point{{X: trX(lo), Y: trY(base)}, {X: trX(hi), Y: trY(base)}, {X: trX(hi), Y: trY(v)}, {X: trX(lo), Y: trY(v)}})
		c.FillPolygon(colour(b.b.Color), pts)
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = -0.5, float64(len(b.b.Values))-0.5, 0, 0
	for _, v := range b.b.Values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ymin, ymax = min(ymin, v), max(ymax, v*1.05)
		}
	}
	return
}

func (b *bars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(colour(b.b.Color), []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// rule draws a Rule, the i-th of its panel: the labels of vertical rules
// go one below the other, so that rules close together stay readable.
type rule struct {
	r Rule
	i int
}

func (r *rule) Plot(c draw.Canvas, p *gplot.Plot) {
	ax := &p.Y
	if r.r.Vertical {
		ax = &p.X
	}
	if r.r.At < ax.Min || r.r.At > ax.Max { // off the axis (0 on a log scale)
		return
	}
	trX, trY := p.Transforms(&c)
	sty := draw.LineStyle{Color: color.Gray{0x44}, Width: vg.Points(1), Dashes: dash}
	ts := gplot.New().X.Tick.Label // the tick labels' style
	sans(&ts)
	ts.Color, ts.XAlign, ts.YAlign = color.Gray{0x44}, draw.XLeft, draw.YBottom
	if r.r.Vertical {
		x := trX(r.r.At)
		c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
		dx := vg.Points(3)
		if x > (c.Min.X+c.Max.X)/2 { // the label on the side with room
			ts.XAlign, dx = draw.XRight, -dx
		}
		c.FillText(ts, vg.Point{X: x + dx, Y: c.Max.Y - vg.Points(12+12*float64(r.i))}, r.r.Label)
		return
	}
	y := trY(r.r.At)
	c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
	ts.XAlign = draw.XRight
	c.FillText(ts, vg.Point{X: c.Max.X - vg.Points(3), Y: y + vg.Points(3)}, r.r.Label)
}

func (r *rule) DataRange() (xmin, xmax, ymin, ymax float64) {
	inf := math.Inf(1)
	if r.r.Vertical {
		return r.r.At, r.r.At, inf, -inf
	}
	return inf, -inf, r.r.At, r.r.At
}

// draw draws the figure on a canvas of its size.
func (f *Figure) draw(c vg.CanvasSizer) error {
	dc := draw.New(c)
	legend := gplot.NewLegend()
	sans(&legend.TextStyle)
	legend.Top, legend.Left, legend.Padding = true, true, vg.Points(3)
	named := map[string]bool{}
	var ps []*gplot.Plot
	for i := range f.Panels {
		g, err := f.Panels[i].build(&legend, named)
		if err != nil {
			return err
		}
		ps = append(ps, g)
	}
	if len(ps) == 0 {
		return fmt.Errorf("plot: %q has no panel", f.Title)
	}
	pad := vg.Points(6)
	if f.Title != "" {
		ts := gplot.New().Title.TextStyle
		sans(&ts)
		ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
		title := wrap(f.Title, func(s string) bool { return ts.Width(s) <= dc.Max.X-dc.Min.X-2*pad })
		dc.FillText(ts, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad}, title)
		dc = draw.Crop(dc, 0, 0, 0, -(ts.Height(title) + 2*pad))
	}
	if lw := legend.Rectangle(dc).Size().X; lw > 0 {
		right := dc
		right.Min.X = dc.Max.X - lw - pad
		legend.Draw(draw.Crop(right, 0, -pad, 0, -pad))
		dc = draw.Crop(dc, 0, -(lw + 2*pad), 0, 0)
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Points(12), PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	cs := gplot.Align([][]*gplot.Plot{ps}, tiles, dc)
	for i, g := range ps {
		g.Draw(cs[0][i])
	}
	return nil
}

// wrap breaks a title after commas into lines that fit.
func wrap(title string, fits func(string) bool) string {
	parts := strings.SplitAfter(title, ", ")
	var lines []string
	line := ""
	for _, p := range parts {
		if line != "" && !fits(strings.TrimSpace(line+p)) {
			lines = append(lines, strings.TrimSpace(line))
			line = ""
		}
		line += p
	}
	return strings.Join(append(lines, strings.TrimSpace(line)), "\n")
}

func (f *Figure) size() (w, h vg.Length) {
	wp, hp := f.Width, f.Height
	if wp <= 0 {
		wp = 640
	}
	if hp <= 0 {
		hp = 400
	}
	return px(wp), px(hp)
}

// SVG writes the figure as an SVG document.
func (f *Figure) SVG(w io.Writer) error {
	c := vgsvg.New(f.size())
	if err := f.draw(c); err != nil {
		return err
	}
	_, err := c.WriteTo(w)
	return err
}

// PNG writes the figure as a PNG image of Width by Height pixels.
func (f *Figure) PNG(w io.Writer) error {
	c := vgimg.NewWith(vgimg.UseWH(f.size()), vgimg.UseDPI(dpi))
	if err := f.draw(c); err != nil {
		return err
	}
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// PNGPath returns the path of the PNG beside an SVG file: its extension
// replaced by .png.
func PNGPath(svg string) string {
	return strings.TrimSuffix(svg, filepath.Ext(svg)) + ".png"
}

// Save writes the figure as SVG to path and as PNG beside it
// (PNGPath), each file replaced atomically. When path is a device, a FIFO
// or a descriptor (/dev/stdout) only the SVG is written, through it (see
// atomicfile.Replaces). Nothing is written when the figure cannot be
// drawn.
func (f *Figure) Save(path string) error {
	var svg, png bytes.Buffer
	if err := f.SVG(&svg); err != nil {
		return err
	}
	if err := f.PNG(&png); err != nil {
		return err
	}
	type out struct {
		path string
		b    []byte
	}
	outs := []out{{path, svg.Bytes()}}
	if atomicfile.Replaces(path) {
		outs = append(outs, out{PNGPath(path), png.Bytes()})
	}
	for _, o := range outs {
		if err := atomicfile.Write(o.path, func(w io.Writer) error { _, err := w.Write(o.b); return err }); err != nil {
			return err
		}
	}
	return nil
}
