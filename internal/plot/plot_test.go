package plot

import (
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{0, 1}, {-3, 1}, {0.3, 0.5}, {1, 1}, {1.5, 2}, {3, 5}, {7, 10}, {13, 20}, {40, 50}, {42, 50}, {1000, 1000},
	} {
		if got := NiceStep(c.x); got != c.want {
			t.Errorf("NiceStep(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

func TestOpen(t *testing.T) {
	var b strings.Builder
	Open(&b, 640, 400, 12)
	want := `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="400" font-family="sans-serif" font-size="12">` + "\n" +
		`<rect width="100%" height="100%" fill="white"/>` + "\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0.1 + 0.05, "0.15"}, {3 * 0.1, "0.3"}, {85, "85"}, {-2.5, "-2.5"}, {0, "0"}} {
		if got := Label(c.v); got != c.want {
			t.Errorf("Label(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
