package train

import (
	"math"

	"colo/ps/update"
)

// Local trains app in one process without the parameter server: every
// sample on one machine, the model in one array, the update rule applied
// to it directly after each batch, the same stopping criterion. It is the
// reference a one-machine cluster must agree with. It returns the passes
// (without times) and the model (key k's values at k·Width).
func Local(app App, cfg Config) ([]Pass, []float32, error) {
	s := NewSchedule(app, cfg)
	batches := s.Batches
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	rule, err := update.New(cfg.Rule)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]int32, app.NumSamples())
	for i := range rows {
		rows[i] = int32(i)
	}
	part := app.Part(0, rows, batches, cfg.Seed)
	W := app.Width()
	model := make([]float32, app.NumKeys()*W)
	states := make([][]float32, rule.States())
	for i := range states {
		states[i] = make([]float32, len(model))
	}
	st := make([][]float32, len(states))
	scale := float32(float64(s.Batches) / float64(s.Samples))
	var vals, grad []float32
	var passes []Pass
	prev := math.NaN()
	rounds := 0
	for p := range s.MaxPasses {
		var loss float64
		var samples, correct int
		for b := range s.Batches {
			if s.budgetSpent(rounds) {
				break
			}
			keys := part.Keys(b)
			vals, grad = grow(vals, keys.Len()*W), grow(grad, keys.Len()*W)
			i := 0
			keys.Each(func(k uint64) {
				copy(vals[i*W:(i+1)*W], model[int(k)*W:])
				i++
			})
			clear(grad)
			l, m, c := part.Step(b, vals, grad, scale)
			loss, samples, correct = loss+l, samples+m, correct+c
			i = 0
			keys.Each(func(k uint64) {
				o := int(k) * W
				for j := range st {
					st[j] = states[j][o : o+W]
				}
				rule.Update(model[o:o+W], grad[i*W:(i+1)*W], st)
				i++
			})
			rounds++
		}
		pass := Pass{Pass: p + 1, Rounds: rounds, Samples: samples}
		if samples > 0 {
			pass.TrainLoss = loss / float64(samples)
			pass.TrainAccuracy = float64(correct) / float64(samples)
		}
		passes = append(passes, pass)
		if Converged(prev, pass.TrainLoss, s.Epsilon) || s.budgetSpent(rounds) {
			break
		}
		prev = pass.TrainLoss
	}
	return passes, model, nil
}
