package gossip

import "testing"

func TestTopologyWords(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Topology: "ring"}, "ring"},
		{Config{Topology: "torus", Matcha: true, Budget: 0.5}, "torus matchings, budget 0.5"},
		{Config{Topology: "ring", Matcha: true, Weights: Weights{{1}}, WeightsFile: "w.txt"}, "weights w.txt"},
	} {
		if got := c.cfg.TopologyWords(); got != c.want {
			t.Errorf("TopologyWords() = %q, want %q", got, c.want)
		}
	}
}
