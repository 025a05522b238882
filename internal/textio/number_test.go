package textio

import (
	"math"
	"testing"
)

func TestParseIndex(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want int
		ok   bool
	}{
		{"0", 5, 0, true}, {"5", 5, 5, true}, {"6", 5, 0, false},
		{"+3", 5, 0, false}, {"03", 5, 0, false}, {"00", 5, 0, false}, {"-1", 5, 0, false},
		{" 3", 5, 0, false}, {"3 ", 5, 0, false}, {"3.0", 5, 0, false}, {"", 5, 0, false}, {"0x3", 5, 0, false},
		{"9223372036854775807", math.MaxInt, math.MaxInt, true},
		{"9223372036854775808", math.MaxInt, 0, false},
		{"99999999999", math.MaxInt32, 0, false},
	} {
		got, ok := ParseIndex([]byte(c.in), c.max)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseIndex(%q, %d) = %d, %v; want %d, %v", c.in, c.max, got, ok, c.want, c.ok)
		}
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", -1000: "-1,000", 1234567: "1,234,567", -12345: "-12,345"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}
