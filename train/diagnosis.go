package train

import (
	"fmt"
	"math"
	"strings"
)

// Diagnosis: a training that goes nowhere says so.
//
// After the first pass (the warm-up), Diagnose looks at three signs of a
// model that learnt nothing, each of which a finished training can show
// with exit status 0:
//
//   - the training loss has not fallen below the first pass's;
//   - the loss sits at the loss of a uniform guess over C classes, ln C
//     (within 1%), the loss of a network whose outputs died or whose
//     features drown the rate;
//   - the test accuracy is at chance: no better than always answering
//     the training set's most frequent class, plus three standard
//     deviations of that guess's accuracy on the scored samples (when
//     that bound is below 100%: too few samples tell nothing).
//
// The diagnosis names what it saw and the likely causes, the
// application's first (a Diagnoser: the features' scale, the label
// column), then the rate. The checks cost O(passes).

// Classifier is an App whose model classifies: the diagnosis compares its
// loss with a uniform guess's and its accuracy with chance.
type Classifier interface {
	App
	// Classes is the number of classes of the model.
	Classes() int
	// Chance is the accuracy, on the set Evaluate scores, of always
	// answering the training set's most frequent class.
	Chance() float64
}

// Diagnoser is an App that knows likely causes of a training that goes
// nowhere on its data: each a phrase such as "the features' scale: they
// reach 16, unstandardised (--standardize on)", most likely first.
type Diagnoser interface {
	App
	Causes() []string
}

// Diagnose returns what shows that the training of app with passes and
// evaluation ev went nowhere and its likely causes, or "" for a training
// that learnt. lr is the learning rate, the last cause named.
func Diagnose(app App, passes []Pass, ev Eval, lr float64) string {
	if len(passes) < 2 {
		// One pass is the warm-up: nothing to compare yet, but the
		// accuracy may already be at chance.
		passes = nil
	}
	var signs []string
	if n := len(passes); n > 0 {
		start, last := passes[0].TrainLoss, passes[n-1].TrainLoss
		if !(last < start) {
			signs = append(signs, fmt.Sprintf("the training loss %.4f has not fallen below its first pass's %.4f", last, start))
		}
	}
	c, ok := app.(Classifier)
	if ok && len(passes) > 0 && c.Classes() > 1 {
		last, uniform := passes[len(passes)-1].TrainLoss, math.Log(float64(c.Classes()))
		if math.Abs(last-uniform) <= 0.01*uniform {
			signs = append(signs, fmt.Sprintf("the training loss %.4f sits at a uniform guess's over %d classes (ln %d = %.4f)", last, c.Classes(), c.Classes(), uniform))
		}
	}
	if ok && ev.Accuracy != nil && ev.Samples > 0 {
		// Too few samples to tell chance from learning when the bound
		// reaches 100%.
		chance := c.Chance()
		bound := chance + 3*math.Sqrt(chance*(1-chance)/float64(ev.Samples))
		if bound < 1 && *ev.Accuracy <= bound {
			signs = append(signs, fmt.Sprintf("the %s accuracy %.2f%% is at chance (%.2f%%, always the most frequent class)", ev.On, 100**ev.Accuracy, 100*chance))
		}
	}
	if len(signs) == 0 {
		return ""
	}
	var causes []string
	if d, ok := app.(Diagnoser); ok {
		causes = d.Causes()
	}
	causes = append(causes, fmt.Sprintf("the learning rate %g (lower it if the loss rose or the model's outputs died, raise it if the loss stayed flat)", lr))
	return fmt.Sprintf("the training went nowhere: %s; likely causes: %s", strings.Join(signs, ", and "), strings.Join(causes, "; "))
}
