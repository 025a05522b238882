package gossip

import (
	"strings"
	"testing"
)

func TestReadWeights(t *testing.T) {
	good := "# a ring of 4\n0.5 0.25 0 0.25\n0.25,0.5,0.25,0\n\n0 0.25 0.5 0.25\n0.25\t0\t0.25\t0.5\n"
	w, err := ReadWeights(strings.NewReader(good), "ring.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 4 || w[1][2] != 0.25 || w[3][3] != 0.5 {
		t.Errorf("read %v", w)
	}
	top := w.Topology("ring.txt")
	if got := top.Adj[0]; len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("neighbours of 0: %v, want [1 3]", got)
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not a number", "1 x\n0 1\n", "w.txt:1: value 2 \"x\": want a number"},
		{"ragged", "0.5 0.5\n0.5 0.5 0\n", "w.txt:2: row 2 has 3 values, row 1 has 2"},
		{"too many rows", "1\n1\n", "w.txt:2: row 2 of a matrix with 1 columns"},
		{"not square", "0.5 0.5\n", "1 rows of 2 values: want a square matrix"},
		{"empty", "# nothing\n", "w.txt: no rows"},
		{"row sum", "# header\n0.5 0.4\n0.5 0.5\n", "w.txt:2: row 1 sums to 0.9: want 1 (doubly stochastic)"},
		{"column sum", "0.5 0.5\n0.6 0.4\n", "w.txt: column 1 sums to 1.1: want 1 (doubly stochastic)"},
		{"negative", "1.5 -0.5\n-0.5 1.5\n", "w.txt:1: row 1, column 2: -0.5: want a finite weight ≥ 0"},
		{"disconnected", "1 0\n0 1\n", "not connected"},
		{"nan", "NaN 1\n1 0\n", "want a finite weight"},
	} {
		_, err := ReadWeights(strings.NewReader(tc.in), "w.txt")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func FuzzReadWeights(f *testing.F) {
	f.Add("0.5 0.5\n0.5 0.5\n")
	f.Add("# c\n1\n")
	f.Add("0.5 0.25 0 0.25\n0.25,0.5,0.25,0\n0 0.25 0.5 0.25\n0.25 0 0.25 0.5\n")
	f.Add("1e308 -1e308\nInf NaN\n")
	f.Fuzz(func(t *testing.T, in string) {
		w, err := ReadWeights(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		// What is accepted is a valid mixing matrix.
		if err := w.Check(); err != nil {
			t.Errorf("accepted a matrix that fails Check: %v", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Weights{{0.5, 0.5}, {0.6, 0.4}}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"speed count", func(c *Config) { c.Speeds = []float64{1, 2, 4} }, "worker-speeds: 3 speeds for 4 workers"},
		{"zero speed", func(c *Config) { c.Speeds = []float64{1, 0, 4, 8} }, "worker-speeds: speed 2 is 0"},
		{"negative speed", func(c *Config) { c.Speeds = []float64{1, 2, -4, 8} }, "worker-speeds: speed 3 is -4"},
		{"budget zero", func(c *Config) { c.Matcha, c.Budget = true, 0 }, "budget 0: want a communication budget c_b in (0, 1]"},
		{"budget above 1", func(c *Config) { c.Matcha, c.Budget = true, 1.2 }, "budget 1.2"},
		{"torus of 7", func(c *Config) { c.Workers, c.Topology = 7, "torus" }, "topology torus: 7 workers"},
		{"weights not doubly stochastic", func(c *Config) { c.Workers, c.Weights, c.WeightsFile = 2, bad, "w.txt" }, "weights w.txt: column 1 sums to 1.1"},
		{"weights size", func(c *Config) { c.Weights, c.WeightsFile = Weights{{1}}, "w.txt" }, "weights w.txt: a 1×1 matrix for 4 workers"},
		{"local steps", func(c *Config) { c.LocalSteps = 0 }, "local-steps 0"},
		{"lr", func(c *Config) { c.LR = 0 }, "lr 0"},
		{"order", func(c *Config) { c.Order = "x" }, "order \"x\""},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"1,2,x", "speed 3 \"x\""}, {"1,0", "speed 2 \"0\""}, {"", "want relative speeds"}, {"1,-2", "speed 2"},
	} {
		if _, err := ParseSpeeds(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpeeds(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if s, err := ParseSpeeds("1:2:4:8"); err != nil || len(s) != 4 || s[3] != 8 {
		t.Errorf("ParseSpeeds(1:2:4:8) = %v, %v", s, err)
	}
}
