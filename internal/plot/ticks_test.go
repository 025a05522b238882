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

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0.1 + 0.05, "0.15"}, {3 * 0.1, "0.3"}, {85, "85"}, {-2.5, "-2.5"}, {0, "0"}, {-1e-12, "0"}} {
		if got := Label(c.v); got != c.want {
			t.Errorf("Label(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		unit   string
		want   []string
	}{
		{0, 0.35, "", []string{"0", "0.1", "0.2", "0.3"}},
		{0, 0.3, "", []string{"0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"}},
		{0.1, 0.32, "", []string{"0.1", "0.15", "0.2", "0.25", "0.3"}},
		{0, 1.2, "", []string{"0", "0.2", "0.4", "0.6", "0.8", "1", "1.2"}},
		{-12, 48, "%", []string{"-10%", "0%", "10%", "20%", "30%", "40%"}},
		{1, 40, "", []string{"10", "20", "30", "40"}},
	} {
		var got []string
		for _, tk := range linearTicks(c.unit).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
			if tk.Value < c.lo-1e-9 || tk.Value > c.hi+1e-9 {
				t.Errorf("[%v, %v]: tick %v outside", c.lo, c.hi, tk.Value)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("[%v, %v]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

func TestWrap(t *testing.T) {
	fits := func(s string) bool { return len(s) <= 12 }
	for in, want := range map[string]string{
		"a, b, c":                     "a, b, c",
		"news20: lr, 4 machines, bsp": "news20: lr,\n4 machines,\nbsp",
		"averyverylongword, b":        "averyverylongword,\nb",
		"":                            "",
	} {
		if got := wrap(in, fits); got != want {
			t.Errorf("wrap(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0.3, 0.75, []string{"0.3", "0.5", "0.7"}},
		{0.05, 0.9, []string{"0.05", "0.1", "0.2", "0.5"}},
		{100, 100000, []string{"100", "1000", "10000", "100000"}},
		{0.6, 2.6, []string{"0.7", "1", "2"}},
		{1.1, 1.9, []string{"1.2", "1.4", "1.6", "1.8"}},
	} {
		var got []string
		for _, tk := range logTicks("").Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("[%v, %v]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
