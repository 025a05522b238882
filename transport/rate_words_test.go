package transport

import "testing"

func TestRateWords(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{12.5e6, "100 Mbit/s"}, {125e6, "1 Gbit/s"}, {1250, "10 kbit/s"}, {10, "80 bit/s"}, {31.25e6, "250 Mbit/s"}} {
		if got := RateWords(c.in); got != c.want {
			t.Errorf("RateWords(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
