package transport

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"100mbit": 12.5e6, "1gbit": 125e6, "1.5Gbit": 187.5e6, "10bit": 1.25, "8kbit": 1000,
		"800kbps": 800e3, "2MBps": 2e6, "1mibit": 131072, "1gibit": 1 << 27, "1tbit": 1.25e11,
		"0": 0, "0.0": 0, "inf": 0, "-": 0, "unlimited": 0,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// One rate in other units is one value: the number as written times
	// the unit, rounded once (1.001 × 125000 in float64 is 125124.99…).
	for _, same := range [][]string{
		{"1.001mbit", "1001kbit", "1001000bit", "0.001001gbit", "125.125kbps"},
		{"100mbit", "0.1gbit", "100000kbit", "12.5mbps", "0.0001tbit"},
		{"1.003mbit", "1003kbit"},
		{"2.2gbit", "2200mbit", "275mbps"},
		{"0.3mibit", "39321.6bps"},
		{"9007199254740993bps", "9007199254740993.0bps"}, // 2^53+1: exact, then rounded once
	} {
		want, err := ParseRate(same[0])
		if err != nil {
			t.Fatalf("ParseRate(%q): %v", same[0], err)
		}
		for _, in := range same[1:] {
			if got, err := ParseRate(in); err != nil || got != want {
				t.Errorf("ParseRate(%q) = %v, %v; want %v, ParseRate(%q)", in, got, err, want, same[0])
			}
		}
	}
	for _, in := range []string{"", "100", "mbit", "100mbits", "-5mbit", "1e3mbit", "1.2.3mbit", "4bit0", "1bit", ".mbit", "1e400", "0mbit", "0.0gbit", "00kbps"} {
		if got, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, got)
		}
	}
	// A zero with a unit is a rate that no job runs on, not no limit:
	// refused, saying how no limit is written.
	for in, want := range map[string]string{
		"0mbit":  `rate "0mbit" is zero, a link that carries nothing: for no limit write 0 or unlimited, without a unit`,
		"0.0bps": `rate "0.0bps" is zero`,
		"0.5bit": `rate "0.5bit" is below 1 byte per second`,
	} {
		if _, err := ParseRate(in); err == nil || err.Error() != want && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseRate(%q): %v, want %q", in, err, want)
		}
	}
}

// sample is the example of ParseBandwidth's documentation.
const sample = `# from\to  0        1        2
           0        1gbit    100mbit
           1gbit    0        1gbit   # a comment
           100mbit  1gbit    0
`

func TestParseBandwidth(t *testing.T) {
	b, err := ParseBandwidth(strings.NewReader(sample), "links.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b.K != 3 || b.Rate(0, 2) != 12.5e6 || b.Rate(1, 0) != 125e6 || b.Rate(2, 2) != 0 {
		t.Fatalf("parsed %+v", b)
	}
	var out bytes.Buffer
	if err := b.Format(&out); err != nil {
		t.Fatal(err)
	}
	again, err := ParseBandwidth(&out, "formatted")
	if err != nil || again.K != 3 {
		t.Fatalf("re-parse: %v", err)
	}
	for i := range b.Rates {
		if again.Rates[i] != b.Rates[i] {
			t.Fatalf("round trip changes %v to %v", b.Rates, again.Rates)
		}
	}
}

func TestParseBandwidthErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "f: no rows"},
		{"# only a comment\n\n", "f: no rows"},
		{"0 1gbit\n1gbit\n", "f:2: 1 fields, want 2"},
		{"0 1gbit\n1gbit 0\n0 0\n", "f:3: more than 2 rows"},
		{"0 1gbit 0\n1gbit 0 0\n", "f:2: 2 rows for 3 columns"},
		{"0 1gbit\n\n1gbit 5furlongs\n", "f:3: field 2: rate \"5furlongs\" has unknown unit"},
		{"0 100\n0 0\n", "f:1: field 2: rate \"100\" has no unit"},
		{strings.Repeat("x", 2<<20), "f:1: line too long"},
	} {
		_, err := ParseBandwidth(strings.NewReader(tc.in), "f")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseBandwidth(%.30q) = %v, want %q…", tc.in, err, tc.want)
		}
	}
}

func FuzzParseBandwidth(f *testing.F) {
	f.Add(sample)
	f.Add("0 1gbit\n1gbit 0\n")
	f.Add("5kibit\n")
	f.Add("0 1.5mbps\n# x\n- inf\n")
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ParseBandwidth(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		if b.K < 1 || len(b.Rates) != b.K*b.K {
			t.Fatalf("%d rates for k = %d", len(b.Rates), b.K)
		}
		var out bytes.Buffer
		b.Format(&out)
		again, err := ParseBandwidth(&out, "again")
		if err != nil {
			t.Fatalf("formatted matrix does not parse: %v\n%s", err, out.String())
		}
		for i, r := range b.Rates {
			if !(r >= 0) || again.Rates[i] != r {
				t.Fatalf("rate %d: %v, re-parsed %v", i, r, again.Rates[i])
			}
		}
	})
}

func TestMinRate(t *testing.T) {
	for _, c := range []struct{ a, b, want float64 }{
		{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3},
	} {
		if got := MinRate(c.a, c.b); got != c.want {
			t.Errorf("MinRate(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestRateUnits checks what RateUnits tells a flag's user: its examples
// parse, mbit is bits a second, and 100mbps is 800mbit.
func TestRateUnits(t *testing.T) {
	rate := func(s string) float64 {
		t.Helper()
		if !strings.Contains(RateUnits, s) {
			t.Fatalf("RateUnits %q does not name %s", RateUnits, s)
		}
		r, err := ParseRate(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got := rate("100mbit"); got != 100e6/8 {
		t.Errorf("100mbit = %v bytes/s, want %v", got, 100e6/8)
	}
	if got := rate("1gbit"); got != 1e9/8 {
		t.Errorf("1gbit = %v bytes/s, want %v", got, 1e9/8)
	}
	if a, b := rate("100mbps"), rate("800mbit"); a != b {
		t.Errorf("100mbps = %v bytes/s, 800mbit = %v: RateUnits says they are equal", a, b)
	}
}
