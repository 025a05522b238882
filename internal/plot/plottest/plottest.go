// Package plottest checks a plot.Figure as a reader would see it: its SVG
// parses as XML and holds the given texts, its tick labels are short, and
// its PNG decodes at the figure's size.
package plottest

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"regexp"
	"strings"
	"testing"

	"colo/internal/plot"
)

// Texts returns the text of every <text> element of an SVG document, or
// the error that stopped its parsing.
func Texts(svg []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(svg))
	var out []string
	in := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		switch e := tok.(type) {
		case xml.StartElement:
			in = e.Name.Local == "text"
		case xml.EndElement:
			in = false
		case xml.CharData:
			if in {
				out = append(out, string(e))
			}
		}
	}
}

// long matches a number with seven decimals or more: a tick label such
// as 0.15000000000000002.
var long = regexp.MustCompile(`\d\.\d{7,}`)

// Check draws f as SVG and PNG and fails t unless the SVG parses, holds
// the title and every text of want, and has no long number, and the PNG
// decodes at the figure's size. It returns the SVG's texts.
func Check(t testing.TB, f *plot.Figure, want ...string) []string {
	t.Helper()
	var svg, img bytes.Buffer
	if err := f.SVG(&svg); err != nil {
		t.Fatal(err)
	}
	texts, err := Texts(svg.Bytes())
	if err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	all := strings.Join(texts, "\n")
	// A long title is wrapped after commas, a text element per line.
	if !strings.Contains(strings.Join(texts, " "), f.Title) {
		t.Errorf("no title %q in the SVG's %q", f.Title, texts)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no text %q in the SVG's %q", w, texts)
		}
	}
	for _, s := range texts {
		if long.MatchString(s) {
			t.Errorf("unreadable label %q", s)
		}
	}
	if err := f.PNG(&img); err != nil {
		t.Fatal(err)
	}
	m, err := png.Decode(&img)
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	w, h := f.Width, f.Height
	if w <= 0 {
		w = 640
	}
	if h <= 0 {
		h = 400
	}
	if b := m.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("PNG of %dx%d pixels, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	return texts
}
