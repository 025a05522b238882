package graph

import "testing"

func TestWords(t *testing.T) {
	b := NewBuilder(Meta{})
	for i := 0; i < 1200; i++ {
		if err := b.AddSample(1, []uint64{uint64(i % 3), 3}, nil); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Words(), "1,200 samples, 4 parameters, 2,400 edges"; got != want {
		t.Errorf("Words() = %q, want %q", got, want)
	}
}
