package plot_test

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"colo/internal/plot"
	"colo/internal/plot/plottest"
)

// figure is a chart of every kind of mark.
func figure() *plot.Figure {
	return &plot.Figure{Title: "news20: logreg on 4 machines, BSP", Panels: []plot.Panel{
		{Title: "losses", X: plot.Axis{Label: "seconds"}, Y: plot.Axis{Label: "loss", Log: true}, Series: []plot.Series{
			{Name: "random", X: []float64{0, 0.1, 0.2, 0.3}, Y: []float64{0.9, 0.5, 0.3, 0.15000000000000002}},
			{Name: "parsa validation", X: []float64{0.1, 0.3}, Y: []float64{0.6, 0.2}, Color: 1, Dashed: true, Points: true},
			{Name: "diverged", X: []float64{0, 1}, Y: []float64{-1, 0}}, // nothing to draw on a log axis
		}, Rules: []plot.Rule{{At: 0.25, Label: "target 0.25"}}},
		{Title: "speed", X: plot.Axis{Categories: []string{"small", "large"}}, Y: plot.Axis{Label: "images per minute"},
			Bars: []plot.Bars{{Name: "average", Values: []float64{3, 2}}, {Name: "aware", Values: []float64{4, 3}, Color: 2}}},
		{Title: "slices", X: plot.Axis{Label: "keys", Log: true}, Y: plot.Axis{Label: "accuracy", Unit: "%"},
			Boxes:  []plot.Box{{At: 300, Q: [5]float64{80, 81, 82, 83, 85}, Points: []float64{80, 85}}},
			Series: []plot.Series{{Name: "aware", X: []float64{100, 1000}, Y: []float64{81, 84}, NoLine: true}},
			Rules:  []plot.Rule{{Vertical: true, At: 500, Label: "Eq. 4: 500"}}},
	}}
}

func TestFigure(t *testing.T) {
	texts := plottest.Check(t, figure(), "losses", "random", "parsa validation", "average", "aware",
		"target 0.25", "Eq. 4: 500", "small", "large", "seconds", "images per minute", "85%", "0.5")
	for _, s := range texts {
		if strings.Contains(s, "diverged") {
			t.Errorf("a series with nothing to draw is in the legend: %q", texts)
		}
	}
	f := figure()
	f.Width, f.Height = 900, 300
	plottest.Check(t, f)
}

// TestCheckFails checks that plottest.Check sees a missing text and a
// long label.
func TestCheckFails(t *testing.T) {
	f := &plot.Figure{Title: "t", Panels: []plot.Panel{{Y: plot.Axis{Ticks: []float64{0.1}},
		Series: []plot.Series{{Name: "0.15000000000000002", X: []float64{0, 1}, Y: []float64{0, 1}}}}}}
	var rec recorder
	plottest.Check(&rec, f, "absent")
	if rec.errors != 2 {
		t.Errorf("%d errors, want 2 (a missing text, a long label)", rec.errors)
	}
}

type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(string, ...any)     { r.errors++ }
func (r *recorder) Fatalf(f string, a ...any) { panic("fatal") }
func (r *recorder) Fatal(a ...any)            { panic("fatal") }

// TestNothingToDraw: a figure whose series have no point to draw, with a
// rule or a bar at 0 on a logarithmic axis, is still drawn.
func TestNothingToDraw(t *testing.T) {
	plottest.Check(t, &plot.Figure{Title: "empty", Panels: []plot.Panel{
		{Y: plot.Axis{Log: true}, Series: []plot.Series{{Name: "none", X: []float64{1}, Y: []float64{math.NaN()}}}},
		{X: plot.Axis{Log: true}, Y: plot.Axis{Log: true}, Rules: []plot.Rule{{At: 0, Label: "zero"}, {Vertical: true, At: -1}}},
		{X: plot.Axis{Categories: []string{"a"}}, Bars: []plot.Bars{{Name: "inf", Values: []float64{math.Inf(1)}}}},
		{X: plot.Axis{Categories: []string{"a", "b"}}, Y: plot.Axis{Log: true}, Bars: []plot.Bars{{Name: "log", Values: []float64{0, 5}}}},
	}})
}

func TestSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "loss.svg")
	if err := figure().Save(path); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plottest.Texts(svg); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "loss.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatal(err)
	}
	if err := (&plot.Figure{Title: "empty"}).Save(filepath.Join(dir, "empty.svg")); err == nil {
		t.Error("a figure without panels saved")
	}
	if _, err := os.Stat(filepath.Join(dir, "empty.svg")); err == nil {
		t.Error("a figure that failed left a file")
	}
}

func TestPNGPath(t *testing.T) {
	for in, want := range map[string]string{"a/loss.svg": "a/loss.png", "loss": "loss.png", "x.y/speed.svg": "x.y/speed.png"} {
		if got := plot.PNGPath(in); got != want {
			t.Errorf("plot.PNGPath(%q) = %q, want %q", in, got, want)
		}
	}
}
