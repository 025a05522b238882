package train_test

import (
	"testing"

	"colo/train"
	"colo/transport"
)

func TestLinkWords(t *testing.T) {
	for _, c := range []struct {
		cfg  train.Config
		want string
	}{
		{train.Config{}, "unlimited links"},
		{train.Config{LinkBandwidth: 125e6}, transport.RateWords(125e6) + " links"},
		{train.Config{LinkBandwidth: 125e6, Bandwidth: &transport.Bandwidth{}}, "links from a bandwidth matrix"},
	} {
		if got := c.cfg.LinkWords(); got != c.want {
			t.Errorf("LinkWords() = %q, want %q", got, c.want)
		}
	}
}
