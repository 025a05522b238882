package train

import (
	"math"
	"strings"
	"testing"
)

// classifier is an App of c classes whose constant guess scores chance,
// with the given causes.
type classifier struct {
	App
	c      int
	chance float64
	causes []string
}

func (a classifier) Classes() int     { return a.c }
func (a classifier) Chance() float64  { return a.chance }
func (a classifier) Causes() []string { return a.causes }

// regressor is an App that does not classify.
type regressor struct{ App }

// TestDiagnose walks the three signs by hand: a loss that does not fall,
// a loss at ln C, an accuracy within three standard deviations of chance
// (0.25 on 300 samples: σ = 0.025, so up to 0.325); and healthy runs.
func TestDiagnose(t *testing.T) {
	losses := func(l ...float64) []Pass {
		out := make([]Pass, len(l))
		for i, v := range l {
			out[i] = Pass{Pass: i + 1, TrainLoss: v}
		}
		return out
	}
	acc := func(a float64) Eval { return Eval{On: "test", Samples: 300, Accuracy: &a} }
	ln4 := math.Log(4)
	c := classifier{c: 4, chance: 0.25, causes: []string{"the label column"}}
	for _, tc := range []struct {
		name   string
		app    App
		passes []Pass
		ev     Eval
		want   []string // "" for none
	}{
		{"healthy", c, losses(1.2, 0.8, 0.5), acc(0.9), nil},
		{"healthy regression", regressor{}, losses(2, 1), Eval{}, nil},
		{"one pass at chance", c, losses(1.0), acc(0.3), []string{"the test accuracy 30.00% is at chance (25.00%"}},
		{"one pass above chance", c, losses(1.0), acc(0.33), nil},
		{"too few samples", classifier{c: 2, chance: 0.5}, losses(0.7, 0.1), Eval{On: "train", Samples: 6, Accuracy: new(1.0)}, nil},
		{"flat", regressor{}, losses(1, 1.2, 1), Eval{}, []string{"the training loss 1.0000 has not fallen below its first pass's 1.0000", "likely causes: the learning rate 0.5 ("}},
		{"uniform", c, losses(1.5, 1.4, ln4*1.005), acc(0.5), []string{"sits at a uniform guess's over 4 classes (ln 4 = 1.3863)", "likely causes: the label column; the learning rate 0.5"}},
		{"near uniform", c, losses(1.5, 1.4, ln4*0.98), acc(0.5), nil},
		{"all three", c, losses(ln4, ln4), acc(0.25), []string{"has not fallen", "sits at a uniform", "is at chance"}},
	} {
		got := Diagnose(tc.app, tc.passes, tc.ev, 0.5)
		if (got == "") != (tc.want == nil) {
			t.Errorf("%s: %q", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want …%s…", tc.name, got, w)
			}
		}
	}
}
