package cli

import (
	"slices"
	"testing"
)

func TestChoices(t *testing.T) {
	for _, c := range []struct {
		cmd, name string
		want      []string // values that must be offered
		not       []string // values that must not be
	}{
		{"train", "consistency", []string{"bsp", "async", "ssp:"}, []string{"bounded"}},
		{"node", "consistency", []string{"bsp", "async", "bounded"}, []string{"ssp:"}},
		{"node", "updater", []string{"sum", "sgd"}, nil},
		{"train", "updater", []string{"sgd", "adam"}, []string{"sum"}},
		{"shard", "format", []string{"idx", "libsvm", "csv"}, []string{"snap"}},
		{"partition", "format", []string{"libsvm", "snap", "criteo"}, []string{"idx"}},
		{"train", "features", []string{"auto", "raw"}, nil},
		{"node", "features", []string{"raw"}, []string{"auto"}},
		{"recover", "recovery", []string{"replace", "restart"}, nil},
	} {
		got := Choices(c.cmd, c.name)
		for _, v := range c.want {
			if !slices.Contains(got, v) {
				t.Errorf("Choices(%q, %q) = %q: lacks %q", c.cmd, c.name, got, v)
			}
		}
		for _, v := range c.not {
			if slices.Contains(got, v) {
				t.Errorf("Choices(%q, %q) = %q: offers %q", c.cmd, c.name, got, v)
			}
		}
	}
	if got := Choices("node", "placement"); got != nil {
		t.Errorf(`Choices("node", "placement") = %q, want nil (a directory)`, got)
	}
	if got := Choices("train", "placement"); len(got) == 0 {
		t.Error(`Choices("train", "placement") offers nothing`)
	}
	if got := Choices("train", "lr"); got != nil {
		t.Errorf(`Choices("train", "lr") = %q, want nil (a free value)`, got)
	}
}
